"""``costtrack admin pricing …``: prices, the sync, the backfill and workspace overrides.

The bundled catalogue (genai-prices, generated) is in the package; what these commands write
is what changes after a deploy: operators' entries, synced entries and overrides.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from costtrack_service import catalogue
from costtrack_service.catalogue import CatalogueError, check_catalogue, load_raw
from costtrack_service.domain.ingest.source import normalize_provider
from costtrack_service.domain.pricing.entries import RATE_PRICE_KEYS, PricingEntry, format_timestamp, parse_timestamp
from costtrack_service.domain.pricing.pricebook import find_model
from costtrack_service.jobs.price_refresh import SyncError, backfill, pinned_release, sync
from costtrack_service.services.price_overrides import OverrideService
from costtrack_service.store.dynamo import DynamoStore
from costtrack_service.store.prices import PricingConflict
from costtrack_tools.admin_output import AdminError, emit, find_workspace, money, table
from costtrack_tools.progress import progress_for

Handler = Callable[[DynamoStore, argparse.Namespace], None]


def _split_model(text: str) -> tuple[str, str]:
    provider, sep, model = text.partition("/")
    if not sep or not provider.strip() or not model.strip():
        raise AdminError(f"expected provider/model, got {text!r}")
    return normalize_provider(provider), model


def _checked(raw: dict[str, Any]) -> PricingEntry:
    """One entry through the same checks as an imported catalogue file."""
    try:
        return check_catalogue({"entries": [raw]})[0]
    except CatalogueError as exc:
        raise AdminError(str(exc)) from None


def pricing_import(store: DynamoStore, args: argparse.Namespace) -> None:
    try:
        entries = check_catalogue(load_raw(Path(args.file)))
    except CatalogueError as exc:
        raise AdminError(str(exc)) from None
    with progress_for(args) as steps:
        steps.stage(f"importing {args.file}", len(entries), "entries")
        added = 0
        for entry in entries:
            added += store.prices.put_price_entry(entry)
            steps.advance()
        filled: dict[str, Any] = backfill(store, steps=steps) if added else {"priced": 0, "added_cost": "0"}
    data = {"source": args.file, "entries": len(entries), "added": added, "unchanged": len(entries) - added}
    data["backfill"] = filled
    emit(
        args,
        data,
        lambda: (
            f"imported {args.file}: {added} added, {data['unchanged']} already present; "
            f"backfill: {filled['priced']} unpriced events priced (+{money(filled['added_cost'])} USD)"
        ),
    )


def pricing_list(store: DynamoStore, args: argparse.Namespace) -> None:
    now = datetime.now(UTC)
    entries = [e for e in store.prices.list_price_entries() if not args.provider or e.provider == args.provider.lower()]
    if not args.all:
        entries = [entry for entry in entries if entry.in_force_at(now)]
    data = {
        "catalogue": catalogue.catalogue_version(),
        "catalogued_providers": catalogue.catalogued_providers(),
        "entries": [entry.to_dict() for entry in entries],
    }
    rows = [
        (f"{e.provider}/{e.model}", e.origin.value, format_timestamp(e.effective_from)[:10], e.status.value, e.version)
        for e in entries
    ]

    def human() -> str:
        head = f"bundled: {data['catalogue']} ({len(data['catalogued_providers'])} providers); in the database:"
        return head + "\n" + table(rows, ["model", "origin", "from", "status", "version"])

    emit(args, data, human)


def pricing_show(store: DynamoStore, args: argparse.Namespace) -> None:
    provider, model = _split_model(args.model)
    at = parse_timestamp(args.at) if args.at else datetime.now(UTC)
    books = {provider: catalogue.book(provider, store.prices.get_price_entries(provider))}

    def book(name: str) -> Any:
        return books.setdefault(name, catalogue.book(name, store.prices.get_price_entries(name)))

    found = find_model(model, books[provider], book)
    if found is None:
        raise AdminError(f"no price for {provider}/{model}: no model, alias or rule of the catalogue matches it")
    entry = found.book.entry_at(found.model, at)
    versions = sorted(found.book.by_model[found.model], key=lambda e: (e.effective_from, e.origin.rank))
    data = {
        "name": model,
        "provider": found.book.provider,
        "model": found.model,
        "matched": found.kind.value,
        "at": format_timestamp(at),
        "in_force": entry.to_dict() if entry else None,
        "prices_at": _sheet(entry, at),
        "entries": [version.to_dict() for version in versions],
    }

    def human() -> str:
        lines = [f"{model} → {data['provider']}/{found.model} ({found.kind.value})"]
        for version in versions:
            period = f"{format_timestamp(version.effective_from)} → "
            period += format_timestamp(version.effective_to) if version.effective_to else "open"
            lines.append(f"  {version.origin.value:10} {period}  [{version.status.value}]  {version.version}")
        if entry is None:
            lines.append(f"no price in force at {data['at']}")
        else:
            lines.append(f"prices at {data['at']} (USD per unit; tokens per 1M):")
            lines += [f"  {name} {_price(price)}" for name, price in _sheet(entry, at).items()]
        return "\n".join(lines)

    emit(args, data, human)


def _price(price: Any) -> str:
    """A sheet's price (USD per unit): one amount, or a base with the tiers above it."""
    if isinstance(price, dict):
        tiers = "".join(f", above {tier['start']}: {money(tier['price'])}" for tier in price["tiers"])
        return f"{money(price['base'])}{tiers}"
    return money(price)


