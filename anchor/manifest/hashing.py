"""Hash file contents with plain BLAKE3 (the digest `b3sum` prints), fast and with bounded memory.

Three paths, chosen by size, because one does not fit all (measured in benchmarks/hash_bench.py):
- small files are read in one call and hashed on one thread: per-file overhead dominates;
- large files are memory-mapped in windows of `MAP_WINDOW` bytes and hashed with every core, so
  resident memory stays bounded whatever the file size and nothing is copied;
- many files are split into a few contiguous chunks, one worker process per chunk, each looping
  over its chunk (one task per file costs 3-4x more than the loop it replaces).
`Streamed` does the last while the walk is still listing: chunks go to the workers as the walk fills
them, so listing and hashing overlap (at 100,000 files of 1 KiB the serial walk was 0.8 s
of 3 s, the hashing 1.1 s after it), and each worker also computes its files' Merkle leaves. Once the
workers run, the walk hands them the directories it has left (`Streamed.hand_off`): each lists its
subtrees with the walk's own code and checks (anchor.manifest.walk.walk_frames) and hashes what it
finds, so the listing is no longer one process's work either.

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
from array import array
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import blake3

from anchor.errors import AnchorError, FileChanged, UnsafePath

if TYPE_CHECKING:
    from anchor.manifest.statcache import StatCache

SMALL_FILE = 1 << 20
"""Up to this size a file is read in one call and hashed on one thread."""
MAP_WINDOW = 128 << 20
"""Largest mapped window of a large file: the bound on resident file pages while hashing."""
PARALLEL_MIN_FILES = 512
"""From this many files on, worker processes hash chunks of them."""

T = TypeVar("T")
Progress = Callable[[int, int, int, int], None]
"""progress(files_done, files_total, bytes_done, bytes_total), called from the caller's thread."""

_counters: Any = None
"""(files, bytes) per worker slot, in memory shared with forked workers; None when nobody watches."""

_cache: StatCache | None = None
"""The stat cache of the root being stamped (`using_cache`), inherited by forked workers; None for
every other hashing, a verify's above all."""


@contextmanager
def using_cache(cache: StatCache | None) -> Iterator[None]:
    """Within: `hash_file` takes a file's digest from `cache` when its fstat matches the cached one
    (anchor.manifest.statcache) and notes every file it meets in it."""
    global _cache
    _cache = cache
    try:
        yield
    finally:
        _cache = None


def _add(slot: int, files: int, nbytes: int) -> None:
    if _counters is not None:  # one writer per slot: no lock needed
        _counters[2 * slot] += files
        _counters[2 * slot + 1] += nbytes


