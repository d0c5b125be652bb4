"""Print a result either for people (rich) or for scripts (`--json`, one JSON object on stdout)."""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

import typer

JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object for scripts.")]


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` with every control character shown as an escape: a file name holding `\r\x1b[2K` could
    otherwise erase an error line and print a fake "OK" over it. Applied to every line we print."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def tamper_lines(detail: dict[str, Any], color: bool) -> list[str]:
    """A tamper verdict as a diff a person reads: `~ changed (old -> new bytes)`, `+ added`, `- removed`,
    coloured (yellow, green, red) when `color`. Names are escaped like every printed line."""
    sizes: dict[str, list[int | None]] = detail.get("sizes", {})
    paint = {"~": "33", "+": "32", "-": "31"} if color else {}
    lines = []
    for mark, key in (("~", "changed"), ("+", "added"), ("-", "removed")):
        for path in detail.get(key, [])[:50]:
            old, new = sizes.get(path, [None, None])
            size = (
                f"{old} -> {new} bytes" if mark == "~" else f"{new} bytes" if mark == "+" else f"was {old} bytes"
            )
            text = f"  {mark} {printable(path)}  ({size})"
            lines.append(f"\x1b[{paint[mark]}m{text}\x1b[0m" if mark in paint else text)
    hidden = sum(len(detail.get(k, [])) for k in ("changed", "added", "removed")) - len(lines)
    return lines + ([f"  … and {hidden} more (--json lists them all)"] if hidden > 0 else [])


def count(n: int, noun: str) -> str:
    """ "1 file", "2 files": a count with its noun in the right number."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def wants_json(ctx: typer.Context, local: bool) -> bool:
    root = ctx.find_root()
    return local or bool(root.obj and root.obj.get("json"))


def emit(ctx: typer.Context, local_json: bool, data: dict[str, Any], lines: list[str]) -> None:
    if wants_json(ctx, local_json):
        print(json.dumps({"ok": True, **data}, sort_keys=True, default=str))
        return
    from rich.console import Console

    console = Console(highlight=False, soft_wrap=True)
    for line in lines:
        console.print(printable(line), markup=False)
