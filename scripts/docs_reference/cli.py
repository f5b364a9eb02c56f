"""The CLI reference: every `costtrack` command and subcommand with its arguments and options,
read from the argparse parser the CLI itself builds."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from scripts.docs_reference.markdown import anchor, table


def commands(
    parser: argparse.ArgumentParser, prefix: str = "costtrack", help_: str = ""
) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """Every command line that runs something, with its help, in the parser's order (a group
    of subcommands is not one)."""
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subparsers:
        yield prefix, parser.description or help_, parser
        return
    for action in subparsers:
        helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
        for name, child in action.choices.items():
            yield from commands(child, f"{prefix} {name}", helps.get(name, ""))


def _help(action: argparse.Action) -> str:
    text = action.help or ""
    if text == argparse.SUPPRESS:
        return ""
    if action.choices and not isinstance(action, argparse._SubParsersAction):
        text += (" " if text else "") + "(one of: " + ", ".join(f"`{c}`" for c in action.choices) + ")"
    return text


def _section(line: str, help_: str, parser: argparse.ArgumentParser) -> list[str]:
    out = [f"## `{line}` {{ #{anchor(line)} }}", ""]
    if help_:
        out += [help_[:1].upper() + help_[1:] + ".", ""]
    usage = " ".join(parser.format_usage().split())
    out += ["```text", usage.removeprefix("usage: "), "```", ""]
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        if action.option_strings:
            name = ", ".join(f"`{o}`" for o in action.option_strings)
            if action.nargs != 0:
                name += f" `{action.metavar or action.dest.upper()}`"
        else:
            name = f"`{action.metavar or action.dest}`"
        required = "yes" if (action.required or not action.option_strings) else "no"
        default = "" if action.default in (None, False, argparse.SUPPRESS) else f"`{action.default}`"
        rows.append([name, required, default, _help(action)])
    if rows:
        out += [table(["Argument", "Required", "Default", "Description"], rows)]
    return out


def page(parser: argparse.ArgumentParser) -> str:
    out = [
        "# CLI",
        "",
        "`costtrack` is installed into the checkout's `.venv` (`.venv/bin/costtrack`). This page is "
        "generated from its argument parser when the site is built: every command, its arguments "
        "and options. How to use them: [Operate it](../guides/operate.md).",
        "",
    ]
    found = list(commands(parser))
    out += [table(["Command", "What it does"], [[f"[`{line}`](#{anchor(line)})", help_] for line, help_, _ in found])]
    for line, help_, child in found:
        out += _section(line, help_, child)
    return "\n".join(out) + "\n"
