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
read with every length checked and its closing BLAKE3 matched: a cut or garbled cache is an empty cache
(a cache of the version before is one too: the next stamp reads everything once). Forked hashing workers inherit the
loaded entries and append what they hashed to a part file of their own, which `save` merges.
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Iterator
from pathlib import Path

MAGIC = b"anchor stat cache 2\n"
_HEAD = struct.Struct("<qQ")  # the moment the hashing began (ns, the filesystem's clock), the entry count
_RECORD = struct.Struct("<QqqQQ32s")  # size, mtime_ns, ctime_ns, inode, device, digest
_CHECK = 32  # the file ends with the BLAKE3 of all before it: a cut or garbled cache is an empty one
_SEGMENT = struct.Struct("<QQ")  # a part file's segment: entry count, length of its names

Fingerprint = tuple[int, int, int, int, int]
"""(size, mtime_ns, ctime_ns, inode, device) of a file, from one fstat."""


def fingerprint(st: os.stat_result) -> Fingerprint:
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev


class StatCache:
    """The entries of one stamped root: `take` answers from them, `record` notes what was hashed now (in
    this process or a forked worker), `save` writes what this hashing saw, atomically.

    Laid out for a root of 100,000 files: fixed-size records in one block and the paths in another,
    NUL-joined (no path holds a NUL), so that loading is one split and one dict, and an entry found
    unchanged is noted as its record's very bytes, never unpacked into Python objects and packed again."""

    def __init__(self, file: Path, names: dict[str, int], records: bytes, as_of_ns: int) -> None:
        self.file, self.names, self.records, self.as_of_ns = file, names, records, as_of_ns
        self.started_ns = 0
        self.owner = os.getpid()
        self.seen_names: list[str] = []
        self.seen_records: list[bytes] = []
        self._seen_by = os.getpid()

    @classmethod
    def for_root(cls, folder: Path, root: Path, rehash: bool = False) -> StatCache:
        """The cache of stamped root `root` in `folder` (the data dir's `stat-cache/`): empty with
        `rehash`, or if missing or garbled; its hashing moment marked now."""
        from blake3 import blake3

        name = blake3(os.fsencode(os.path.realpath(root))).hexdigest()[:32]
        folder.mkdir(parents=True, exist_ok=True)
        cache = cls(folder / f"{name}.bin", {}, b"", 0) if rehash else cls.load(folder / f"{name}.bin")
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
            return cls(file, {}, b"", 0)
        from blake3 import blake3

        at = len(MAGIC) + _HEAD.size
        data, check = data[:-_CHECK], data[-_CHECK:]
        if not data.startswith(MAGIC) or len(data) < at or blake3(data).digest() != check:
            return cls(file, {}, b"", 0)  # missing, garbled or of another version: hash everything
        as_of, count = _HEAD.unpack_from(data, len(MAGIC))
        records, names = data[at : at + count * _RECORD.size], data[at + count * _RECORD.size :]
        try:
            listed = names.decode("utf-8").split("\0") if count else []
        except UnicodeDecodeError:
            return cls(file, {}, b"", 0)
        if len(records) != count * _RECORD.size or len(listed) != count or (not count and names):
            return cls(file, {}, b"", 0)
        return cls(file, dict(zip(listed, range(count), strict=True)), records, as_of)

    @property
    def entries(self) -> dict[str, tuple[Fingerprint, bytes]]:
        """Every entry loaded, by manifest path: (fingerprint, digest)."""
        found: dict[str, tuple[Fingerprint, bytes]] = {}
        for shown, k in self.names.items():
            size, mtime, ctime, ino, dev, digest = _RECORD.unpack_from(self.records, k * _RECORD.size)
            found[shown] = ((size, mtime, ctime, ino, dev), digest)
        return found

    def take(self, shown: str, now: os.stat_result) -> str | None:
        """The cached BLAKE3 hex of the file at manifest path `shown`, whose lstat is `now`, if the entry
        matches it in all five fields and is older than the cache's hashing moment (and then noted as
        seen, as is); else None."""
        k = self.names.get(shown)
        if k is None or now.st_mtime_ns >= self.as_of_ns or now.st_ctime_ns >= self.as_of_ns:
            return None
        at = k * _RECORD.size
        size, mtime, ctime, ino, dev, digest = _RECORD.unpack_from(self.records, at)
        if (size, mtime, ctime, ino, dev) != fingerprint(now):
            return None
        if self._seen_by != os.getpid():
            self._forked()
        self.seen_names.append(shown)
        self.seen_records.append(self.records[at : at + _RECORD.size])
        return bytes(digest).hex()

    def record(self, shown: str, st: os.stat_result, digest: str) -> None:
        """Note a file hashed now, with the fstat taken around its reading."""
        self.note(shown, fingerprint(st), bytes.fromhex(digest))

    def note(self, shown: str, seen: Fingerprint, digest: bytes) -> None:
        if self._seen_by != os.getpid():
            self._forked()
        self.seen_names.append(shown)
        self.seen_records.append(_RECORD.pack(*seen, digest))

    def _forked(self) -> None:
        """In a forked worker: what the parent had noted is the parent's."""
        self.seen_names, self.seen_records, self._seen_by = [], [], os.getpid()

    def flush_part(self) -> None:
        """In a forked worker: append what it noted to its part file (`save` merges them)."""
        if os.getpid() == self.owner or self._seen_by != os.getpid() or not self.seen_names:
            return
        names = "\0".join(self.seen_names).encode("utf-8")
        with open(self._part(os.getpid()), "ab") as out:
            out.write(_SEGMENT.pack(len(self.seen_names), len(names)) + b"".join(self.seen_records) + names)
        self.seen_names, self.seen_records = [], []

    def _part(self, pid: int) -> Path:
        return self.file.with_name(f"{self.file.name}.{pid}.part")

    def _parts(self) -> Iterator[Path]:
        yield from self.file.parent.glob(f"{self.file.name}.*.part")

    def save(self) -> None:
        """Write every entry this hashing noted (here and in its workers) as the cache, atomically, with
        the moment the hashing began; entries of files it did not meet are dropped."""
        from blake3 import blake3

        mine = self._seen_by == os.getpid()
        names, records = ([*self.seen_names], [*self.seen_records]) if mine else ([], [])
        for part in sorted(self._parts()):
            found = _segments(part.read_bytes())
            if found is not None:  # a part cut or garbled (a worker killed while writing): its files are read next time
                names += found[0]
                records += found[1]
        joined = "\0".join(names).encode("utf-8")
        temporary = self.file.with_name(self.file.name + ".tmp")
        body = b"".join([MAGIC, _HEAD.pack(self.started_ns, len(names)), *records, joined])
        temporary.write_bytes(body + blake3(body).digest())
        os.replace(temporary, self.file)
        self.discard_parts()

    def discard_parts(self) -> None:
        for part in self._parts():
            with contextlib.suppress(OSError):
                part.unlink()


def _segments(data: bytes) -> tuple[list[str], list[bytes]] | None:
    """The (names, records) of a worker's part file, or None when any segment of it is not whole."""
    names: list[str] = []
    records: list[bytes] = []
    at = 0
    while at < len(data):
        if at + _SEGMENT.size > len(data):
            return None
        count, length = _SEGMENT.unpack_from(data, at)
        at += _SEGMENT.size
        block, text = (
            data[at : at + count * _RECORD.size],
            data[at + count * _RECORD.size : at + count * _RECORD.size + length],
        )
        at += count * _RECORD.size + length
        try:
            listed = text.decode("utf-8").split("\0") if count else []
        except UnicodeDecodeError:
            return None
        if len(block) != count * _RECORD.size or len(text) != length or len(listed) != count:
            return None
        names += listed
        records.append(block)
    return names, records
