"""The ``costtrack`` command.

    costtrack --version
    costtrack dev [--port 3000] [--state-file .costtrack/dev.json] [--persist DIR] [--empty]
    costtrack admin {workspace,plan,key,pricing,usage} ...

``dev`` runs the local stack until Ctrl-C; ``admin`` operates a local or deployed costtrack
(see ``costtrack_tools.admin``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
import threading
from pathlib import Path
from types import FrameType

import costtrack
import costtrack_service
from costtrack_tools.admin import add_admin_parser
from costtrack_tools.local.stack import DEFAULT_STATE_FILE, LocalStack


def _curl_example(state: dict[str, object]) -> str:
    workspaces = state["workspaces"]
    assert isinstance(workspaces, dict)
    key = workspaces["paid"]["api_key"]
    body = json.dumps(
        {
            "provider": "openai",
            "model": "gpt-5",
            "feature": "chat",
            "prompt_tokens": 10000,
            "cached_input_tokens": 8000,
            "completion_tokens": 3000,
            "reasoning_tokens": 2000,
        }
    )
    return (
        f"curl -s {state['api_url']}/v1/events \\\n"
        f"  -H 'Authorization: Bearer {key}' \\\n"
        f"  -H 'Content-Type: application/json' \\\n"
        f'  -H "Idempotency-Key: $(uuidgen || cat /proc/sys/kernel/random/uuid)" \\\n'
        f"  -d {shlex.quote(body)}"
    )


def run_dev(args: argparse.Namespace) -> int:
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")  # the access log says enough
    stack = LocalStack(
        port=args.port,
        state_file=Path(args.state_file),
        persist_dir=Path(args.persist) if args.persist else None,
        dynamodb_port=args.dynamodb_port,
        access_log=not args.quiet,
        alerts_interval=15.0,  # budgets: evaluate and deliver alerts every 15 s
        sinks_interval=1.0,  # billing sinks: read the events' stream and retry due deliveries every second
        demo_history=not args.empty,
        announce=None if args.quiet else lambda line: print(line, file=sys.stderr, flush=True),
    )
    stopping = threading.Event()

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    try:
        stack.start()
    except OSError as exc:
        print(f"costtrack dev: cannot start: {exc}", file=sys.stderr)
        return 1
    try:
        assert stack.dynamo is not None
        if stack.dynamo.note:
            print(f"note: {stack.dynamo.note}", file=sys.stderr)
        storage = f"persisted in {args.persist}" if args.persist else "in memory"
        print(f"costtrack local stack: {stack.state['api_url']}")
        print(f"  dashboard: {stack.state['dashboard_url']} (admin tokens: workspaces.<name>.admin_token)")
        print(f"  DynamoDB ({stack.dynamo.engine}, {storage}): {stack.dynamo.endpoint}")
        print(f"  demo workspaces and keys: {args.state_file}")
        demo = stack.state.get("demo")
        if demo:
            print(
                f"  demo history: {demo['events']} events over the last 30 days in the paid workspace "
                f"(budget past 80 %, its alert delivered to a local webhook receiver); --empty starts without"
            )
        print("\nTry it:\n")
        print(_curl_example(stack.state))
        print("\nCtrl-C stops everything.", flush=True)
        stopping.wait()
    finally:
        stack.stop()
    return 0


def version_text() -> str:
    """What ``costtrack --version`` prints: the service and these tools (one package, one
    version), and the Python SDK they validate events with."""
    tools = f"costtrack {costtrack_service.__version__} (service and tools)"
    return f"{tools}\ncosttrack Python SDK {costtrack.__version__}"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="costtrack",
        description="costtrack: exact cost tracking for LLM calls.",
        formatter_class=argparse.RawDescriptionHelpFormatter,  # --version keeps its two lines
    )
    parser.add_argument("--version", action="version", version=version_text())
    commands = parser.add_subparsers(dest="command", required=True)

    dev = commands.add_parser("dev", help="run the local stack (DynamoDB Local + the API on 127.0.0.1)")
    dev.add_argument("--port", type=int, default=3000, help="API port (default 3000; 0 picks a free one)")
    dev.add_argument("--state-file", default=str(DEFAULT_STATE_FILE), help="where to write URLs and demo keys")
    dev.add_argument("--persist", metavar="DIR", help="keep DynamoDB data in DIR (default: in memory)")
    dev.add_argument("--dynamodb-port", type=int, default=0, help="DynamoDB Local port (default: a free one)")
    dev.add_argument("--quiet", action="store_true", help="no access log")
    dev.add_argument("--empty", action="store_true", help="no demo history (workspaces and keys only)")
    dev.set_defaults(run=run_dev)

    add_admin_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except BrokenPipeError:
        # `costtrack admin ... | head`: the reader left; that is not an error of ours.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
