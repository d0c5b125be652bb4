"""Service configuration: bearer tokens (stored as SHA-256 hashes only) and request limits.

ANCHOR_API_TOKENS holds comma-separated `sha256:<hex>` hashes of the accepted tokens (make one with
`printf %s "$TOKEN" | sha256sum`); a plain token is refused at start-up so none is ever configured in
clear. ANCHOR_API_MAX_REQUEST_BYTES bounds every request body.
"""

from __future__ import annotations

import os
import re

from pydantic import BaseModel, ConfigDict

from anchor.errors import BadInput
from anchor.ingest.archive import ArchiveLimits
from anchor.settings.session import env_number

_HASH = re.compile(r"^sha256:[0-9a-f]{64}$")


class ApiConfig(BaseModel):
    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    token_hashes: frozenset[str] = frozenset()
    max_request_bytes: int = 64 << 20
    max_proof_bytes: int = 16 << 20
    """An uploaded proof file (public route): ~100,000 listed files; see docs/manifest.md, Bounds."""
    archive_limits: ArchiveLimits = ArchiveLimits()
    flush_after_submit: bool = True

    @classmethod
    def from_env(cls) -> ApiConfig:
        raw = [t.strip() for t in os.environ.get("ANCHOR_API_TOKENS", "").split(",") if t.strip()]
        bad = [t for t in raw if not _HASH.match(t)]
        if bad:
            raise BadInput("ANCHOR_API_TOKENS takes sha256:<64 hex> hashes only, never tokens in clear")
        return cls(
            token_hashes=frozenset(t.removeprefix("sha256:") for t in raw),
            max_request_bytes=int(env_number("ANCHOR_API_MAX_REQUEST_BYTES", 64 << 20)),
            flush_after_submit=os.environ.get("ANCHOR_API_FLUSH", "1") != "0",
        )