def _fingerprint(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino


_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
"""How a file to hash is opened. O_NONBLOCK: a FIFO swapped in after the walk opens at once (and is
refused), never hangs."""


def hash_file(
    path: str,
    shown: str,
    threads: int | None = None,
    on_window: Callable[[int], None] | None = None,
    expect: tuple[int, int] | None = None,
    dir_fd: int | None = None,
) -> tuple[int, str]:
    """(size, BLAKE3 hex) of one regular file, refusing links and detecting concurrent changes;
    `expect`: the (device, inode) the walk saw at this path, which the opened file must have;
    `dir_fd`: the walk's verified descriptor of the directory `path` (then a bare name) is in."""
    if _cache is not None and (cached := _unchanged(path, shown, expect, dir_fd)) is not None:
        return cached
    try:
        fd = os.open(path, _OPEN, dir_fd=dir_fd)
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
            while len(data) < size:  # a short read; a file that grows later shows in the fstat after
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
    if _cache is not None:
        _cache.record(shown, before, digest)
    return total, digest


def _unchanged(path: str, shown: str, expect: tuple[int, int] | None, dir_fd: int | None) -> tuple[int, str] | None:
    """(size, digest) from the stat cache of a regular file (not a link: lstat) that is the one the walk
    listed and that the cache holds with the same size, mtime, ctime, inode and device, hashed before
    the cache's hashing moment (anchor.manifest.statcache); None otherwise: then it is read. One lstat,
    no open: what makes a re-stamp of many small files cheaper than reading them."""
    assert _cache is not None
    try:
        now = os.stat(path, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISREG(now.st_mode) or (expect is not None and (now.st_dev, now.st_ino) != expect):
        return None
    cached = _cache.take(shown, now)
    return None if cached is None else (now.st_size, cached)


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


Leaf = Callable[[str, int, str], bytes]
"""leaf(shown path, size, BLAKE3 hex) -> the file's Merkle leaf (anchor.manifest.filetree)."""


def _hash_chunk(
    chunk: Sequence[tuple[int, str, str, tuple[int, int] | None]], slot: int | None = 0, leaf: Leaf | None = None
) -> list[Any]:
    """Worker body: hash a contiguous chunk; an error comes back as data (exceptions pickle poorly).
    With `leaf`, each item is (size, digest, leaf); `slot` None means the worker's own (`_init_slot`)."""
    out: list[Any] = []
    mine = _slot if slot is None else slot
    for _, shown, path, expect in chunk:
        try:
            size, digest = hash_file(path, shown, threads=1, expect=expect)
        except AnchorError as exc:
            return [("error", type(exc).__name__, exc.message, exc.detail)]
        out.append((size, digest) if leaf is None else (size, digest, leaf(shown, size, digest)))
        _add(mine, 1, size)
    if _cache is not None:
        _cache.flush_part()  # a forked worker's notes, for the caller's `save`
    return out


_slot = 0
"""This worker's counter slot (set once per worker process by `_init_slot`)."""


def _init_slot(taken: Any, parent: int) -> None:
    global _slot
    _die_with_parent(parent)
    with taken.get_lock():
        taken.value += 1
        _slot = taken.value


def _die_with_parent(parent: int) -> None:
    """In a worker: be killed when the process that forked it ends, however it ends. A parent killed by
    SIGBUS (a file truncated under its mapping of it) left its workers blocked on their pipe for good:
    each held the other's end open, and the command's output too, so `$(anchor hash DIR)` never returned."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it ended before the call above: nothing would signal us now
        os._exit(1)


def _raise(item: tuple[str, str, str, Any]) -> None:
    _, name, message, detail = item
    from anchor import errors

    kind = getattr(errors, name, None)
    raise (kind if isinstance(kind, type) and issubclass(kind, AnchorError) else UnsafePath)(message, detail=detail)


def hash_files(
    files: Sequence[tuple[str, str, int, tuple[int, int] | None]], progress: Progress | None = None
) -> list[tuple[int, str]]:
    """(size, BLAKE3 hex) for each (shown path, filesystem path, size hint, (device, inode) the walk saw
    or None), in order.

    Large files are hashed here with every core; the rest in contiguous chunks by a few workers.
    Raises the first `UnsafePath` or `FileChanged` met. `progress`, if given, is called now and then.
    """
    global _counters
    results: dict[int, tuple[int, str]] = {}
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
        results.update(_hash_large(files, report))
        if len(small) < PARALLEL_MIN_FILES or workers < 2:
            parts = [_hash_chunk(small)]
        else:
            step = -(-len(small) // workers)
            chunks = [small[i : i + step] for i in range(0, len(small), step)]
            # fork is cheap and keeps the parent's imports; it is only safe while we are the only thread.
            if threading.active_count() == 1:
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor  # here: importing it costs 10 ms of every read

                fork = multiprocessing.get_context("fork")
                with ProcessPoolExecutor(
                    len(chunks), mp_context=fork, initializer=_die_with_parent, initargs=(os.getpid(),)
                ) as pool:
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
            _raise(part[0])
        for item in part:
            results[next(order)] = item
    return [results[i] for i in range(len(files))]


def _hash_large(
    files: Sequence[tuple[str, str, int, tuple[int, int] | None]], report: Callable[[], None]
) -> dict[int, tuple[int, str]]:
    """(size, BLAKE3 hex) of each file over `SMALL_FILE`, by position, hashed here on every core, with a
    report after each window: what `hash_files` and `Streamed.finish` do with the large files."""

    def window_done(nbytes: int) -> None:
        _add(0, 0, nbytes)
        report()

    hashed = {}
    for i, (shown, path, hint, expect) in enumerate(files):
        if hint > SMALL_FILE:
            hashed[i] = hash_file(path, shown, on_window=window_done, expect=expect)
            _add(0, 1, 0)
            report()
    return hashed


def _gather(pool: Any, chunks: list[Any], report: Callable[[], None]) -> list[Any]:
    """Each chunk's results, in order, reporting progress every 0.1 s while the workers run."""
    from concurrent.futures import FIRST_EXCEPTION, wait  # here: a single file's hash never needs them

    futures = [pool.submit(_hash_chunk, chunk, slot) for slot, chunk in enumerate(chunks, start=1)]
    while wait(futures, timeout=0.1, return_when=FIRST_EXCEPTION).not_done:
        report()
    return [_answer(future) for future in futures]


def _sent(pool: Any, work: Callable[..., Any], *args: Any) -> Any:
    """`pool.submit(work, *args)`; a pool a dead worker broke is `FileChanged`, as its answers are (`_answer`)."""
    from concurrent.futures import BrokenExecutor

    try:
        return pool.submit(work, *args)
    except BrokenExecutor:
        raise _worker_died() from None


def _answer(future: Any) -> Any:
    """A worker's answer; a worker that died before answering is `FileChanged`, not an internal error."""
    from concurrent.futures import BrokenExecutor

    try:
        return future.result()
    except BrokenExecutor:
        raise _worker_died() from None


def _worker_died() -> FileChanged:
    return FileChanged(
        "a process hashing the tree died before it answered: a file truncated while it was read (the"
        " kernel's SIGBUS) or a kill; nothing was bound: run again once nothing writes to the tree",
        detail={},
    )


STREAM_CHUNK = 2048
"""Files per task once the walk streams to the workers: big enough that a task's hand-off (pickling
its paths, its results) is small beside its hashing, small enough that the workers start early."""


class Streamed(Generic[T]):
    """Hash the files of a walk while it is still listing them (`add` each batch it lists, then
    `finish`). Results are what `hash_files` gives for the same listing, in the same order, with the
    same first error, as (`entry(shown path, size, BLAKE3 hex)`, Merkle leaf): the leaf is made by `leaf`
    where the file was hashed, the entry here, for each chunk as it comes back, while the workers go on.

    The worker processes are forked when the walk has listed `PARALLEL_MIN_FILES` small files, and only
    while this is the only thread (fork is unsafe otherwise); before that, and without workers, nothing
    is hashed until `finish`, which then hands the whole listing to `hash_files`. Files over
    `SMALL_FILE` that this walk listed are hashed in `finish` on every core, while the workers finish
    their chunks; those in handed-off subtrees, by the worker that found them, on one thread."""

    def __init__(
        self,
        entry: Callable[[str, int, str], T],
        leaf: Leaf,
        progress: Progress | None = None,
        patterns: tuple[str, ...] | None = None,
        symlinks: str = "refuse",
    ) -> None:
        """`patterns` and `symlinks`: the walk's rules and link policy, for the subtrees it hands off."""
        self.entry, self.leaf, self.progress = entry, leaf, progress
        self.patterns, self.symlinks = patterns, symlinks
        self.total_bytes = 0
        self.files_walked = 0
        self.files: list[tuple[str, str, int, tuple[int, int] | None]] = []
        self.pending: list[tuple[int, str, str, tuple[int, int] | None]] = []
        self.tasks: list[tuple[list[int], Any]] = []
        self.walks: list[Any] = []
        """Subtrees handed to the workers to list and hash (`hand_off`), in order."""
        self.excluded: list[str] = []
        self.links: list[tuple[str, str]] = []
        """What the rules left out and the links met in those subtrees, for the caller to add to its own."""
        self.workers = min(os.cpu_count() or 1, 4)
        self.pool: Any = None

    def __enter__(self) -> Streamed[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        global _counters
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
            _counters = None

    def add(self, batch: Sequence[tuple[str, str, int, tuple[int, int] | None]]) -> None:
        """Files the walk just listed: (shown path, filesystem path, size seen, (device, inode))."""
        for shown, path, hint, expect in batch:
            self.total_bytes += hint
            if hint <= SMALL_FILE:
                self.pending.append((len(self.files), shown, path, expect))
            self.files.append((shown, path, hint, expect))
        if self.pool is None and len(self.pending) >= PARALLEL_MIN_FILES and self.workers >= 2:
            self._start()
        if self.pool is not None:
            while len(self.pending) >= STREAM_CHUNK:
                self._submit(self.pending[:STREAM_CHUNK])
                del self.pending[:STREAM_CHUNK]
            self._report()

    def hand_off(self, frames: list[Any], real_root: str) -> bool:
        """`walk`'s offer of the directories it has still to list: taken once the workers run and at
        least two are left, split into a few tasks that each list their subtrees (`walk_frames`, the
        same descriptor checks) and hash what they find, so listing stops being one process's work
        (the walk was a third of `anchor hash`'s time at 100,000 files)."""
        if self.pool is None or len(frames) < 2:
            return False
        parts = min(len(frames), 8 * self.workers)
        for k in range(parts):
            task = (frames[k::parts], real_root, self.patterns, self.symlinks, self.leaf)
            self.walks.append(_sent(self.pool, _walk_and_hash, *task))
        return True

    def _start(self) -> None:
        global _counters
        if threading.active_count() != 1:
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        fork = multiprocessing.get_context("fork")
        if self.progress is not None:
            _counters = multiprocessing.RawArray("q", 2 * (self.workers + 1))
        # the workers fork here, before the pool's own thread starts, while we are the only thread
        self.pool = ProcessPoolExecutor(
            self.workers, mp_context=fork, initializer=_init_slot, initargs=(fork.Value("i", 0), os.getpid())
        )

    def _submit(self, chunk: list[tuple[int, str, str, tuple[int, int] | None]]) -> None:
        ids = array("Q")
        for *_, expect in chunk:
            ids.extend(expect or (0, 0))
        packed = (
            "\0".join(shown for _, shown, _, _ in chunk),
            "\0".join(path for _, _, path, _ in chunk),
            ids,
            [expect is not None for *_, expect in chunk],
        )
        self.tasks.append(([i for i, *_ in chunk], _sent(self.pool, _hash_packed, packed, self.leaf)))

    def _report(self) -> None:
        if self.progress is not None and _counters is not None:
            done = list(_counters)
            files, nbytes = sum(done[0::2]), sum(done[1::2])
            # what the workers' own listings found is known only as it is hashed: the totals grow with it
            listed = len(self.files) + self.files_walked
            self.progress(files, max(files, listed), nbytes, max(nbytes, self.total_bytes))

    def finish(self) -> list[tuple[T, bytes]]:
        """(entry, leaf) of every file added, in order; raises the first error met."""
        entry, leaf = self.entry, self.leaf
        if self.pool is None:
            hashed = hash_files(self.files, self.progress)
            return [
                (entry(f[0], size, digest), leaf(f[0], size, digest))
                for f, (size, digest) in zip(self.files, hashed, strict=True)
            ]
        from concurrent.futures import FIRST_COMPLETED, wait

        if self.pending:
            self._submit(self.pending)
            self.pending = []
        results: list[Any] = [None] * len(self.files)
        for i, (size, digest) in _hash_large(self.files, self._report).items():
            shown = self.files[i][0]
            results[i] = (entry(shown, size, digest), leaf(shown, size, digest))
        # each answer is unpacked as it comes, while the workers go on with the rest
        remaining: dict[Any, tuple[str, int, list[int]]] = {
            future: ("chunk", n, indices) for n, (indices, future) in enumerate(self.tasks)
        }
        remaining.update({future: ("walk", n, []) for n, future in enumerate(self.walks)})
        refused: dict[tuple[int, int], Any] = {}  # (precedence, order) -> the refusal
        walked: dict[int, tuple[list[tuple[T, bytes]], list[str], list[tuple[str, str]]]] = {}
        while remaining:
            done = wait(list(remaining), timeout=0.1, return_when=FIRST_COMPLETED).done
            self._report()
            for future in done:
                kind, n, indices = remaining.pop(future)
                part = _answer(future)
                if isinstance(part, list):  # a walk's refusal comes first, as it did before any hashing
                    refused[(0 if part[0][0] == "walk" else 1, n if kind == "chunk" else len(self.tasks) + n)] = part[0]
                elif kind == "chunk":
                    sizes, digests, leaves = part
                    for k, i in enumerate(indices):
                        made = entry(self.files[i][0], sizes[k], digests[64 * k : 64 * k + 64])
                        results[i] = (made, leaves[32 * k : 32 * k + 32])
                else:
                    rels, sizes, digests, leaves, excluded, links = part
                    made_all = [
                        (entry(rel, sizes[k], digests[64 * k : 64 * k + 64]), leaves[32 * k : 32 * k + 32])
                        for k, rel in enumerate(rels.split("\0") if rels else ())
                    ]
                    walked[n] = (made_all, excluded, links)
                    self.files_walked += len(made_all)
                    self.total_bytes += sum(sizes)
        self._report()
        if refused:
            _raise(refused[min(refused)])
        for n in sorted(walked):  # in the order handed off, whatever order the workers finished in
            made_all, excluded, links = walked[n]
            results += made_all
            self.excluded += excluded
            self.links += links
        return results


def _hash_packed(packed: tuple[str, str, array[int], list[bool]], leaf: Leaf) -> Any:
    """Worker body of `Streamed`: `_hash_chunk` over a chunk sent as two NUL-joined strings (no path
    holds a NUL) and an array of (device, inode), answered as (sizes, hex digests joined, leaves joined):
    one object each way instead of a tuple per file, a fifth of the hand-off's cost. An error
    comes back as `_hash_chunk`'s list."""
    shown, paths, ids, known = packed
    chunk = [
        (0, name, path, (ids[2 * k], ids[2 * k + 1]) if known[k] else None)
        for k, (name, path) in enumerate(zip(shown.split("\0"), paths.split("\0"), strict=True))
    ]
    return _packed(_hash_chunk(chunk, None, leaf))


def _packed(out: list[Any]) -> Any:
    """`_hash_chunk`'s (size, digest, leaf) items as (sizes, hex digests joined, leaves joined); an error as is."""
    if out and out[0][0] == "error":
        return out
    return [size for size, _, _ in out], "".join(digest for _, digest, _ in out), b"".join(lf for _, _, lf in out)


_rules_of: dict[tuple[str, ...], Any] = {}


def _walk_and_hash(
    frames: list[Any], real_root: str, patterns: tuple[str, ...] | None, symlinks: str, leaf: Leaf
) -> Any:
    """Worker body of `Streamed.hand_off`: list the subtrees of `frames` as `walk` would, then hash
    and leaf every file found. Answered packed, as `_hash_packed` answers, with what was left out and
    the links met; a refusal comes back as data, ("walk", ...) from the listing, ("error", ...) from
    the hashing."""
    from anchor.manifest.exclude import Rules
    from anchor.manifest.walk import walk_frames

    rules = None
    if patterns is not None:
        rules = _rules_of.setdefault(patterns, Rules(patterns))
    found: list[tuple[str, str, int, tuple[int, int]]] = []
    excluded: list[str] = []
    links: list[tuple[str, str]] = []
    rels: list[str] = []
    sizes: list[int] = []
    digests: list[str] = []
    leaves: list[bytes] = []
    failed: list[Any] = []

    def each_file(dir_fd: int, name: str, rel: str) -> None:
        """Hash a file where the walk meets it (walk_frames' `each_file`); after a failure only list, so
        that a refusal of the walk's, met later, still comes first."""
        if failed:
            return
        try:  # a large file is mapped in windows on one thread here: it is rare among many files
            size, digest = hash_file(name, rel, threads=1, dir_fd=dir_fd)
        except AnchorError as exc:
            failed.append(("error", type(exc).__name__, exc.message, exc.detail))
            return
        rels.append(rel)
        sizes.append(size)
        digests.append(digest)
        leaves.append(leaf(rel, size, digest))
        _add(_slot, 1, size)

    try:
        walk_frames(list(frames), real_root, rules, excluded, symlinks, links, found, each_file=each_file)
    except AnchorError as exc:
        return [("walk", type(exc).__name__, exc.message, exc.detail)]
    if failed:
        return failed
    if found:  # files the directory's d_type did not call regular: followed links (follow-inside), by path
        hashed = _hash_chunk([(0, rel, path, ident) for rel, path, _, ident in found], None, leaf)
        if hashed and hashed[0][0] == "error":
            return hashed
        rels += [rel for rel, *_ in found]
        sizes += [size for size, _, _ in hashed]
        digests += [digest for _, digest, _ in hashed]
        leaves += [lf for _, _, lf in hashed]
    if _cache is not None:
        _cache.flush_part()
    return ("\0".join(rels), sizes, "".join(digests), b"".join(leaves), excluded, links)