def _sheet(entry: PricingEntry | None, at: datetime) -> dict[str, Any]:
    from costtrack_service.domain.pricing.cost import sheet_to_json

    return sheet_to_json(entry.prices(catalogue.registry()).resolve(at, None)) if entry else {}


def pricing_add(store: DynamoStore, args: argparse.Namespace) -> None:
    if args.file:
        raw = json.loads(Path(args.file).read_text())
    else:
        if not args.model or args.input is None or args.output is None or not args.effective_from:
            raise AdminError("give provider/model, --effective-from, --input and --output (or --file entry.json)")
        provider, model = _split_model(args.model)
        last = max(
            (e for e in store.prices.get_price_entries(provider) if e.model == model.strip().lower()),
            key=lambda e: e.effective_from,
            default=None,
        )
        raw = {
            "provider": provider,
            "model": model,
            # A price change keeps the model's aliases, flags and source unless told otherwise.
            "aliases": args.alias or (list(last.aliases) if last else []),
            "effective_from": args.effective_from,
            "rates": {name: getattr(args, name) for name in RATE_PRICE_KEYS if getattr(args, name) is not None},
            "tiers": [_parse_tier(text) for text in args.tier or ()],
            "source": args.source or (last.source if last else None),
        }
        if last is not None and last.flags is not None:
            raw["prompt_includes_cached"] = last.flags.prompt_includes_cached
            raw["completion_includes_reasoning"] = last.flags.completion_includes_reasoning
        for flag in ("prompt_includes_cached", "completion_includes_reasoning"):
            if getattr(args, flag) is not None:
                raw[flag] = getattr(args, flag)
        raw = {name: value for name, value in raw.items() if value is not None}
    entry = _checked(raw)
    try:
        closed = store.prices.open_price_period(entry)
    except PricingConflict as exc:
        raise AdminError(str(exc)) from None
    with progress_for(args) as steps:
        result = backfill(store, steps=steps)
    data = {"added": entry.to_dict(), "closed": closed.to_dict() if closed else None, "backfill": result}
    emit(
        args,
        data,
        lambda: (
            f"added {entry.entry_id}"
            + (f"\nclosed {closed.entry_id} at {format_timestamp(entry.effective_from)}" if closed else "")
            + f"\nbackfill: {result['priced']} unpriced events priced (+{money(result['added_cost'])} USD)"
        ),
    )


