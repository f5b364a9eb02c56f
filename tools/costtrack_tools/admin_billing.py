"""``costtrack admin billing`` and ``costtrack admin reconcile``: a workspace's provider-account
connections, a bill import run now, and billed vs tracked (docs/guides/reconciliation.md).

``billing import`` runs the deployed ``BillImportFunction``'s code (``jobs/bills/imports.py``) here:
the admin key from Secrets Manager (boto3's usual configuration, including
``AWS_ENDPOINT_URL_SECRETS_MANAGER``), the providers' API roots from ``COSTTRACK_OPENAI_ADMIN_URL``
/ ``COSTTRACK_ANTHROPIC_ADMIN_URL`` when set, and the raw pages into a local folder (the same
objects the bucket would hold) instead of S3.

Against the local stack (no ``--stack``, no ``--endpoint-url``), the keys come from the local
stack's secrets file instead (``.costtrack/secrets.json``, put there by ``billing local-secret``;
``costtrack_tools.local.secrets``), and Bedrock's Cost Explorer only from
``AWS_ENDPOINT_URL_COST_EXPLORER`` (else a Bedrock import fails rather than call AWS).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from costtrack_service.domain.reconciliation import reported_costs as reported
from costtrack_service.domain.reconciliation.connections import PROVIDERS
from costtrack_service.jobs.bills.imports import BillImports
from costtrack_service.jobs.daily_export import DirectoryWriter
from costtrack_service.services.drift import apply_drift
from costtrack_service.services.reconciliation import ReconciliationService
from costtrack_tools.admin_credits import add_credit_parsers
from costtrack_tools.admin_invoices import add_invoice_parsers
from costtrack_tools.admin_output import AdminError, emit, find_workspace
from costtrack_tools.admin_portal import add_portal_parsers
from costtrack_tools.admin_rate_cards import add_rate_card_parsers
from costtrack_tools.admin_sinks import add_sink_parsers
from costtrack_tools.local.secrets import LocalSecrets, NoCostExplorer
from costtrack_tools.local.stack import DEFAULT_STATE_FILE

Handler = Callable[[Any, argparse.Namespace], None]
DEFAULT_BILLS_DIR = Path(".costtrack/bills")


def connect(store: Any, args: argparse.Namespace) -> None:
    workspace = find_workspace(store, args.workspace).workspace_id
    body = {"provider": args.provider} | ({"secret_arn": args.secret_arn} if args.secret_arn else {})
    data = ReconciliationService(store).connect(workspace, body)
    emit(args, data, lambda: f"{args.provider} connected to workspace {workspace}: its bills are imported daily")


def connections(store: Any, args: argparse.Namespace) -> None:
    data = ReconciliationService(store).connections(find_workspace(store, args.workspace).workspace_id)

    def human() -> str:
        rows = [
            f"{c['provider']:<10} {c['secret_arn'] or '(Cost Explorer)'}  last imported {c['last_imported'] or '-'}"
            + (f"  last error: {c['last_error']}" if c["last_error"] else "")
            for c in data["connections"]
        ]
        return "\n".join(rows) or "no connections"

    emit(args, data, human)


def disconnect(store: Any, args: argparse.Namespace) -> None:
    workspace = find_workspace(store, args.workspace).workspace_id
    data = ReconciliationService(store).disconnect(workspace, args.provider)
    emit(args, data, lambda: f"{args.provider} disconnected (the days imported stay)")


def local_state_file(args: argparse.Namespace) -> Path | None:
    """The local stack's state file when the command targets the local stack, else None."""
    if getattr(args, "stack", None) or getattr(args, "endpoint_url", None):
        return None
    return Path(args.state_file) if getattr(args, "state_file", None) else DEFAULT_STATE_FILE


def local_secret(store: Any, args: argparse.Namespace) -> None:
    """Keep a connection's admin key for the local stack (read from stdin, never an argument)."""
    del store
    state_file = local_state_file(args)
    if state_file is None:
        raise AdminError("local-secret is for the local stack only: create the secret in AWS Secrets Manager")
    value = sys.stdin.read()
    try:
        LocalSecrets.beside(state_file).put(args.secret_arn, value)
    except ValueError as error:
        raise AdminError(str(error)) from None
    emit(args, {"secret_arn": args.secret_arn}, lambda: f"kept {args.secret_arn} for the local stack")


def import_bills(store: Any, args: argparse.Namespace) -> None:
    import boto3

    workspace = find_workspace(store, args.workspace).workspace_id
    region = args.region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    state_file = local_state_file(args)
    secrets: Any
    cost_explorer: Any
    if state_file is None:
        secrets = boto3.client("secretsmanager", region_name=region)
        cost_explorer = boto3.client("ce", region_name="us-east-1")
    else:
        secrets = LocalSecrets.beside(state_file)
        local_ce = os.environ.get("AWS_ENDPOINT_URL_COST_EXPLORER")
        cost_explorer = boto3.client("ce", region_name="us-east-1") if local_ce else NoCostExplorer()
    imports = BillImports(
        store, DirectoryWriter(Path(args.raw_to)), secrets=secrets, cost_explorer=cost_explorer, environ=os.environ
    )
    data = imports.run(datetime.now(UTC), [workspace])

    def human() -> str:
        lines = []
        for result in data["results"]:
            if result["status"] == "imported":
                lines.append(
                    f"{result['provider']}: {result['from']} to {result['to']}, {result['lines']} billed lines "
                    f"from {result['pages']} pages (raw: {Path(args.raw_to) / result['raw_object']})"
                )
            else:
                lines.append(
                    f"{result['provider']}: {result['status']}" + (f": {result['error']}" if "error" in result else "")
                )
        return "\n".join(lines) or "no connections"

    emit(args, data, human)


