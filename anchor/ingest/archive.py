"""Decode an uploaded bundle archive (tar, tar.gz, zip) into a file-tree manifest, under hard bounds.

Nothing is extracted to disk and nothing declared by the archive is trusted: every member is read
through a counting stream and hashed here; sizes are what was read, not what the header says.
Directory entries (`zip -r` writes `dir/`, `tar -C d -cf x.tar .` writes `.` and `./dir`) are
structure, not files: they are counted against `max_entries` and otherwise skipped.
Refused, each with `ArchiveRefused` naming the member: anything but a regular file or directory
(links, devices, FIFOs), absolute paths, `..`, backslashes, NUL, names that are not UTF-8 (or, in zip,
not flagged UTF-8 and not ASCII), names equal after NFC or differing only in case, a path that is both
a file and a directory, encrypted or unsupported-method zip members, paths longer than the limit, a
long-name or pax header larger than `max_header_bytes` (checked before tarfile reads it), more entries
of any kind than `max_entries`, more files, more bytes per file or in total (headers included), or a
higher compression ratio than allowed, and truncated or corrupt archives.
"""

from __future__ import annotations

import io
import stat
import struct
import tarfile
import unicodedata
import zipfile
from dataclasses import dataclass
from typing import IO

import blake3

from anchor.errors import ArchiveRefused, BadInput
from anchor.manifest.filetree import FileEntry, FileTreeManifest, check_relative_path, sorted_unique
from anchor.record import Value


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ArchiveLimits(Value):
    max_files: int = 10_000
    max_file_bytes: int = 64 << 20
    max_total_bytes: int = 256 << 20
    max_ratio: float = 100.0
    max_path_bytes: int = 1024
    max_entries: int = 20_000
    """Members of every kind, directories included."""
    max_header_bytes: int = 64 * 1024
    """A GNU long-name or pax extended header: tarfile would read it into memory whole."""


def _refuse(member: str, why: str) -> ArchiveRefused:
    return ArchiveRefused(f"archive member {member!r}: {why}", detail={"member": member, "reason": why})


def _name(raw: str, limits: ArchiveLimits) -> str:
    if "\\" in raw or "\x00" in raw:
        raise _refuse(raw, "backslash or NUL in the name")
    name = unicodedata.normalize("NFC", raw.removeprefix("./"))
    if len(name.encode("utf-8")) > limits.max_path_bytes:
        raise _refuse(raw[:80], f"path longer than {limits.max_path_bytes} bytes")
    try:
        check_relative_path(name)
    except BadInput:
        raise _refuse(raw, "absolute path, empty component or '..' (path traversal)") from None
    return name


def _dir_name(raw: str, limits: ArchiveLimits) -> str | None:
    """A directory member's normalized name, or None for the archive's root (`.`, `./`)."""
    stripped = raw.rstrip("/")
    if stripped in ("", "."):
        return None
    return _name(stripped, limits)


class _Budget:
    def __init__(self, limits: ArchiveLimits, compressed: int) -> None:
        self.limits, self.compressed, self.total, self.files, self.entries = limits, max(compressed, 1), 0, 0, 0

    def entry(self, member: str) -> None:
        """Count one member of any kind (directories and headers cost work too)."""
        self.entries += 1
        if self.entries > self.limits.max_entries:
            raise _refuse(member[:80], f"more than {self.limits.max_entries} entries (files and directories)")

    def add(self, member: str, count: int) -> None:
        self.total += count
        if self.total > self.limits.max_total_bytes:
            raise _refuse(member, f"archive expands beyond {self.limits.max_total_bytes} bytes")
        if self.total > self.limits.max_ratio * self.compressed and self.total > (1 << 20):
            raise _refuse(member, f"compression ratio above {self.limits.max_ratio:g} (a decompression bomb?)")

    def hash(self, member: str, stream: IO[bytes]) -> tuple[int, str]:
        self.files += 1
        if self.files > self.limits.max_files:
            raise _refuse(member, f"more than {self.limits.max_files} files")
        hasher, size = blake3.blake3(), 0
        while True:
            chunk = stream.read(1 << 20)
            if not chunk:
                break
            size += len(chunk)
            if size > self.limits.max_file_bytes:
                raise _refuse(member, f"larger than {self.limits.max_file_bytes} bytes")
            self.add(member, len(chunk))
            hasher.update(chunk)
        return size, hasher.hexdigest()


