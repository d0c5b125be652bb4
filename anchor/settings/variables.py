"""Every `ANCHOR_*` variable anchor reads, in one list: what `anchor config show` shows.

Why a list in code as well as the table in docs/configuration.md: a user asks the installed program
which of these are set (and from where), not the docs; the table says what each one does. Two tests
hold them together: every name here is a row there and the other way round, and every `ANCHOR_*` name
in the code is here. Secrets (anchor.settings.session.is_secret) are shown as set or unset, never
their value."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

VARIABLES = (
    # where: the data dir, the chain, the journal
    "ANCHOR_DATA_DIR", "ANCHOR_RPC_URL", "ANCHOR_READ_RPCS", "ANCHOR_LOCAL_PORT", "ANCHOR_JOURNAL_URL",
    "ANCHOR_LEDGER_NAME", "ANCHOR_SNAPSHOT_CACHE_BYTES",
    # keys
    "ANCHOR_PRIVATE_KEY", "ANCHOR_KEYSTORE", "ANCHOR_KEYSTORE_PASSWORD", "ANCHOR_RESEARCHER_KEY",
    "ANCHOR_RESEARCHER_KEYSTORE", "ANCHOR_RESEARCHER_KEYSTORE_PASSWORD",
    # research
    "ANCHOR_ATTEMPT_MEMORY_BYTES", "ANCHOR_ATTEMPT_FILE_BYTES", "ANCHOR_ATTEMPT_RUN_DIR_BYTES",
    "ANCHOR_ATTEMPT_PROCESSES", "ANCHOR_SIGNATURE_TTL_S", "ANCHOR_IMAGE",
    # reading and writing the chain
    "ANCHOR_LOG_WINDOW", "ANCHOR_LEASE_S", "ANCHOR_CONFIRMATIONS", "ANCHOR_STUCK_AFTER_S", "ANCHOR_QUIET_BLOCKS_S",
    "ANCHOR_MAX_FEE_WEI", "ANCHOR_RPC_RETRIES", "ANCHOR_RPC_BACKOFF_S", "ANCHOR_RPC_TIMEOUT_S",
    # pages, links, the toolchain
    "ANCHOR_BROWSER_RPC_URL", "ANCHOR_EXPLORER_URL", "ANCHOR_PROJECT_ROOT",
    # the service
    "ANCHOR_API_TOKENS", "ANCHOR_API_MAX_REQUEST_BYTES", "ANCHOR_API_FLUSH", "ANCHOR_API_HEADER_TIMEOUT_S",
    "ANCHOR_API_BODY_TIMEOUT_S", "ANCHOR_API_MAX_CONNECTIONS", "ANCHOR_API_DECODE_QUEUE",
    "ANCHOR_API_DECODE_PER_CLIENT", "ANCHOR_API_FLUSH_INTERVAL_S", "ANCHOR_RECEIPT_KEY", "ANCHOR_SERVICE_NAME",
    "ANCHOR_CALENDAR", "ANCHOR_CALENDAR_RATE", "ANCHOR_CALENDAR_BURST", "ANCHOR_CALENDAR_QUEUE",
    # a client of services
    "ANCHOR_SERVICE_URLS", "ANCHOR_UPGRADE_WAIT_S", "ANCHOR_SERVICE_TOKEN",
    # the MLflow bridge
    "ANCHOR_MLFLOW_MAX_ARTIFACT_BYTES",
    # debugging and tests
    "ANCHOR_DEBUG", "ANCHOR_FAULT",
)  # fmt: skip

GIVEN_TO_CHILDREN = ("ANCHOR_EDITABLE", "ANCHOR_ATTEMPT")
"""Set by the research harness for an external proposer; never read by anchor itself."""


def variable_rows(environ: Mapping[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """Each variable: {"set": bool, "value": shown value or None, "source": "environment" or "default"}.
    A secret's value is never shown; an unknown `ANCHOR_*` name in the environment (a typo) is listed
    too, as "unknown" with the nearest known name, so that a misspelt variable is seen, not ignored."""
    from anchor.settings.session import is_secret

    env = os.environ if environ is None else environ
    rows: dict[str, dict[str, Any]] = {}
    for name in VARIABLES:
        value = env.get(name)
        shown = None if value is None else "(set, not shown: a secret)" if is_secret(name) else value
        if shown is not None and name in ("ANCHOR_RPC_URL", "ANCHOR_BROWSER_RPC_URL"):
            shown = _endpoint(value or "")  # a hosted provider's key sits in the path or query
        if shown is not None and name == "ANCHOR_READ_RPCS":
            shown = ",".join(_endpoint(u.strip()) for u in (value or "").split(",") if u.strip())
        rows[name] = {"set": value is not None, "value": shown, "source": "environment" if value is not None
                      else "default"}  # fmt: skip
    import difflib

    for name in sorted(n for n in env if n.startswith("ANCHOR_") and n not in VARIABLES + GIVEN_TO_CHILDREN):
        near = difflib.get_close_matches(name, VARIABLES, n=1)
        rows[name] = {
            "set": True, "value": "(set, not shown: a secret)" if is_secret(name) else env[name],
            "source": "unknown: anchor reads no such variable" + (f"; did you mean {near[0]}?" if near else ""),
        }  # fmt: skip
    return rows


def _endpoint(url: str) -> str:
    """`endpoint_of(url)`, and "/(…)" when the URL had more (a path, a query: often a key)."""
    from urllib.parse import urlsplit

    from anchor.settings.session import endpoint_of

    parts = urlsplit(url)
    return endpoint_of(url) + ("/(…)" if parts.path.strip("/") or parts.query or parts.username else "")