def _parse_tier(text: str) -> dict[str, Any]:
    """``200000:input=2.5,output=15,cached_input=0.25``"""
    threshold, _, rates = text.partition(":")
    try:
        tier: dict[str, Any] = {"above_prompt_tokens": int(threshold)}
        for pair in rates.split(","):
            name, _, value = pair.partition("=")
            tier[name.strip()] = value.strip()
    except ValueError:
        raise AdminError(f"--tier: expected THRESHOLD:input=X,output=Y[,...], got {text!r}") from None
    return tier


def pricing_retire(store: DynamoStore, args: argparse.Namespace) -> None:
    provider, model = _split_model(args.model)
    at = parse_timestamp(args.at) if args.at else datetime.now(UTC)
    book = catalogue.book(provider, store.prices.get_price_entries(provider))
    found = find_model(model, book, lambda name: catalogue.book(name, store.prices.get_price_entries(name)))
    current = found.book.entry_at(found.model, at) if found else None
    if current is None:
        raise AdminError(f"no price in force for {provider}/{model} at {format_timestamp(at)}")
    try:
        retired = store.prices.retire_price(current, at)
    except PricingConflict as exc:
        raise AdminError(str(exc)) from None
    emit(
        args,
        retired.to_dict(),
        lambda: f"retired {retired.provider}/{retired.model} from {format_timestamp(at)}: new events are unpriced",
    )


def pricing_sync(store: DynamoStore, args: argparse.Namespace) -> None:
    try:
        with progress_for(args) as steps:
            if args.source is None:  # the pinned release, always checked
                source, sha256 = pinned_release()
            else:
                source, sha256 = args.source, args.sha256
            result = sync(store, source, sha256=sha256, dry_run=args.dry_run, steps=steps)
    except SyncError as exc:
        raise AdminError(str(exc)) from None

    def human() -> str:
        lines = [f"{'dry run: ' if args.dry_run else ''}{result['version']}"]
        checked = "checked" if result["verified"] else "not checked: no --sha256"
        lines.append(f"source: {result['source']} (SHA-256 {result['sha256']}, {checked})")
        for kind in ("added", "changed", "held_back"):
            lines.append(f"{kind.replace('_', ' ')}: {len(result[kind])}")
            for item in result[kind][:50]:
                detail = item.get("detail") or item.get("reason")
                lines.append(f"  {item['provider']}/{item['model']}  {detail}")
        if "backfill" in result:
            filled = result["backfill"]
            lines.append(f"backfill: {filled['priced']} unpriced events priced (+{money(filled['added_cost'])} USD)")
        return "\n".join(lines)

    emit(args, result, human)


def pricing_backfill(store: DynamoStore, args: argparse.Namespace) -> None:
    with progress_for(args) as steps:
        result = backfill(store, steps=steps)
    emit(
        args,
        result,
        lambda: (
            f"{result['priced']} events priced (+{money(result['added_cost'])} USD); "
            f"{result['still_unpriced']} still without a price"
        ),
    )


def override_set(store: DynamoStore, args: argparse.Namespace) -> None:
    raw: dict[str, Any] = {
        "provider": args.provider,
        "model": args.model,
        "effective_from": args.effective_from,
        "effective_to": args.effective_to,
        "note": args.note,
    }
    if args.discount is not None:
        raw["discount_percent"] = args.discount
    rates = {name: getattr(args, name) for name in RATE_PRICE_KEYS if getattr(args, name) is not None}
    if rates:
        raw["rates"] = rates
    data = OverrideService(store).set(find_workspace(store, args.workspace), raw)["override"]
    emit(args, data, lambda: f"override {data['override_id']} set for {args.workspace}")


def override_list(store: DynamoStore, args: argparse.Namespace) -> None:
    data = OverrideService(store).list(find_workspace(store, args.workspace))["overrides"]
    rows = [
        (o["override_id"], f"{o['discount_percent']}% off" if o["discount_percent"] else "rates", o["effective_to"])
        for o in data
    ]
    emit(args, data, lambda: table(rows, ["override", "kind", "until"]))


