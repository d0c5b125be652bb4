"""A corpus of hostile bundle archives, built in memory: every one must be refused with a 4xx."""

from __future__ import annotations

import bz2
import gzip
import io
import tarfile
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

SMALL_LIMITS = {
    "max_files": 50,
    "max_file_bytes": 1 << 20,
    "max_total_bytes": 4 << 20,
    "max_ratio": 50.0,
    "max_path_bytes": 200,
    "max_entries": 100,
}


def _tar(members: list[tuple[tarfile.TarInfo, bytes | None]], fmt: int = tarfile.PAX_FORMAT, gz: bool = False) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz" if gz else "w", format=fmt, encoding="utf-8") as archive:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            archive.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def _reg(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def _special(name: str, kind: bytes, link: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info, None


def _zip(members: list[tuple[str | zipfile.ZipInfo, bytes]], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        warnings.simplefilter("ignore")  # duplicate names are the point of one case
        for name, data in members:
            archive.writestr(name, data)
    return buffer.getvalue()


def _zip_symlink() -> bytes:
    info = zipfile.ZipInfo("link")
    info.external_attr = 0o120777 << 16
    return _zip([(info, b"/etc/passwd")])


def _zip_flagged(name_bytes: bytes, flag_utf8: bool, data: bytes = b"x") -> bytes:
    info = zipfile.ZipInfo("placeholder")
    raw = _zip([(info, data)])
    raw = raw.replace(b"placeholder", name_bytes.ljust(11, b"_")[:11])
    if not flag_utf8:
        return raw
    return raw


def _zip_encrypted() -> bytes:
    raw = bytearray(_zip([("secret.txt", b"data")], compression=zipfile.ZIP_STORED))
    raw[6] |= 0x1  # local header flag
    central = raw.rfind(b"PK\x01\x02")
    raw[central + 8] |= 0x1  # central directory flag
    return bytes(raw)


def _pax_traversal() -> bytes:
    info = tarfile.TarInfo("harmless.txt")
    info.pax_headers = {"path": "../../.ssh/authorized_keys"}
    return _tar([(info, b"ssh-ed25519 AAAA")])


def _zip_unknown_method() -> bytes:
    raw = bytearray(_zip([("weird.bin", b"data")], compression=zipfile.ZIP_STORED))
    raw[8:10] = (99).to_bytes(2, "little")  # local header: compression method 99 (AES, unsupported)
    central = raw.rfind(b"PK\x01\x02")
    raw[central + 10 : central + 12] = (99).to_bytes(2, "little")
    return bytes(raw)


def _gnu_tar_latin1() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT, encoding="latin-1") as archive:
        info = tarfile.TarInfo("caf\xe9.txt")
        info.size = 1
        archive.addfile(info, io.BytesIO(b"x"))
    return buffer.getvalue()


def plain_tar(files: dict[str, bytes]) -> bytes:
    """An ordinary tar of regular files (the well-formed case)."""
    return _tar([_reg(name, data) for name, data in files.items()], fmt=tarfile.GNU_FORMAT)


HEADER_BOMB_FILE = Path(__file__).with_name("hostile") / "longname-header-bomb-1GiB.tar.bz2"
"""`make_header_bomb()`'s output, committed (861 bytes): making it compresses 1 GiB, about 13 s."""


def header_bomb(declared: int = 1 << 30) -> bytes:
    """Under 4 KiB of tar.bz2 whose GNU long-name header declares `declared` bytes (tarfile would read
    it into memory whole): took the server to 2.2 GB. The 1 GiB one is read from HEADER_BOMB_FILE
    (tests/hostile/test_hostile_decoders.py checks it declares what its name says)."""
    if declared == 1 << 30:
        return HEADER_BOMB_FILE.read_bytes()
    return make_header_bomb(declared)


def make_header_bomb(declared: int) -> bytes:
    header = tarfile.TarInfo("././@LongLink")
    header.type, header.size = tarfile.GNUTYPE_LONGNAME, declared
    compressor = bz2.BZ2Compressor()
    data = compressor.compress(header.tobuf(format=tarfile.GNU_FORMAT))
    chunk = b"a" * (1 << 20)
    for _ in range(declared >> 20):
        data += compressor.compress(chunk)
    return data + compressor.flush()


