"""The HTML pages' one Jinja2 environment: templates in api/templates, autoescaping on for every value (a
file name, a researcher or a search query is a stranger's text); nothing is marked safe."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from fastapi.responses import HTMLResponse

if TYPE_CHECKING:
    from jinja2 import Environment

TEMPLATES = Path(__file__).resolve().parent / "templates"


def utc(when: int | str | None) -> str:
    """A chain time (Unix seconds, or an ISO string a verdict carries) as `2026-12-02 20:57:05 UTC`:
    for a provenance explorer the time is what people come for, and a block number alone says none."""
    from datetime import UTC, datetime

    if when is None or when == "":
        return ""
    if isinstance(when, int):
        moment = datetime.fromtimestamp(when, UTC)
    else:
        try:
            moment = datetime.fromisoformat(str(when).replace("Z", "+00:00")).astimezone(UTC)
        except ValueError:
            return str(when)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def counted(n: int, noun: str) -> str:
    """A number and its noun, singular for exactly one: "1 records" reads as a bug to a newcomer."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


@functools.cache
def templates() -> Environment:
    """Built on the first page, not at import: Jinja2 is not on the API's start-up path."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined

    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined, auto_reload=False)
    env.filters["q"] = lambda text: quote(str(text), safe="")  # a path segment or query value
    env.filters["count"] = counted  # {{ n | count("record") }} -> "1 record", "2 records"
    env.filters["utc"] = utc
    return env


def page(
    template: str, title: str, block: int | None, status_code: int = 200, chain: str | None = None, **values: Any
) -> HTMLResponse:
    """A page read at `block` of `chain` (named in its header: what was read, and where)."""
    return HTMLResponse(
        templates().get_template(template).render(title=title, block=block, chain=chain, **values),
        status_code=status_code,
    )
