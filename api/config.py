"""Service configuration: bearer tokens (stored as SHA-256 hashes only) and request limits.

ANCHOR_API_TOKENS holds comma-separated `sha256:<hex>` hashes of the accepted tokens (make one with
`printf %s "$TOKEN" | sha256sum`); a plain token is refused at start-up so none is ever configured in
clear. ANCHOR_API_MAX_REQUEST_BYTES bounds every request body.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from anchor.errors import BadInput
from anchor.ingest.archive import ArchiveLimits
from anchor.settings.env import env

SCOPES = frozenset({"submit", "relay", "admin"})
"""submit: manifests, bundles, missions; relay: signed lineage records; admin: everything."""
_HASH = re.compile(r"^sha256:[0-9a-f]{64}(/(submit|relay|admin)(\+(submit|relay|admin))*)?$")


class ApiConfig(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    token_hashes: frozenset[str] = frozenset()
    max_request_bytes: int = 64 << 20
    max_proof_bytes: int = 16 << 20
    """An uploaded proof file (public route): ~100,000 listed files; see docs/manifest.md, Bounds."""
    archive_limits: ArchiveLimits = ArchiveLimits()
    flush_after_submit: bool = True
    flush_interval_s: float = 0.0
    """How long the flusher gathers submissions after a kick before it flushes (ANCHOR_API_FLUSH_INTERVAL_S):
    0 flushes at once; a calendar under load sets it to put many items in one transaction."""
    calendar: bool = False
    """`anchor serve --calendar` (ANCHOR_CALENDAR=1): POST /v1/calendar takes digests without a token."""
    calendar_rate: float = 20.0
    calendar_burst: float = 40.0
    calendar_queue: int = 100_000
    """Items waiting for a batch past which the calendar answers 429 (ANCHOR_CALENDAR_QUEUE)."""
    body_timeout_s: float = 30.0
    """Seconds a request body may go without a byte before the request ends with 408 (api.protocol)."""
    token_scopes: dict[str, frozenset[str]] = {}
    """Token hash → its scopes (submit, relay, admin); a token configured without scopes has them all."""

    @classmethod
    def from_env(cls) -> ApiConfig:
        raw = list(env().api_tokens)
        bad = [t for t in raw if not _HASH.match(t)]
        if bad:
            raise BadInput(
                "ANCHOR_API_TOKENS takes sha256:<64 hex> hashes only, never tokens in clear"
                " (optionally with scopes: sha256:<64 hex>/submit+relay)"
            )
        scopes = {}
        for entry in raw:
            digest, _, named = entry.removeprefix("sha256:").partition("/")
            scopes[digest] = frozenset(named.split("+")) if named else SCOPES
        return cls(
            token_hashes=frozenset(scopes),
            token_scopes=scopes,
            max_request_bytes=env().api_max_request_bytes,
            flush_after_submit=env().api_flush,
            flush_interval_s=env().api_flush_interval_s,
            calendar=env().calendar,
            calendar_rate=env().calendar_rate,
            calendar_burst=env().calendar_burst,
            calendar_queue=env().calendar_queue,
            body_timeout_s=env().api_body_timeout_s,
        )
