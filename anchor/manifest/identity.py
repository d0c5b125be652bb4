"""From a manifest identity object (any kind) to its digest: BLAKE3 in the domain of its `kind`, over
its canonical JSON.

It knows the kinds' domains but not their models, so every kind can import it; decoding a stranger's
identity back into a model is `anchor.manifest.decode`, which imports them all (no cycle either way).
"""

from __future__ import annotations

from typing import Any

from anchor.errors import BadInput
from anchor.manifest.canonical import canonical_json
from anchor.manifest.domain import Domain, tagged

_DOMAINS = {
    "filetree": Domain.FILETREE_MANIFEST,
    "bundle": Domain.BUNDLE_MANIFEST,
    "attempt": Domain.ATTEMPT_MANIFEST,
    "ledger": Domain.LEDGER_HEAD,
    "champion": Domain.CHAMPION_MANIFEST,
    "mission": Domain.MISSION,
    "timing": Domain.TIMING,
    "mlflow_run": Domain.MLFLOW_RUN,
}


class HasIdentity:
    """For manifest models: the digest is always the domain hash of `identity()`, nothing else."""

    def identity(self) -> dict[str, Any]:
        raise TypeError(f"{type(self).__name__} must define identity()")

    @property
    def digest(self) -> bytes:
        return manifest_digest(self.identity())


def manifest_digest(identity: dict[str, Any]) -> bytes:
    kind = identity.get("kind")
    if kind not in _DOMAINS:
        raise BadInput(f"manifest: unknown kind {kind!r}", detail={"field": "kind"})
    return tagged(_DOMAINS[kind], canonical_json(identity))