def reconcile(store: Any, args: argparse.Namespace) -> None:
    workspace = find_workspace(store, args.workspace).workspace_id
    service = ReconciliationService(store)
    if args.gap_threshold is not None:
        value = None if args.gap_threshold == "off" else args.gap_threshold
        answer = service.set_gap_threshold(workspace, {"usd_per_day": value})
        emit(args, answer, lambda: f"reconciliation_gap threshold: {answer['usd_per_day'] or 'off'} USD per day")
        return
    params = {name: value for name, value in (("from", args.first), ("to", args.last)) if value}
    if args.apply_drift:
        apply_model_drift(store, args, workspace, params)
        return
    if args.format == "focus":
        sys.stdout.write(service.focus(workspace, args.first or None, args.last or None)[0])
        return
    data = service.reconciliation(workspace, args.first or None, args.last or None)

    def human() -> str:
        totals = data["totals"]
        lines = [
            f"{data['from']} to {data['to']}: billed ${totals['billed_usd']}, tracked ${totals['tracked_usd']}",
            f"  untracked ${totals['untracked_usd']}, price drift ${totals['price_drift_usd']}, "
            f"timing ${totals['timing_usd']}, unbilled ${totals['unbilled_usd']}",
        ]
        for finding in data["findings"]:
            line = (
                f"{finding['day']} {finding['provider']}/{finding['model']}: {', '.join(finding['classes'])}, "
                f"billed ${finding['billed']['usd']} tracked ${finding['tracked']['usd']}"
            )
            if finding["entry"]:
                line += f" (entry {finding['entry']}: {finding['applied_rates']} vs billed {finding['implied_rates']})"
            lines.append(line)
        return "\n".join(lines + reported.text_lines(data["reported"]))

    emit(args, data, human)


def apply_model_drift(store: Any, args: argparse.Namespace, workspace: str, params: dict[str, str]) -> None:
    """``--apply-drift [PROVIDER/]MODEL``: the override from the bill, and the days repriced."""
    provider, _, model = args.apply_drift.partition("/")
    if not model or provider not in PROVIDERS:
        provider, model = args.provider or "", args.apply_drift
    if not provider:
        raise AdminError("--apply-drift: name the model as PROVIDER/MODEL (openai/gpt-4o-mini) or give --provider")
    data = apply_drift(store, workspace, {"provider": provider, "model": model} | params)

    def human() -> str:
        override, backfill = data["override"], data["backfill"]
        rates = ", ".join(f"{key} {value}" for key, value in sorted(override["prices"].items()))
        return (
            f"override {override['override_id']} for {override['provider']}/{override['model']} "
            f"from {override['effective_from']} to {override['effective_to']}: {rates} per 1M tokens\n"
            f"repriced {backfill['repriced']} of {backfill['events_checked']} events on {', '.join(backfill['days'])}: "
            f"${backfill['cost_before']} -> ${backfill['cost_after']} ({backfill['cost_delta']})"
        )

    emit(args, data, human)


def add_billing_parsers(groups: Any, command: Callable[[Any, str, Handler, str], Any]) -> None:
    billing = groups.add_parser("billing", help="provider-account connections and bill imports").add_subparsers(
        dest="action", required=True
    )
    add = command(billing, "connect", connect, "connect a provider account (Secrets Manager ARN of its admin key)")
    add.add_argument("workspace")
    add.add_argument("provider", choices=PROVIDERS)
    add.add_argument("--secret-arn", help="a secret named costtrack/billing/… (not for bedrock)")
    command(billing, "list", connections, "a workspace's connections and their last import").add_argument("workspace")
    remove = command(billing, "disconnect", disconnect, "stop importing a provider account's bills")
    remove.add_argument("workspace")
    remove.add_argument("provider", choices=PROVIDERS)
    kept = command(billing, "local-secret", local_secret, "keep an admin key for the local stack (stdin), by ARN")
    kept.add_argument("secret_arn", help="the ARN the connection names (costtrack/billing/…)")
    run = command(billing, "import", import_bills, "import a workspace's bills now (the days due)")
    run.add_argument("workspace")
    run.add_argument(
        "--raw-to", default=str(DEFAULT_BILLS_DIR), metavar="DIR", help=f"raw pages (default {DEFAULT_BILLS_DIR})"
    )
    add_rate_card_parsers(billing, command)
    add_invoice_parsers(billing, command)
    add_credit_parsers(billing, command)
    add_portal_parsers(billing, command)
    add_sink_parsers(billing, command)
    recon = command(groups, "reconcile", reconcile, "billed vs tracked per day and model, every gap classified")
    recon.add_argument("workspace")
    recon.add_argument(
        "--from", dest="first", metavar="YYYY-MM-DD", help="first UTC day (default: 29 days before --to)"
    )
    recon.add_argument("--to", dest="last", metavar="YYYY-MM-DD", help="last UTC day (default: yesterday)")
    recon.add_argument(
        "--gap-threshold",
        metavar="USD|off",
        help="set the reconciliation_gap webhook's threshold (USD per day of untracked + drift), or off",
    )
    recon.add_argument(
        "--apply-drift",
        metavar="PROVIDER/MODEL",
        help="make a workspace override from the bill's rates for a drifted model and reprice its days",
    )
    recon.add_argument(
        "--format", choices=("text", "focus"), default="text", help="focus: FOCUS 1.2 CSV on stdout (finance tools)"
    )
    recon.add_argument("--provider", choices=PROVIDERS, help="with --apply-drift MODEL: the model's provider")
