"""Print a result either for people (rich) or for scripts (`--json`, one JSON object on stdout)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object for scripts.")]


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
        console.print(line)
