"""Decode an uploaded bundle archive (tar, tar.gz, zip) into a file-tree manifest, under hard bounds.

Nothing is extracted to disk and nothing declared by the archive is trusted: every member is read
through a counting stream and hashed here; sizes are what was read, not what the header says.
Refused, each with `ArchiveRefused` naming the member: anything but a regular file (links, devices,
FIFOs), absolute paths, `..`, backslashes, NUL, names that are not UTF-8 (or, in zip, not flagged
UTF-8 and not ASCII), names equal after NFC, encrypted or unsupported-method zip members, paths longer
than the limit, more
files, more bytes per file or in total, or a higher compression ratio than allowed, and truncated or
corrupt archives.
"""

from __future__ import annotations

import io
import stat
import tarfile
import unicodedata
import zipfile
from dataclasses import dataclass
from typing import IO

import blake3

from anchor.errors import BadInput
from anchor.manifest.filetree import FileEntry, FileTreeManifest, check_relative_path, sorted_unique


class ArchiveRefused(BadInput):
    code = "archive_refused"


@dataclass(frozen=True, slots=True)
class ArchiveLimits:
    max_files: int = 10_000
    max_file_bytes: int = 64 << 20
    max_total_bytes: int = 256 << 20
    max_ratio: float = 100.0
    max_path_bytes: int = 1024


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


class _Budget:
    def __init__(self, limits: ArchiveLimits, compressed: int) -> None:
        self.limits, self.compressed, self.total, self.files = limits, max(compressed, 1), 0, 0

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
            self.total += len(chunk)
            if size > self.limits.max_file_bytes:
                raise _refuse(member, f"larger than {self.limits.max_file_bytes} bytes")
            if self.total > self.limits.max_total_bytes:
                raise _refuse(member, f"archive expands beyond {self.limits.max_total_bytes} bytes")
            if self.total > self.limits.max_ratio * self.compressed and self.total > (1 << 20):
                raise _refuse(member, f"compression ratio above {self.limits.max_ratio:g} (a decompression bomb?)")
            hasher.update(chunk)
        return size, hasher.hexdigest()


def decode_archive(data: bytes, limits: ArchiveLimits | None = None) -> FileTreeManifest:
    """The file-tree manifest of an archive's regular files. Raises `ArchiveRefused` (a `BadInput`)."""
    limits = limits or ArchiveLimits()
    entries = _zip(data, limits) if zipfile.is_zipfile(io.BytesIO(data)) else _tar(data, limits)
    try:
        return FileTreeManifest(sorted_unique(entries, "archive"))
    except BadInput as exc:
        raise _refuse(str(exc.detail.get("path")), "two members have this name after NFC normalization") from None


def _tar(data: bytes, limits: ArchiveLimits) -> list[FileEntry]:
    budget = _Budget(limits, len(data))
    entries: list[FileEntry] = []
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*", encoding="utf-8", errors="strict") as archive:
            for member in archive:
                name = _name(member.name, limits)
                if member.isdir():
                    continue
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
        raise ArchiveRefused(f"archive: not a readable tar or zip ({type(exc).__name__}: {exc})"[:300],
                             detail={"reason": "corrupt or truncated"}) from None  # fmt: skip
    return entries


_ZIP_METHODS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA})
"""The methods Python's zipfile decodes; any other is refused by name before a member is opened."""


def _zip(data: bytes, limits: ArchiveLimits) -> list[FileEntry]:
    budget = _Budget(limits, len(data))
    entries: list[FileEntry] = []
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            for info in archive.infolist():
                if not info.flag_bits & 0x800 and not info.filename.isascii():
                    raise _refuse(info.filename, "name not flagged UTF-8 and not ASCII")
                name = _name(info.filename, limits)
                if info.is_dir():
                    continue
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
        raise ArchiveRefused(f"archive: not a readable zip ({type(exc).__name__}: {exc})"[:300],
                             detail={"reason": "corrupt or truncated"}) from None  # fmt: skip
    return entries
