"""The file-tree manifest: every regular file under a root, its size and BLAKE3, and a Merkle root.

The tree over the sorted entries has the shape of RFC 6962 (split at the largest power of two below
n), with leaves and nodes hashed under different BLAKE3 domains, so one file's membership is proven
with log2(n) sibling hashes.

Hostile trees are refused, never followed: symbolic links, devices, FIFOs and sockets, names that are
not UTF-8, names that collide after Unicode NFC normalization, unreadable files, and files that change
while they are hashed. Each refusal is an `UnsafePath` (or `FileChanged`) naming the path.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import blake3

from anchor.errors import BadInput, FileChanged, UnsafePath
from anchor.manifest.canonical import canonical_json
from anchor.manifest.domain import Domain, tagged

FORMAT_VERSION = 1
_CHUNK = 8 * 1024 * 1024
"""Streaming chunk: large enough for BLAKE3 to spread one update over every core, small enough to
keep memory bounded whatever the file size."""
_THREADED_MIN = 2 * _CHUNK


@dataclass(frozen=True, slots=True)
class FileEntry:
    """One regular file: normalized relative POSIX path, size in bytes, BLAKE3 of the contents."""

    path: str
    size: int
    blake3: str

    def leaf_hash(self) -> bytes:
        return tagged(Domain.FILE_LEAF, canonical_json({"path": self.path, "size": self.size, "blake3": self.blake3}))

    def to_json(self) -> dict[str, object]:
        return {"path": self.path, "size": self.size, "blake3": self.blake3}


@dataclass(frozen=True, slots=True)
class FileTreeManifest:
    """The entries sorted by the UTF-8 bytes of their paths, and the tree root over them."""

    files: tuple[FileEntry, ...]

    @property
    def root(self) -> bytes:
        return merkle_root([entry.leaf_hash() for entry in self.files])

    def identity(self) -> dict[str, object]:
        """The fields the manifest digest commits to; the root commits to every entry."""
        return {"kind": "filetree", "version": FORMAT_VERSION, "root": self.root.hex()}

    @property
    def digest(self) -> bytes:
        return tagged(Domain.FILETREE_MANIFEST, canonical_json(self.identity()))

    def to_json(self) -> dict[str, object]:
        return {**self.identity(), "files": [entry.to_json() for entry in self.files]}

    @classmethod
    def from_json(cls, data: object, *, source: str = "manifest") -> FileTreeManifest:
        """Decode and re-validate; the stored root must match the entries. Raises `BadInput`."""
        if not isinstance(data, dict) or data.get("kind") != "filetree":
            raise BadInput(f"{source}: not a filetree manifest (field 'kind')")
        if data.get("version") != FORMAT_VERSION:
            raise BadInput(f"{source}: unsupported filetree version {data.get('version')!r} (field 'version')")
        raw = data.get("files")
        if not isinstance(raw, list):
            raise BadInput(f"{source}: field 'files' must be a list")
        entries = []
        for index, item in enumerate(raw):
            if not isinstance(item, dict) or set(item) != {"path", "size", "blake3"}:
                raise BadInput(f"{source}: files[{index}] must have exactly path, size, blake3")
            path, size, digest = item["path"], item["size"], item["blake3"]
            if not isinstance(path, str):
                raise BadInput(f"{source}: files[{index}].path must be a string")
            check_relative_path(path)
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise BadInput(f"{source}: files[{index}].size must be a non-negative integer ({path})")
            if not isinstance(digest, str) or len(digest) != 64 or not _is_hex(digest):
                raise BadInput(f"{source}: files[{index}].blake3 must be 64 lowercase hex digits ({path})")
            entries.append(FileEntry(path, size, digest))
        manifest = cls(_sorted_unique(entries, source))
        if data.get("root") != manifest.root.hex():
            raise BadInput(f"{source}: field 'root' does not match the files listed")
        return manifest


@dataclass(frozen=True, slots=True)
class TreeDiff:
    """How a tree on disk differs from a manifest: the paths changed, added and removed."""

    changed: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.changed or self.added or self.removed)


def diff(expected: FileTreeManifest, actual: FileTreeManifest) -> TreeDiff:
    old = {entry.path: entry for entry in expected.files}
    new = {entry.path: entry for entry in actual.files}
    return TreeDiff(
        changed=tuple(sorted(p for p in old.keys() & new.keys() if old[p] != new[p])),
        added=tuple(sorted(new.keys() - old.keys())),
        removed=tuple(sorted(old.keys() - new.keys())),
    )


def hash_tree(root: str | os.PathLike[str]) -> FileTreeManifest:
    """Hash a file or a directory. A single file becomes a tree of one entry named by its basename.

    On a missing root, a hostile entry or a file changing under us, raises `BadInput` or a subclass
    naming the path.
    """
    base = Path(root)
    try:
        st = os.lstat(base)
    except FileNotFoundError:
        raise BadInput(f"{base}: no such file or directory", detail={"path": str(base)}) from None
    except OSError as exc:
        raise UnsafePath(f"{base}: cannot be read ({exc.strerror})", detail={"path": str(base)}) from None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePath(f"{base}: the root is a symbolic link; links are refused", detail={"path": str(base)})
    if stat.S_ISREG(st.st_mode):
        name = _component(os.fsencode(base.name), str(base))
        return FileTreeManifest((FileEntry(name, *_hash_file(base, str(base))),))
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(f"{base}: not a regular file or directory", detail={"path": str(base)})
    entries = [FileEntry(rel, *_hash_file(path, rel)) for rel, path in _walk(base)]
    return FileTreeManifest(_sorted_unique(entries, str(base)))


def merkle_root(leaves: list[bytes]) -> bytes:
    """RFC 6962 tree hash over already-hashed leaves; the empty tree is the node tag over no bytes."""
    if not leaves:
        return tagged(Domain.TREE_NODE, b"")
    level = leaves
    if len(level) == 1:
        return level[0]
    split = 1 << ((len(level) - 1).bit_length() - 1)
    return tagged(Domain.TREE_NODE, merkle_root(level[:split]) + merkle_root(level[split:]))


def check_relative_path(path: str) -> None:
    """Refuse a manifest path that is absolute, empty, non-normalized or climbs out of the root."""
    parts = path.split("/")
    if (
        not path
        or path.startswith("/")
        or any(part in ("", ".", "..") for part in parts)
        or "\x00" in path
        or unicodedata.normalize("NFC", path) != path
    ):
        raise UnsafePath(f"{path!r}: not a normalized relative path inside the root", detail={"path": path})


def _walk(base: Path) -> list[tuple[str, Path]]:
    """(relative path, absolute path) of every regular file, refusing everything else."""
    found: list[tuple[str, Path]] = []
    stack: list[tuple[str, Path]] = [("", base)]
    while stack:
        prefix, directory = stack.pop()
        try:
            with os.scandir(directory) as it:
                children = list(it)
        except OSError as exc:
            shown = prefix.rstrip("/") or str(directory)
            raise UnsafePath(f"{shown}: directory cannot be read ({exc.strerror})", detail={"path": shown}) from None
        for child in children:
            raw_name = os.fsencode(child.name)
            shown = prefix + raw_name.decode("utf-8", "backslashreplace")
            rel = prefix + _component(raw_name, shown)
            mode = child.stat(follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                raise UnsafePath(f"{rel}: symbolic links are refused (never followed)", detail={"path": rel})
            if stat.S_ISDIR(mode):
                stack.append((rel + "/", Path(child.path)))
            elif stat.S_ISREG(mode):
                found.append((rel, Path(child.path)))
            else:
                kind = "FIFO" if stat.S_ISFIFO(mode) else "socket" if stat.S_ISSOCK(mode) else "device file"
                raise UnsafePath(f"{rel}: a {kind} is not a regular file", detail={"path": rel})
    return found


def _component(raw: bytes, shown: str) -> str:
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UnsafePath(f"{shown}: file name is not valid UTF-8", detail={"path": shown}) from None
    return unicodedata.normalize("NFC", name)


def _sorted_unique(entries: list[FileEntry], source: str) -> tuple[FileEntry, ...]:
    ordered = sorted(entries, key=lambda entry: entry.path.encode("utf-8"))
    for before, after in zip(ordered, ordered[1:], strict=False):
        if before.path == after.path:
            raise UnsafePath(
                f"{source}: two entries are named {after.path!r} after Unicode normalization",
                detail={"path": after.path},
            )
    return tuple(ordered)


def _hash_file(path: Path, shown: str) -> tuple[int, str]:
    """Stream one file; refuse it if its size, mtime or inode moved while we read it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise UnsafePath(f"{shown}: cannot be read ({exc.strerror})", detail={"path": shown}) from None
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise UnsafePath(f"{shown}: not a regular file", detail={"path": shown})
        threads = blake3.blake3.AUTO if before.st_size >= _THREADED_MIN else 1
        hasher = blake3.blake3(max_threads=threads)
        total = 0
        with os.fdopen(os.dup(fd), "rb", buffering=0) as stream:
            buffer = bytearray(min(_CHUNK, max(before.st_size, 1)))
            view = memoryview(buffer)
            while True:
                count = stream.readinto(view)
                if not count:
                    break
                hasher.update(view[:count])
                total += count
        after = os.fstat(fd)
    except OSError as exc:
        raise UnsafePath(f"{shown}: read failed ({exc.strerror})", detail={"path": shown}) from None
    finally:
        os.close(fd)
    if total != before.st_size or (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        raise FileChanged(f"{shown}: changed while it was being hashed", detail={"path": shown})
    return total, hasher.hexdigest()


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)