def override_delete(store: DynamoStore, args: argparse.Namespace) -> None:
    data = OverrideService(store).delete(find_workspace(store, args.workspace), args.override_id)
    emit(args, data, lambda: f"deleted override {args.override_id}")


def add_pricing_parser(groups: Any, command: Callable[[Any, str, Handler, str], Any]) -> None:
    pricing = groups.add_parser("pricing", help="prices: list, show, add, retire, sync, backfill, overrides")
    actions = pricing.add_subparsers(dest="action", required=True)
    command(actions, "import", pricing_import, "import an operator's catalogue file (idempotent)").add_argument(
        "file", help="a catalogue JSON file (pricing.schema.json)"
    )
    listing = command(actions, "list", pricing_list, "list the database's entries in force now")
    listing.add_argument("--provider")
    listing.add_argument("--all", action="store_true", help="include closed and retired entries")
    show = command(actions, "show", pricing_show, "how a model name is priced, and its entries over time")
    show.add_argument("model", metavar="PROVIDER/MODEL")
    show.add_argument("--at", help="ISO instant (default now)")
    add = command(actions, "add", pricing_add, "start an operator's price for a model, then backfill")
    add.add_argument("model", nargs="?", metavar="PROVIDER/MODEL")
    add.add_argument("--file", help="an entry as JSON (catalogue form) instead of the options")
    add.add_argument("--effective-from", help="ISO date or instant (UTC when no offset)")
    _rate_options(add)
    add.add_argument("--tier", action="append", metavar="N:input=X,output=Y", help="rates above N prompt tokens")
    add.add_argument("--alias", action="append", help="an exact alias (repeatable)")
    for flag in ("prompt-includes-cached", "completion-includes-reasoning"):
        add.add_argument(f"--{flag}", action=argparse.BooleanOptionalAction, default=None)
    add.add_argument("--source", help="URL of the published price")
    retire = command(actions, "retire", pricing_retire, "stop pricing a model (new events are unpriced)")
    retire.add_argument("model", metavar="PROVIDER/MODEL")
    retire.add_argument("--at", help="ISO instant (default now)")
    syncing = command(
        actions,
        "sync",
        pricing_sync,
        "apply the pinned genai-prices release (or a data file), add new prices, backfill",
    )
    syncing.add_argument(
        "--from",
        dest="source",
        metavar="FILE|URL",
        help="a genai-prices wheel or data file (default: the pinned release)",
    )
    syncing.add_argument("--sha256", help="refuse --from's file unless its SHA-256 is this")
    syncing.add_argument("--dry-run", action="store_true", help="print the diff, change nothing")
    command(actions, "backfill", pricing_backfill, "price the events that came in before their model had a price")

    override = actions.add_parser("override", help="a workspace's negotiated prices").add_subparsers(
        dest="override_action", required=True
    )
    setting = command(override, "set", override_set, "set a discount or rates for a provider or one model")
    setting.add_argument("workspace")
    setting.add_argument("--provider", required=True)
    setting.add_argument("--model", help="one model (default: the whole provider)")
    setting.add_argument("--discount", metavar="PERCENT", help="percent off the catalogue price")
    _rate_options(setting)
    setting.add_argument("--effective-from", help="ISO date or instant (default: always)")
    setting.add_argument("--effective-to", help="ISO date or instant (default: open)")
    setting.add_argument("--note")
    command(override, "list", override_list, "list a workspace's overrides").add_argument("workspace")
    deleting = command(override, "delete", override_delete, "delete an override")
    deleting.add_argument("workspace")
    deleting.add_argument("override_id")


def _rate_options(parser: Any) -> None:
    for name in RATE_PRICE_KEYS:
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, metavar="USD", help=f"{name} per 1M tokens")