def _check_extractable(entries: list[FileEntry], dirs: set[str]) -> None:
    """Refuse listings no file system could hold: a path that is both a file and a directory, and
    names that collide where case is folded (macOS, Windows) and would overwrite each other there."""
    files = {entry.path for entry in entries}
    seen: dict[str, str] = {}
    names = set(files) | dirs
    for directory in sorted(dirs & files):
        raise _refuse(directory, "is both a file and the directory entry of the same name")
    for path in files:
        parts = path.split("/")
        for i in range(1, len(parts)):
            prefix = "/".join(parts[:i])
            if prefix in files:
                raise _refuse(prefix, f"is both a file and the directory of {path!r}")
            names.add(prefix)
    for name in sorted(names):
        other = seen.setdefault(name.casefold(), name)
        if other != name:
            raise _refuse(name, f"differs from {other!r} only in letter case")


def decode_archive(data: bytes, limits: ArchiveLimits | None = None) -> FileTreeManifest:
    """The file-tree manifest of an archive's regular files. Raises `ArchiveRefused` (a `BadInput`)."""
    limits = limits or ArchiveLimits()
    dirs: set[str] = set()
    entries = _zip(data, limits, dirs) if zipfile.is_zipfile(io.BytesIO(data)) else _tar(data, limits, dirs)
    try:
        ordered = sorted_unique(entries, "archive")
    except BadInput as exc:
        raise _refuse(str(exc.detail.get("path")), "two members have this name after NFC normalization") from None
    _check_extractable(entries, dirs)
    return FileTreeManifest(ordered)


MAX_HEADER_CHAIN = 8
"""Extended headers (GNU long name/link, pax) allowed in a row before one member."""
_LONG_HEADERS = frozenset(
    {tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK, tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE}
)


def _bounded_tarinfo(limits: ArchiveLimits) -> type[tarfile.TarInfo]:
    """A TarInfo that refuses an oversized long-name or pax header before tarfile reads it whole (a
    942-byte tar.bz2 declaring a 1 GiB name header took the server to 2.2 GB)."""

    class BoundedTarInfo(tarfile.TarInfo):
        def _proc_member(self, tar: tarfile.TarFile) -> tarfile.TarInfo:
            if self.type in _LONG_HEADERS:
                if self.size > limits.max_header_bytes:
                    raise _refuse(self.name[:80], f"a header of {self.size} bytes (limit {limits.max_header_bytes})")
                # tarfile reads the member a long header names by recursing: 2,000 chained headers were a
                # RecursionError (a 500); a member needs at most a name, a link name and a pax header or two
                depth = getattr(tar, "_anchor_header_chain", 0) + 1
                if depth > MAX_HEADER_CHAIN:
                    raise _refuse(self.name[:80], f"more than {MAX_HEADER_CHAIN} extended headers before one member")
                tar._anchor_header_chain = depth  # type: ignore[attr-defined]
            else:
                tar._anchor_header_chain = 0  # type: ignore[attr-defined]
            member: tarfile.TarInfo = super()._proc_member(tar)  # type: ignore[misc]
            return member

    return BoundedTarInfo


