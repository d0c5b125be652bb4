"""One row of a file-tree listing as JSON, the shape a proof file's `files` holds (docs/manifest.md):
its own module, so that a proof file's record names it without importing the hashing code."""

from __future__ import annotations

from typing import TypedDict


class ListedFile(TypedDict):
    """Exactly these keys (anchor.manifest.filetree.FileEntry decodes and refuses anything else)."""

    path: str
    size: int
    blake3: str
