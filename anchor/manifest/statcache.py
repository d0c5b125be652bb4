"""A stat cache for re-stamps, as git's index and DVC's state keep one: for each file of a stamped
folder, the (size, mtime_ns, ctime_ns, inode, device) it had when it was hashed, and its BLAKE3 digest,
so that `anchor stamp` of a folder where one file changed reads one file, not all of them.

What may be skipped, and why that is safe enough for a stamp (and never used by a verify):
- a file is trusted from the cache only if all five fields are what its fstat says now (an edit that
  restores the mtime with `os.utime` still moves the ctime, which no user call can set back);
- git's racy-timestamp rule: an entry whose mtime or ctime is not older than the moment the cache's
  hashing began is hashed again (a write in the same clock tick as the hashing leaves the mtime where it
  was). That moment is read from the filesystem's own clock, a marker file's mtime, because the clock
  that stamps files is coarser than `time.time_ns()` and may lag it;
- `anchor stamp --rehash` ignores the cache (and writes a fresh one); `anchor verify` never reads it:
  a verdict always hashes every byte, so a cache that lies (a filesystem that keeps ctime, an edited
  data dir) can make a stamp anchor stale bytes, which verify then names as changed, but never make a
  verify pass.

The file is the data dir's (`stat-cache/`, one per stamped root, named by its real path), binary, and
read with every length checked: a garbled cache is an empty cache. Forked hashing workers inherit the
loaded entries and append what they hashed to a part file of their own, which `save` merges.
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Iterator
from pathlib import Path

MAGIC = b"anchor stat cache 1\n"
_HEAD = struct.Struct("<q")  # the moment the hashing began, ns, the filesystem's clock
_ENTRY = struct.Struct("<QqqQQ32sH")  # size, mtime_ns, ctime_ns, inode, device, digest, path length

Fingerprint = tuple[int, int, int, int, int]
"""(size, mtime_ns, ctime_ns, inode, device) of a file, from one fstat."""


def fingerprint(st: os.stat_result) -> Fingerprint:
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev


class StatCache:
    """The entries of one stamped root: `digest_of` answers from them, `record` notes what was hashed
    now (in this process or a forked worker), `save` writes what this hashing saw, atomically."""

    def __init__(self, file: Path, entries: dict[str, tuple[Fingerprint, bytes]], as_of_ns: int) -> None:
        self.file, self.entries, self.as_of_ns = file, entries, as_of_ns
        self.started_ns = 0
        self.owner = os.getpid()
        self.seen: list[tuple[str, Fingerprint, bytes]] = []
        self._seen_by = os.getpid()

    @classmethod
    def for_root(cls, folder: Path, root: Path, rehash: bool = False) -> StatCache:
        """The cache of stamped root `root` in `folder` (the data dir's `stat-cache/`): empty with
        `rehash`, or if missing or garbled; its hashing moment marked now."""
        from blake3 import blake3

        name = blake3(os.fsencode(os.path.realpath(root))).hexdigest()[:32]
        folder.mkdir(parents=True, exist_ok=True)
        cache = cls(folder / f"{name}.bin", {}, 0) if rehash else cls.load(folder / f"{name}.bin")
        cache.discard_parts()  # a hashing that stopped half-way left them: what it saw is not this one's
        marker = folder / f"{name}.started"
        marker.write_bytes(b"")  # its mtime: the filesystem clock's now, on the clock that stamps files
        cache.started_ns = os.stat(marker).st_mtime_ns
        return cache

    @classmethod
    def load(cls, file: Path) -> StatCache:
        try:
            data = file.read_bytes()
        except OSError:
            return cls(file, {}, 0)
        entries: dict[str, tuple[Fingerprint, bytes]] = {}
        if not data.startswith(MAGIC) or len(data) < len(MAGIC) + _HEAD.size:
            return cls(file, {}, 0)
        (as_of,) = _HEAD.unpack_from(data, len(MAGIC))
        at = len(MAGIC) + _HEAD.size
        try:
            while at < len(data):
                size, mtime, ctime, ino, dev, digest, length = _ENTRY.unpack_from(data, at)
                at += _ENTRY.size
                name = data[at : at + length].decode("utf-8")
                if len(name.encode("utf-8")) != length:
                    raise ValueError("truncated")
                at += length
                entries[name] = ((size, mtime, ctime, ino, dev), digest)
        except (struct.error, ValueError, UnicodeDecodeError):
            return cls(file, {}, 0)  # garbled: hash everything, as with no cache
        return cls(file, entries, as_of)

    def digest_of(self, shown: str, now: os.stat_result) -> str | None:
        """The cached BLAKE3 hex of the file at manifest path `shown`, whose fstat is `now`, if the
        entry matches it in all five fields and is older than the cache's hashing moment; else None."""
        found = self.entries.get(shown)
        if found is None:
            return None
        seen, digest = found
        if seen != fingerprint(now) or now.st_mtime_ns >= self.as_of_ns or now.st_ctime_ns >= self.as_of_ns:
            return None
        return digest.hex()

    def record(self, shown: str, st: os.stat_result, digest: str) -> None:
        """Note a file hashed (or found unchanged) now, with the fstat taken around its reading."""
        if self._seen_by != os.getpid():  # a forked worker: what the parent had noted is the parent's
            self.seen, self._seen_by = [], os.getpid()
        self.seen.append((shown, fingerprint(st), bytes.fromhex(digest)))

    def flush_part(self) -> None:
        """In a forked worker: append what it noted to its part file (`save` merges them)."""
        if os.getpid() == self.owner or self._seen_by != os.getpid() or not self.seen:
            return
        with open(self._part(os.getpid()), "ab") as out:
            out.write(b"".join(_pack(*each) for each in self.seen))
        self.seen = []

    def _part(self, pid: int) -> Path:
        return self.file.with_name(f"{self.file.name}.{pid}.part")

    def _parts(self) -> Iterator[Path]:
        yield from self.file.parent.glob(f"{self.file.name}.*.part")

    def save(self) -> None:
        """Write every entry this hashing noted (here and in its workers) as the cache, atomically, with
        the moment the hashing began; entries of files it did not meet are dropped."""
        chunks = [MAGIC, _HEAD.pack(self.started_ns)]
        chunks += [_pack(*each) for each in self.seen] if self._seen_by == os.getpid() else []
        for part in sorted(self._parts()):
            chunks.append(part.read_bytes())
        temporary = self.file.with_name(self.file.name + ".tmp")
        temporary.write_bytes(b"".join(chunks))
        os.replace(temporary, self.file)
        self.discard_parts()

    def discard_parts(self) -> None:
        for part in self._parts():
            with contextlib.suppress(OSError):
                part.unlink()


def _pack(shown: str, seen: Fingerprint, digest: bytes) -> bytes:
    name = shown.encode("utf-8")
    return _ENTRY.pack(*seen, digest, len(name)) + name
