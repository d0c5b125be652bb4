"""Domain-separated BLAKE3 digests.

Each kind of object is hashed with BLAKE3's `derive_key` mode under its own context string, so a
digest of one kind can never be passed off as another (a leaf as a node, a file tree as a bundle).
Raw file contents are hashed with plain BLAKE3, so they agree with `b3sum`.
"""

from __future__ import annotations

from enum import StrEnum

import blake3


class Domain(StrEnum):
    """BLAKE3 derive_key contexts. Changing one changes every digest of that kind: bump the version."""

    FILE_LEAF = "anchor.manifest.v1 file-leaf"
    TREE_NODE = "anchor.manifest.v1 tree-node"
    FILETREE_MANIFEST = "anchor.manifest.v1 filetree-manifest"
    BUNDLE_MANIFEST = "anchor.manifest.v1 bundle-manifest"
    ATTEMPT_MANIFEST = "anchor.manifest.v1 attempt-manifest"
    LEDGER_ENTRY = "anchor.manifest.v1 ledger-entry"
    LEDGER_HEAD = "anchor.manifest.v1 ledger-head"
    CHAMPION_MANIFEST = "anchor.manifest.v1 champion-manifest"
    METRIC_SOURCE = "anchor.manifest.v1 metric-source"
    MISSION = "anchor.manifest.v1 mission"
    TIMING = "anchor.manifest.v1 timing"
    MLFLOW_RUN = "anchor.manifest.v1 mlflow-run"


def tagged(domain: Domain, data: bytes) -> bytes:
    """32-byte BLAKE3 of `data` in `domain`."""
    return blake3.blake3(data, derive_key_context=domain.value).digest()
