"""Hash file contents with plain BLAKE3 (the digest `b3sum` prints), fast and with bounded memory.

Three paths, chosen by size, because one does not fit all (measured in benchmarks/hash_bench.py):
- small files are read in one call and hashed on one thread: per-file overhead dominates;
- large files are memory-mapped in windows of `MAP_WINDOW` bytes and hashed with every core, so
  resident memory stays bounded whatever the file size and nothing is copied;
- many files are split into a few contiguous chunks, one worker process per chunk, each looping
  over its chunk (one task per file costs 3-4x more than the loop it replaces).

Progress (`progress(files_done, files_total, bytes_done, bytes_total)`) is reported from the calling
thread only: workers add to shared counters, one slot each, and the caller reads them while it waits;
no thread is started, so forking the workers stays safe.

A file that changes while it is hashed is detected: its size, mtime and ctime are compared before
and after, and the bytes read must equal the size; the result is `FileChanged`, never a half-old
digest. A file that is not the one the walk listed is refused the same way: its device and inode
must be the walk's (a directory above it swapped for a link to /etc after the walk made the path
open a file outside the root, although only the last component can be opened O_NOFOLLOW).
Caveat shared with b3sum: a file *truncated* while one of its windows is mapped makes the
kernel raise SIGBUS, which ends the process before anything is written.
"""

from __future__ import annotations

import mmap
import os
import stat
import threading
from collections.abc import Callable, Sequence
from typing import Any

import blake3

from anchor.errors import AnchorError, FileChanged, UnsafePath

SMALL_FILE = 1 << 20
"""Up to this size a file is read in one call and hashed on one thread."""
MAP_WINDOW = 128 << 20
"""Largest mapped window of a large file: the bound on resident file pages while hashing."""
PARALLEL_MIN_FILES = 512
"""From this many files on, worker processes hash chunks of them."""

Progress = Callable[[int, int, int, int], None]
"""progress(files_done, files_total, bytes_done, bytes_total), called from the caller's thread."""

_counters: Any = None
"""(files, bytes) per worker slot, in memory shared with forked workers; None when nobody watches."""


def _add(slot: int, files: int, nbytes: int) -> None:
    if _counters is not None:  # one writer per slot: no lock needed
        _counters[2 * slot] += files
        _counters[2 * slot + 1] += nbytes


def _fingerprint(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


def hash_file(
    path: str, shown: str, threads: int | None = None, on_window: Callable[[int], None] | None = None,
    expect: tuple[int, int] | None = None,
) -> tuple[int, str]:  # fmt: skip
    """(size, BLAKE3 hex) of one regular file, refusing links and detecting concurrent changes;
    `expect`: the (device, inode) the walk saw at this path, which the opened file must have."""
    try:  # O_NONBLOCK: a FIFO swapped in after the walk opens at once (and is refused below), never hangs
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise UnsafePath(f"{shown}: cannot be read ({exc.strerror})", detail={"path": shown}) from None
    try:
        before = os.fstat(fd)
        if not stat.S_ISREG(before.st_mode):
            raise UnsafePath(f"{shown}: not a regular file", detail={"path": shown})
        if expect is not None and (before.st_dev, before.st_ino) != expect:
            raise FileChanged(
                f"{shown}: not the file the walk listed (it, or a directory above it, was replaced since);"
                " nothing was hashed from where it leads now",
                detail={"path": shown},
            )
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
            total, digest = _hash_mapped(fd, size, threads, on_window)
        after = os.fstat(fd)
    except OSError as exc:
        raise UnsafePath(f"{shown}: read failed ({exc.strerror})", detail={"path": shown}) from None
    finally:
        os.close(fd)
    if total != size or _fingerprint(after) != _fingerprint(before):
        raise FileChanged(f"{shown}: changed while it was being hashed", detail={"path": shown})
    return total, digest


def _hash_mapped(fd: int, size: int, threads: int | None, on_window: Callable[[int], None] | None) -> tuple[int, str]:
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
        if on_window is not None:
            on_window(length)
    return offset, hasher.hexdigest()


def _hash_chunk(chunk: Sequence[tuple[int, str, str, tuple[int, int] | None]], slot: int = 0) -> list[Any]:
    """Worker body: hash a contiguous chunk; an error comes back as data (exceptions pickle poorly)."""
    out: list[Any] = []
    for _, shown, path, expect in chunk:
        try:
            out.append(hash_file(path, shown, threads=1, expect=expect))
        except AnchorError as exc:
            return [("error", type(exc).__name__, exc.message, exc.detail)]
        _add(slot, 1, out[-1][0])
    return out


def hash_files(
    files: Sequence[tuple[str, str, int, tuple[int, int] | None]], progress: Progress | None = None
) -> list[tuple[int, str]]:
    """(size, BLAKE3 hex) for each (shown path, filesystem path, size hint, (device, inode) the walk saw
    or None), in order.

    Large files are hashed here with every core; the rest in contiguous chunks by a few workers.
    Raises the first `UnsafePath` or `FileChanged` met. `progress`, if given, is called now and then.
    """
    global _counters
    results: list[tuple[int, str] | None] = [None] * len(files)
    small = [(i, shown, path, expect) for i, (shown, path, hint, expect) in enumerate(files) if hint <= SMALL_FILE]
    workers = min(os.cpu_count() or 1, 4)
    report: Callable[[], None] = lambda: None  # noqa: E731
    if progress is not None:
        import multiprocessing

        _counters = multiprocessing.RawArray("q", 2 * (workers + 1))
        total_bytes = sum(hint for _, _, hint, _ in files)

        def report() -> None:
            done = list(_counters)
            progress(sum(done[0::2]), len(files), sum(done[1::2]), total_bytes)

    try:

        def window_done(nbytes: int) -> None:
            _add(0, 0, nbytes)
            report()

        for i, (shown, path, hint, expect) in enumerate(files):
            if hint > SMALL_FILE:
                results[i] = hash_file(path, shown, on_window=window_done, expect=expect)
                _add(0, 1, 0)
                report()
        if len(small) < PARALLEL_MIN_FILES or workers < 2:
            parts = [_hash_chunk(small)]
        else:
            step = -(-len(small) // workers)
            chunks = [small[i : i + step] for i in range(0, len(small), step)]
            # fork is cheap and keeps the parent's imports; it is only safe while we are the only thread.
            if threading.active_count() == 1:
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor  # here: importing it costs 10 ms of every read

                with ProcessPoolExecutor(len(chunks), mp_context=multiprocessing.get_context("fork")) as pool:
                    parts = _gather(pool, chunks, report)
            else:
                from concurrent.futures import ThreadPoolExecutor

                with ThreadPoolExecutor(len(chunks)) as pool_threads:
                    parts = _gather(pool_threads, chunks, report)
        report()
    finally:
        _counters = None
    order = iter(i for i, *_ in small)
    for part in parts:
        if part and part[0][0] == "error":
            _, name, message, detail = part[0]
            raise (FileChanged if name == "FileChanged" else UnsafePath)(message, detail=detail)
        for item in part:
            results[next(order)] = item
    return [r for r in results if r is not None]


def _gather(pool: Any, chunks: list[Any], report: Callable[[], None]) -> list[Any]:
    """Each chunk's results, in order, reporting progress every 0.1 s while the workers run."""
    from concurrent.futures import FIRST_EXCEPTION, wait  # here: a single file's hash never needs them

    futures = [pool.submit(_hash_chunk, chunk, slot) for slot, chunk in enumerate(chunks, start=1)]
    while wait(futures, timeout=0.1, return_when=FIRST_EXCEPTION).not_done:
        report()
    return [future.result() for future in futures]