def directory_flood(n: int) -> bytes:
    """A tar.bz2 of `n` directory entries and nothing else: a million of them is 13 KB."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:bz2") as archive:
        for i in range(n):
            info = tarfile.TarInfo(f"d{i}")
            info.type = tarfile.DIRTYPE
            archive.addfile(info)
    return buffer.getvalue()


def header_chain(n: int) -> bytes:
    """A tar.gz of `n` GNU long-name headers in a row before one file: tarfile follows each by
    recursing, so 2,000+ of them were a RecursionError (a 500 on POST /v1/bundles)."""
    out = io.BytesIO()
    name = b"chained-name\0"
    for _ in range(n):
        header = tarfile.TarInfo("././@LongLink")
        header.type, header.size = tarfile.GNUTYPE_LONGNAME, len(name)
        out.write(header.tobuf(format=tarfile.GNU_FORMAT)[:512] + name.ljust(512, b"\0"))
    member = tarfile.TarInfo("f")
    member.size = 1
    out.write(member.tobuf(format=tarfile.GNU_FORMAT) + b"x".ljust(512, b"\0") + b"\0" * 1024)
    return gzip.compress(out.getvalue())


HOSTILE: dict[str, Callable[[], bytes]] = {
    "tar: parent traversal": lambda: _tar([_reg("../escape.txt")]),
    "tar: nested traversal": lambda: _tar([_reg("a/../../escape.txt")]),
    "tar: absolute path": lambda: _tar([_reg("/etc/cron.d/evil")]),
    "tar: backslash traversal": lambda: _tar([_reg("..\\..\\evil.txt")]),
    "tar: symlink": lambda: _tar([_special("link", tarfile.SYMTYPE, "/etc/passwd")]),
    "tar: hard link": lambda: _tar([_reg("a"), _special("b", tarfile.LNKTYPE, "a")]),
    "tar: character device": lambda: _tar([_special("null", tarfile.CHRTYPE)]),
    "tar: block device": lambda: _tar([_special("sda", tarfile.BLKTYPE)]),
    "tar: FIFO": lambda: _tar([_special("pipe", tarfile.FIFOTYPE)]),
    "tar: duplicate names": lambda: _tar([_reg("same.txt", b"1"), _reg("same.txt", b"2")]),
    "tar: names equal after NFC": lambda: _tar([_reg("caf\u00e9.txt"), _reg("cafe\u0301.txt")]),
    "tar: non-UTF-8 name": _gnu_tar_latin1,
    "tar: oversized file": lambda: _tar([_reg("big.bin", b"\x01" * ((1 << 20) + 1))]),
    "tar: too many files": lambda: _tar([_reg(f"f{i}") for i in range(51)]),
    "tar: total too large": lambda: _tar([_reg(f"f{i}", bytes([i]) * (900 << 10)) for i in range(5)]),
    "tar.gz: decompression bomb": lambda: _tar([_reg("zeros.bin", b"\0" * (3 << 20))], gz=True),
    "tar: truncated": lambda: _tar([_reg("a.txt", b"y" * 5000)])[:1500],
    "tar.gz: truncated": lambda: _tar([_reg("a.txt", b"y" * 5000)], gz=True)[:60],
    "tar: path too long": lambda: _tar([_reg("d/" * 120 + "f")]),
    "tar: pax header overriding the path": _pax_traversal,
    "zip: parent traversal": lambda: _zip([("../escape.txt", b"x")]),
    "zip: absolute path": lambda: _zip([("/tmp/evil", b"x")]),
    "zip: windows drive path": lambda: _zip([("C:\\evil.txt", b"x")]),
    "zip: symlink": _zip_symlink,
    "zip: duplicate names": lambda: _zip([("same.txt", b"1"), ("same.txt", b"2")]),
    "zip: decompression bomb": lambda: _zip([("zeros.bin", b"\0" * (3 << 20))]),
    "zip: compression ratio above the limit": lambda: _zip([(f"z{i}.bin", b"\0" * (900 << 10)) for i in range(4)]),
    "zip: oversized file": lambda: _zip([("big.bin", b"\x02" * ((1 << 20) + 1))], compression=zipfile.ZIP_STORED),
    "zip: too many files": lambda: _zip([(f"f{i}", b"x") for i in range(51)]),
    "zip: non-UTF-8 name without the flag": lambda: _zip_flagged(b"caf\xe9.txt", flag_utf8=False),
    "zip: encrypted member": _zip_encrypted,
    "zip: unsupported compression method": _zip_unknown_method,
    "zip: truncated": lambda: _zip([("a.txt", b"z" * 5000)], compression=zipfile.ZIP_STORED)[:-30],
    "not an archive": lambda: b"these bytes are neither tar nor zip" * 20,
    "empty upload": lambda: b"",
    "gzip of garbage": lambda: gzip.compress(b"not a tar" * 100),
    "tar: a file and a directory of one name": lambda: _tar([_reg("out"), _reg("out/metrics.json")]),
    "tar: names differing only in case": lambda: _tar([_reg("Results.csv"), _reg("results.csv")]),
    "tar.bz2: long-name header bomb": header_bomb,
    "tar.gz: 3,000 chained long-name headers": lambda: header_chain(3000),
    "tar.bz2: directory flood": lambda: directory_flood(101),
}
