"""The https path of a webhook delivery against a real TLS server on 127.0.0.1: the request goes
to the checked address, TLS verifies the certificate for the URL's host name (not the address),
and a certificate that does not name the host, or that no trusted CA signed, is refused."""

from __future__ import annotations

import datetime
import http.server
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
import urllib3
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from costtrack_service.domain.budgets.webhooks import Target
from costtrack_service.jobs.webhook_client import post_webhook

HOST = "hooks.example.test"


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _issue(tmp: Path, names: list[str]) -> tuple[Path, Path, Path]:
    """A CA, and a server certificate it signs for ``names``: (ca.pem, cert.pem, key.pem)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name("costtrack test CA"))
        .issuer_name(_name("costtrack test CA"))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.DNSName(name) for name in names]
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(names[0]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        # Python 3.13 verifies strictly (VERIFY_X509_STRICT): a leaf names its issuer's key.
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    paths = tmp / "ca.pem", tmp / "cert.pem", tmp / "key.pem"
    paths[0].write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    paths[1].write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    paths[2].write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return paths


class Receiver(http.server.BaseHTTPRequestHandler):
    received: ClassVar[list[tuple[str, str | None, bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        Receiver.received.append((self.path, self.headers.get("Host"), body))
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def tls_receiver(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[int, Path]]:
    names = getattr(request, "param", [HOST])
    ca, cert, key = _issue(tmp_path, names)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Receiver.received = []
    try:
        yield server.server_address[1], ca
    finally:
        server.shutdown()
        server.server_close()


def _target(port: int) -> Target:
    return Target(f"https://{HOST}:{port}/hook", "https", HOST, port, "/hook", ("127.0.0.1",))


def test_https_delivery_reaches_the_checked_address_and_verifies_the_host_name(tls_receiver: tuple[int, Path]) -> None:
    port, ca = tls_receiver
    status = post_webhook(_target(port), b'{"ok":true}', {"Content-Type": "application/json"}, ca_certs=str(ca))
    assert status == 204
    assert Receiver.received == [("/hook", f"{HOST}:{port}", b'{"ok":true}')]


@pytest.mark.parametrize("tls_receiver", [["other.example.test"]], indirect=True)
def test_a_certificate_for_another_host_is_refused(tls_receiver: tuple[int, Path]) -> None:
    port, ca = tls_receiver
    with pytest.raises(urllib3.exceptions.SSLError):
        post_webhook(_target(port), b"{}", {}, ca_certs=str(ca))
    assert Receiver.received == []


def test_a_certificate_no_trusted_ca_signed_is_refused(tls_receiver: tuple[int, Path]) -> None:
    port, _ = tls_receiver
    with pytest.raises(urllib3.exceptions.SSLError):
        post_webhook(_target(port), b"{}", {})  # the system's CAs only
    assert Receiver.received == []
