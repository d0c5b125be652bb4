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
from anchor.settings.model import Environment

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
    header_timeout_s: float = 10.0
    """Seconds a connection may take to send a request's headers (api.protocol)."""
    max_connections: int = 1024
    """Open connections before the slowest is closed (api.protocol; kept below the open-file limit)."""
    decode_queue: int = 8
    decode_per_client: int = 2
    """Decodes queued in all, and per client address, before 429 (api.offload)."""

    @classmethod
    def from_environment(cls, env: Environment) -> ApiConfig:
        """The service's configuration from the settings model (anchor.settings.model), which the door
        that starts the service read once."""
        raw = list(env.api_tokens)
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
        given = {field: getattr(env, setting) for field, setting in FROM_SETTINGS.items()}
        return cls(token_hashes=frozenset(scopes), token_scopes=scopes, **given)


FROM_SETTINGS = {
    "max_request_bytes": "api_max_request_bytes",
    "flush_after_submit": "api_flush",
    "flush_interval_s": "api_flush_interval_s",
    "calendar": "calendar",
    "calendar_rate": "calendar_rate",
    "calendar_burst": "calendar_burst",
    "calendar_queue": "calendar_queue",
    "body_timeout_s": "api_body_timeout_s",
    "header_timeout_s": "api_header_timeout_s",
    "max_connections": "api_max_connections",
    "decode_queue": "api_decode_queue",
    "decode_per_client": "api_decode_per_client",
}
"""Each field of the configuration and the setting (anchor.settings.model.Environment) it is read from."""
