"""Hash file contents with plain BLAKE3 (the digest `b3sum` prints), fast and with bounded memory.

Three paths, chosen by size, because one does not fit all (measured in benchmarks/hash_bench.py):
- small files are read in one call and hashed on one thread: per-file overhead dominates;
- large files are memory-mapped in windows of `MAP_WINDOW` bytes and hashed with every core, so
  resident memory stays bounded whatever the file size and nothing is copied;
- many files are split into a few contiguous chunks, one worker process per chunk, each looping
  over its chunk (one task per file costs 3-4x more than the loop it replaces).

A file that changes while it is hashed is detected: its size, mtime and ctime are compared before
and after, and the bytes read must equal the size; the result is `FileChanged`, never a half-old
digest. Caveat shared with b3sum: a file *truncated* while one of its windows is mapped makes the
kernel raise SIGBUS, which ends the process before anything is written.
"""

from __future__ import annotations

import mmap
import os
import stat
import threading
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

import blake3

from anchor.errors import AnchorError, FileChanged, UnsafePath

SMALL_FILE = 1 << 20
"""Up to this size a file is read in one call and hashed on one thread."""
MAP_WINDOW = 128 << 20
"""Largest mapped window of a large file: the bound on resident file pages while hashing."""
PARALLEL_MIN_FILES = 512
"""From this many files on, worker processes hash chunks of them."""


def _fingerprint(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


def hash_file(path: str, shown: str, threads: int | None = None) -> tuple[int, str]:
    """(size, BLAKE3 hex) of one regular file, refusing links and detecting concurrent changes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise UnsafePath(f"{shown}: cannot be read ({exc.strerror})", detail={"path": shown}) from None
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise UnsafePath(f"{shown}: not a regular file", detail={"path": shown})
        size = before.st_size
        if size <= SMALL_FILE:
            data = os.read(fd, size + 1)  # one byte more than expected reveals a file that grew
            while len(data) <= size:
                more = os.read(fd, size + 1 - len(data))
                if not more:
                    break
                data += more
            total, digest = len(data), blake3.blake3(data).hexdigest()
        else:
            total, digest = _hash_mapped(fd, size, threads)
        after = os.fstat(fd)
    except OSError as exc:
        raise UnsafePath(f"{shown}: read failed ({exc.strerror})", detail={"path": shown}) from None
    finally:
        os.close(fd)
    if total != size or _fingerprint(after) != _fingerprint(before):
        raise FileChanged(f"{shown}: changed while it was being hashed", detail={"path": shown})
    return total, digest


def _hash_mapped(fd: int, size: int, threads: int | None) -> tuple[int, str]:
    hasher = blake3.blake3(max_threads=threads or blake3.blake3.AUTO)
    offset = 0
    while offset < size:
        if os.fstat(fd).st_size < size:  # shrunk: stop before touching pages past the new end
            return offset, ""
        length = min(MAP_WINDOW, size - offset)
        with mmap.mmap(fd, length, offset=offset, access=mmap.ACCESS_READ) as window:
            window.madvise(mmap.MADV_SEQUENTIAL)
            hasher.update(window)
        offset += length
    return offset, hasher.hexdigest()


def _hash_chunk(chunk: Sequence[tuple[int, str, str]]) -> list[Any]:
    """Worker body: hash a contiguous chunk; an error comes back as data (exceptions pickle poorly)."""
    out: list[Any] = []
    for _, shown, path in chunk:
        try:
            out.append(hash_file(path, shown, threads=1))
        except AnchorError as exc:
            return [("error", type(exc).__name__, exc.message, exc.detail)]
    return out


def hash_files(files: Sequence[tuple[str, str, int]]) -> list[tuple[int, str]]:
    """(size, BLAKE3 hex) for each (shown path, filesystem path, size hint), in order.

    Large files are hashed here with every core; the rest in contiguous chunks by a few workers.
    Raises the first `UnsafePath` or `FileChanged` met.
    """
    results: list[tuple[int, str] | None] = [None] * len(files)
    small = [(i, shown, path) for i, (shown, path, hint) in enumerate(files) if hint <= SMALL_FILE]
    for i, (shown, path, hint) in enumerate(files):
        if hint > SMALL_FILE:
            results[i] = hash_file(path, shown)
    workers = min(os.cpu_count() or 1, 4)
    if len(small) < PARALLEL_MIN_FILES or workers < 2:
        parts = [_hash_chunk(small)]
    else:
        step = -(-len(small) // workers)
        chunks = [small[i : i + step] for i in range(0, len(small), step)]
        # fork is cheap and keeps the parent's imports; it is only safe while we are the only thread.
        if threading.active_count() == 1:
            import multiprocessing

            with ProcessPoolExecutor(len(chunks), mp_context=multiprocessing.get_context("fork")) as pool:
                parts = list(pool.map(_hash_chunk, chunks))
        else:
            with ThreadPoolExecutor(len(chunks)) as pool_threads:
                parts = list(pool_threads.map(_hash_chunk, chunks))
    order = iter(i for i, _, _ in small)
    for part in parts:
        if part and part[0][0] == "error":
            _, name, message, detail = part[0]
            raise (FileChanged if name == "FileChanged" else UnsafePath)(message, detail=detail)
        for item in part:
            results[next(order)] = item
    return [r for r in results if r is not None]
