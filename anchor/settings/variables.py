"""What `anchor config show` lists of the `ANCHOR_*` variables: each with its value and source, a
secret only as set or unset, and any unknown `ANCHOR_*` name with the nearest known one. The variables
themselves, and what each means, are the settings model's (anchor.settings.model.Environment)."""

from __future__ import annotations

from typing import Any

from anchor.settings.model import GIVEN_TO_CHILDREN as GIVEN_TO_CHILDREN
from anchor.settings.model import Environment, is_secret

VARIABLES = Environment.variables()
"""Every `ANCHOR_*` variable anchor reads, in the order of docs/configuration.md's table."""


def variable_rows(env: Environment) -> dict[str, dict[str, Any]]:
    """Each variable: {"set": bool, "value": shown value or None, "source": "environment", a `.env`
    file or "default"}. A secret's value is never shown; an unknown `ANCHOR_*` name (a typo) is listed
    too, as "unknown" with the nearest known name, so that a misspelt variable is seen, not ignored."""
    rows: dict[str, dict[str, Any]] = {}
    for name in VARIABLES:
        value = env.raw(name)
        shown = None if value is None else "(set, not shown: a secret)" if is_secret(name) else value
        if shown is not None and name in ("ANCHOR_RPC_URL", "ANCHOR_BROWSER_RPC_URL", "ANCHOR_EXPLORER_URL"):
            shown = _endpoint(value or "")  # a hosted provider's key sits in the path or query
        if shown is not None and name == "ANCHOR_SERVICE_URLS":
            shown = ",".join(_endpoint(u.strip()) for u in (value or "").split(",") if u.strip())
        if shown is not None and name == "ANCHOR_READ_RPCS":
            shown = ",".join(_endpoint(u.strip()) for u in (value or "").split(",") if u.strip())
        rows[name] = {"set": value is not None, "value": shown, "source": env.source(name)}
    import difflib

    for name in env.unknown():
        near = difflib.get_close_matches(name, VARIABLES, n=1)
        rows[name] = {
            "set": True,
            "value": "(set, not shown: a name anchor does not know may be a mistyped secret)",
            "source": "unknown: anchor reads no such variable" + (f"; did you mean {near[0]}?" if near else ""),
        }
    return rows


def _endpoint(url: str) -> str:
    """`endpoint_of(url)`, and "/(…)" when the URL had more (a path, a query: often a key)."""
    from urllib.parse import urlsplit

    from anchor.settings.session import endpoint_of

    parts = urlsplit(url)
    return endpoint_of(url) + ("/(…)" if parts.path.strip("/") or parts.query or parts.username else "")
