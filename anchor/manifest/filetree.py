"""The file-tree manifest: every regular file under a root, its size and BLAKE3, and a Merkle root.

The tree over the sorted entries has the shape of RFC 6962 (split at the largest power of two below
n), with leaves and nodes hashed under different BLAKE3 domains, so one file's membership is proven
by log2(n) sibling hashes (`audit_path` / `root_from_audit_path`, RFC 9162 section 2.1.3).
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import blake3

from anchor.errors import BadInput, UnsafePath, did_you_mean
from anchor.manifest import hashing
from anchor.manifest.domain import Domain, tagged
from anchor.manifest.exclude import Rules
from anchor.manifest.hashing import Progress
from anchor.manifest.identity import manifest_digest
from anchor.manifest.walk import component, root_kind, walk
from anchor.record import Value

if TYPE_CHECKING:
    from anchor.manifest.listed import ListedFile
    from anchor.manifest.statcache import StatCache

FORMAT_VERSION = 1
_LEAF_HASHER = blake3.blake3(derive_key_context=Domain.FILE_LEAF.value)
_NODE_HASHER = blake3.blake3(derive_key_context=Domain.TREE_NODE.value)
"""A hasher already keyed for each domain, copied per leaf and node: deriving the context key again for
each of 100,000 leaves was a third of their cost (and reading an enum member's value as much again)."""
_PLAIN = re.compile(r'["\\\x00-\x1f\x7f]').search
"""Finds what json.dumps would escape (ensure_ascii=False: quote, backslash, C0 controls; DEL is kept,
but looking for it costs nothing and sends it the slow, certain way)."""
HEX64 = frozenset("0123456789abcdef")


def is_hex64(text: object) -> bool:
    return isinstance(text, str) and len(text) == 64 and set(text) <= HEX64


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class FileEntry(Value):
    """One regular file: normalized relative POSIX path, size in bytes, BLAKE3 of the contents."""

    path: str
    size: int
    blake3: str

    def leaf_hash(self) -> bytes:
        return _leaf(self.path, self.size, self.blake3)

    def to_json(self) -> ListedFile:
        return {"path": self.path, "size": self.size, "blake3": self.blake3}

    @classmethod
    def from_json(cls, item: object, where: str) -> FileEntry:
        """Decode one entry; raises `BadInput` (or `UnsafePath` for a bad path) naming `where`."""
        if not isinstance(item, dict) or set(item) != {"path", "size", "blake3"}:
            raise BadInput(f"{where}: must have exactly the fields path, size, blake3", detail={"field": where})
        path, size, digest = item["path"], item["size"], item["blake3"]
        if not isinstance(path, str):
            raise BadInput(f"{where}.path must be a string", detail={"field": f"{where}.path"})
        check_relative_path(path)
        if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size < 2**53:
            raise BadInput(f"{where}.size must be an integer in [0, 2^53) ({path})", detail={"field": f"{where}.size"})
        if not is_hex64(digest):
            raise BadInput(
                f"{where}.blake3 must be 64 lowercase hex digits ({path})", detail={"field": f"{where}.blake3"}
            )
        return cls(path, size, digest)


def node_hash(left: bytes, right: bytes) -> bytes:
    hasher = _NODE_HASHER.copy()  # tagged(Domain.TREE_NODE, left + right)
    hasher.update(left + right)
    return hasher.digest()


EMPTY_ROOT = tagged(Domain.TREE_NODE, b"")


def merkle_root(leaves: list[bytes]) -> bytes:
    """RFC 6962 tree hash over already-hashed leaves; no leaves gives `EMPTY_ROOT`."""
    if not leaves:
        return EMPTY_ROOT
    level = leaves
    # bottom-up, pairing left to right and promoting an odd last node: the same shape as the
    # recursive split at the largest power of two below n, without recursion.
    while len(level) > 1:
        paired = [node_hash(level[i], level[i + 1]) for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            paired.append(level[-1])
        level = paired
    return level[0]


def audit_path(leaves: list[bytes], index: int) -> list[bytes]:
    """RFC 6962 PATH(index, leaves): the siblings from the leaf up to the root."""
    if not 0 <= index < len(leaves):
        raise BadInput(f"leaf index {index} outside a tree of {len(leaves)}")
    if len(leaves) == 1:
        return []
    split = 1 << ((len(leaves) - 1).bit_length() - 1)
    if index < split:
        return [*audit_path(leaves[:split], index), merkle_root(leaves[split:])]
    return [*audit_path(leaves[split:], index - split), merkle_root(leaves[:split])]


def root_from_audit_path(leaf: bytes, index: int, size: int, path: list[bytes]) -> bytes | None:
    """The root that `path` leads to from `leaf` at `index` of `size` leaves (RFC 9162 2.1.3.2).

    Returns None when the path has the wrong length for that position.
    """
    if not 0 <= index < size:
        return None
    fn, sn, node = index, size - 1, leaf
    for sibling in path:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            node = node_hash(sibling, node)
            while not fn & 1 and fn != 0:
                fn >>= 1
                sn >>= 1
        else:
            node = node_hash(node, sibling)
        fn >>= 1
        sn >>= 1
    return node if sn == 0 else None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class FileTreeManifest(Value):
    """The entries sorted by the UTF-8 bytes of their paths, and the tree root over them."""

    files: tuple[FileEntry, ...]
    exclude: tuple[str, ...] = ()
    """The rules that left paths out when the tree was hashed (recorded only if they did)."""
    links: tuple[tuple[str, str], ...] = ()
    """(path, target) of each symbolic link met, sorted by path (recorded only if there were any)."""
    link_policy: str = "refuse"
    """How links were handled (anchor.manifest.walk): `record` or `follow-inside` when `links` is set."""
    left_out: tuple[str, ...] = field(default=(), compare=False)
    """What the rules left out when this tree was hashed (directories end in `/`): for people, not bound."""

    _memo: list[bytes] = field(default_factory=list, init=False, compare=False, repr=False)
    """The root, once computed (a frozen tree's root never changes): `summary()`, `digest` and
    `identity()` each reach it, and at 100,000 files each computation was 100,000 leaf hashes."""

    def leaves(self) -> list[bytes]:
        return [entry.leaf_hash() for entry in self.files]

    @property
    def root(self) -> bytes:
        if not self._memo:
            self._memo.append(merkle_root(self.leaves()))
        return self._memo[0]

    def summary(self) -> dict[str, Any]:
        """The tree's identity inside any manifest: its root, file count and total size."""
        return {
            "files_root": self.root.hex(),
            "file_count": len(self.files),
            "total_size": sum(entry.size for entry in self.files),
        }

    def identity(self) -> dict[str, Any]:
        """The object whose canonical JSON the manifest digest is computed over."""
        rules: dict[str, Any] = {"exclude": list(self.exclude)} if self.exclude else {}
        if self.links:
            rules["symlinks"] = {
                "policy": self.link_policy,
                "links": [{"path": path, "target": target} for path, target in self.links],
            }
        return {"kind": "filetree", "version": FORMAT_VERSION, **self.summary(), **rules}

    @property
    def digest(self) -> bytes:
        return manifest_digest(self.identity())

    def entry(self, path: str) -> tuple[int, FileEntry]:
        for index, entry in enumerate(self.files):
            if entry.path == path:
                return index, entry
        hint = did_you_mean(path, (entry.path for entry in self.files))
        raise BadInput(f"{path}: not in this tree{hint}", detail={"path": path})

    def files_json(self) -> list[ListedFile]:
        return [entry.to_json() for entry in self.files]

    @classmethod
    def from_files_json(
        cls, raw: object, where: str = "files", identity: dict[str, Any] | None = None
    ) -> FileTreeManifest:
        """The listing `raw`, with the exclusion rules and links an (already validated) identity records."""
        if not isinstance(raw, list):
            raise BadInput(f"{where} must be a list", detail={"field": where})
        entries = [FileEntry.from_json(item, f"{where}[{i}]") for i, item in enumerate(raw)]
        identity = identity or {}
        recorded = identity.get("symlinks") or {"policy": "refuse", "links": []}
        return cls(
            sorted_unique(entries, where),
            tuple(identity.get("exclude") or ()),
            tuple((link["path"], link["target"]) for link in recorded["links"]),
            recorded["policy"],
        )


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class TreeDiff(Value):
    """How a tree on disk differs from a manifest: the paths changed, added and removed."""

    changed: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    renamed: tuple[tuple[str, str], ...] = ()
    """(old path, new path) pairs of a removed and an added file with the same size and BLAKE3: shown as a
    rename. Both paths stay in `removed` and `added` too: the manifest differs either way."""

    def __bool__(self) -> bool:
        return bool(self.changed or self.added or self.removed)

    def named(self) -> list[str]:
        return [*self.changed, *self.added, *self.removed]


def diff(expected: FileTreeManifest, actual: FileTreeManifest) -> TreeDiff:
    """Files and links that differ (a link is compared by its target text)."""
    old: dict[str, object] = {entry.path: entry for entry in expected.files}
    new: dict[str, object] = {entry.path: entry for entry in actual.files}
    old.update((path, ("link", target)) for path, target in expected.links)
    new.update((path, ("link", target)) for path, target in actual.links)
    added = tuple(sorted(new.keys() - old.keys()))
    removed = tuple(sorted(old.keys() - new.keys()))
    by_content: dict[object, list[str]] = {}
    for path in added:
        if isinstance(new[path], FileEntry):
            by_content.setdefault(_content(new[path]), []).append(path)
    renamed = []
    for path in removed:
        if isinstance(old[path], FileEntry) and by_content.get(_content(old[path])):
            renamed.append((path, by_content[_content(old[path])].pop(0)))
    return TreeDiff(
        changed=tuple(sorted(p for p in old.keys() & new.keys() if old[p] != new[p])),
        added=added,
        removed=removed,
        renamed=tuple(renamed),
    )


def _content(entry: object) -> tuple[int, bytes]:
    return (entry.size, entry.blake3)  # type: ignore[attr-defined]


def hash_tree(
    root: str | os.PathLike[str],
    rules: Rules | None = None,
    symlinks: str = "refuse",
    progress: Progress | None = None,
    cache: StatCache | None = None,
) -> FileTreeManifest:
    """Hash a file or a directory. A single file becomes a tree of one entry named by its basename.
    `cache` (a stamp's, never a verify's): files whose fstat it holds are not read again
    (anchor.manifest.statcache), and what was met is noted in it for its `save`.

    `rules` (anchor.manifest.exclude) leave paths out of a directory; if they left anything out, the
    tree records them (`exclude`); `symlinks` is the link policy of anchor.manifest.walk, and links met
    are recorded with it (`symlinks`); `progress` is anchor.manifest.hashing's. On a missing root, a
    hostile entry or a file changing under us, raises `BadInput` or a subclass naming the path. Nothing is written.
    """
    with hashing.using_cache(cache):
        return _hash_tree(Path(root), rules, symlinks, progress)


def _hash_tree(base: Path, rules: Rules | None, symlinks: str, progress: Progress | None) -> FileTreeManifest:
    if root_kind(base) == "file":
        name = component(os.fsencode(base.name), str(base))
        st = base.lstat()
        size, digest = hashing.hash_files([(str(base), os.fspath(base), st.st_size, (st.st_dev, st.st_ino))], progress)[
            0
        ]
        return FileTreeManifest((FileEntry(name, size, digest),))
    excluded: list[str] = []
    links: list[tuple[str, str]] = []
    patterns = None if rules is None else rules.patterns
    with hashing.Streamed(FileEntry, _leaf, progress, patterns, symlinks) as hashed:  # hashing starts as it lists
        walk(base, rules, excluded, symlinks, links, listed=hashed.add, hand_off=hashed.hand_off)
        results = hashed.finish()
        excluded += hashed.excluded  # what the workers' part of the walk left out and met
        links += hashed.links
    results.sort(key=lambda pair: pair[0].path.encode("utf-8"))
    ordered = tuple(entry for entry, _ in results)
    if progress is not None:  # the last word from what was hashed, not the workers' running counters
        size = sum(entry.size for entry in ordered)
        progress(len(ordered), len(ordered), size, size)
    refuse_repeats(ordered, str(base))
    recorded = rules.recorded(excluded) if rules is not None else ()
    links.sort(key=lambda link: link[0].encode("utf-8"))
    tree = FileTreeManifest(ordered, recorded, tuple(links), symlinks, tuple(excluded))
    tree._memo.append(merkle_root([leaf for _, leaf in results]))  # the leaves the workers made
    return tree


def _leaf(path: str, size: int, digest: str) -> bytes:
    """A file's Merkle leaf (`FileEntry.leaf_hash`), made where it was hashed by
    anchor.manifest.hashing.Streamed's workers without making the entry: canonical_json({"blake3",
    "path", "size"}) written out by hand, since this runs once per file. A path with nothing JSON
    escapes (no quote, backslash or control character) is its own JSON string."""
    text = f'"{path}"' if _PLAIN(path) is None else json.dumps(path, ensure_ascii=False)
    hasher = _LEAF_HASHER.copy()
    hasher.update(f'{{"blake3":"{digest}","path":{text},"size":{size}}}'.encode())
    return hasher.digest()


def check_links(recorded: object, where: str) -> None:
    """A recorded `symlinks` object: a policy that records links and a sorted list of them."""
    from anchor.manifest.walk import MAX_LINK_TARGET

    if not isinstance(recorded, dict) or set(recorded) != {"policy", "links"}:
        raise BadInput(f"{where}: must have exactly the fields policy, links", detail={"field": where})
    if recorded["policy"] not in ("record", "follow-inside"):
        raise BadInput(f"{where}.policy must be record or follow-inside", detail={"field": f"{where}.policy"})
    links = recorded["links"]
    if not isinstance(links, list) or not 0 < len(links) <= 100_000:
        raise BadInput(f"{where}.links must be a non-empty list", detail={"field": f"{where}.links"})
    paths = []
    for i, link in enumerate(links):
        at = f"{where}.links[{i}]"
        if not isinstance(link, dict) or set(link) != {"path", "target"}:
            raise BadInput(f"{at}: must have exactly the fields path, target", detail={"field": at})
        target = link["target"]
        if not isinstance(link["path"], str) or not isinstance(target, str):
            raise BadInput(f"{at}: path and target must be strings", detail={"field": at})
        check_relative_path(link["path"])
        if not target or "\x00" in target or not _is_utf8(target) or len(target.encode()) > MAX_LINK_TARGET:
            raise BadInput(f"{at}.target: 1-{MAX_LINK_TARGET} bytes of UTF-8", detail={"field": f"{at}.target"})
        paths.append(link["path"].encode("utf-8"))
    if paths != sorted(set(paths)):
        raise BadInput(f"{where}.links must be sorted by path, without repeats", detail={"field": f"{where}.links"})


def check_relative_path(path: str) -> None:
    """Refuse a manifest path that is absolute, empty, non-normalized or climbs out of the root."""
    parts = path.split("/")
    if (
        not path
        or path.startswith("/")
        or any(part in ("", ".", "..") for part in parts)
        or "\x00" in path
        or not _is_utf8(path)
        or unicodedata.normalize("NFC", path) != path
    ):
        raise UnsafePath(f"{path!r}: not a normalized relative path inside the root", detail={"path": path})


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: no file system or JSON writer can hold it
        return False
    return True


def sorted_unique(entries: list[FileEntry], source: str) -> tuple[FileEntry, ...]:
    """Entries in canonical order; two entries with one path (after NFC) are refused."""
    ordered = tuple(sorted(entries, key=lambda entry: entry.path.encode("utf-8")))
    refuse_repeats(ordered, source)
    return ordered


def refuse_repeats(ordered: tuple[FileEntry, ...], source: str) -> None:
    """Sorted entries must name each path once (two names can become one under NFC)."""
    for before, after in zip(ordered, ordered[1:], strict=False):
        if before.path == after.path:
            raise UnsafePath(
                f"{after.path}: two entries have this name after Unicode NFC normalization ({source})",
                detail={"path": after.path},
            )