def _tar(data: bytes, limits: ArchiveLimits, dirs: set[str]) -> list[FileEntry]:
    budget = _Budget(limits, len(data))
    entries: list[FileEntry] = []
    try:
        with tarfile.open(
            fileobj=io.BytesIO(data), mode="r:*", encoding="utf-8", errors="strict", tarinfo=_bounded_tarinfo(limits)
        ) as archive:
            for member in archive:
                budget.entry(member.name)
                budget.add(member.name[:80], member.offset_data - member.offset)  # headers decoded so far
                if member.isdir():
                    directory = _dir_name(member.name, limits)
                    if directory is not None:
                        dirs.add(directory)
                    continue
                name = _name(member.name, limits)
                if not member.isreg() or member.type not in (tarfile.REGTYPE, tarfile.AREGTYPE):
                    raise _refuse(member.name, "not a regular file (link, device, FIFO or special member)")
                stream = archive.extractfile(member)
                if stream is None:
                    raise _refuse(member.name, "unreadable member")
                size, digest = budget.hash(name, stream)
                entries.append(FileEntry(name, size, digest))
    except UnicodeError:
        raise ArchiveRefused("archive: a member name is not valid UTF-8", detail={"reason": "non-UTF-8 name"}) from None
    except (tarfile.TarError, EOFError, OSError, ValueError) as exc:
        raise ArchiveRefused(
            f"archive: not a readable tar or zip ({type(exc).__name__}: {exc})"[:300],
            detail={"reason": "corrupt or truncated"},
        ) from None
    return entries


_ZIP_METHODS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA})
"""The methods Python's zipfile decodes; any other is refused by name before a member is opened."""


def _zip_entries_beyond(data: bytes, limit: int) -> int | None:
    """How many entries the central directory really holds, counted by hopping from one fixed header to
    the next (no object built), stopping at `limit` + 1; None without an end record. `ZipFile` parses the
    whole central directory whatever the declared count says: a 60 MiB one holding 1.2 M entries took
    7.6 s before a cap on the count could apply."""
    endrec = zipfile._EndRecData(io.BytesIO(data))  # type: ignore[attr-defined]  # stable since Python 2
    if endrec is None:
        return None
    declared = int(endrec[zipfile._ECD_ENTRIES_TOTAL])  # type: ignore[attr-defined]
    if declared > limit:
        return declared
    size = int(endrec[zipfile._ECD_SIZE])  # type: ignore[attr-defined]
    start = int(endrec[zipfile._ECD_LOCATION]) - size  # type: ignore[attr-defined]
    if endrec[zipfile._ECD_SIGNATURE] == zipfile.stringEndArchive64:  # type: ignore[attr-defined]
        start -= zipfile.sizeEndCentDir64 + zipfile.sizeEndCentDir64Locator  # type: ignore[attr-defined]
    position, count, end = max(start, 0), 0, min(max(start, 0) + size, len(data))
    while position + 46 <= end and data[position : position + 4] == b"PK\x01\x02" and count <= limit:
        name, extra, comment = struct.unpack_from("<HHH", data, position + 28)
        position += 46 + name + extra + comment
        count += 1
    return count


def _zip(data: bytes, limits: ArchiveLimits, dirs: set[str]) -> list[FileEntry]:
    budget = _Budget(limits, len(data))
    entries: list[FileEntry] = []
    try:
        held = _zip_entries_beyond(data, limits.max_entries)
        if held is not None and held > limits.max_entries:
            raise _refuse("(central directory)", f"more than {limits.max_entries} entries")
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                budget.entry(info.filename)
                if not info.flag_bits & 0x800 and not info.filename.isascii():
                    raise _refuse(info.filename, "name not flagged UTF-8 and not ASCII")
                if info.is_dir():
                    directory = _dir_name(info.filename, limits)
                    if directory is not None:
                        dirs.add(directory)
                    continue
                name = _name(info.filename, limits)
                kind = stat.S_IFMT(info.external_attr >> 16)  # 0 when the writer set no Unix type
                if kind and kind != stat.S_IFREG:
                    raise _refuse(info.filename, "not a regular file (symlink or special file)")
                if info.flag_bits & 0x1:
                    raise _refuse(info.filename, "encrypted member")
                if info.compress_type not in _ZIP_METHODS:
                    raise _refuse(info.filename, f"unsupported compression method {info.compress_type}")
                with archive.open(info) as stream:
                    size, digest = budget.hash(name, stream)
                entries.append(FileEntry(name, size, digest))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError) as exc:
        raise ArchiveRefused(
            f"archive: not a readable zip ({type(exc).__name__}: {exc})"[:300],
            detail={"reason": "corrupt or truncated"},
        ) from None
    return entries
