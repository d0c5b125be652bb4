"""A content-addressed, read-only cache of data snapshots, keyed by SHA-256.

Why content-addressed: a mission names its data by digest, so the cache can never hand a mission
other bytes than the ones it was written against. The rules, each shown by a test:
- an entry is used only after it is re-hashed to its key; a corrupt or truncated one is moved to
  `quarantine/` (kept for inspection, never used) and fetched again;
- a hit transfers nothing; a fetch verifies the bytes while they arrive and stores nothing that does
  not hash to the key;
- one fetch per key at a time (an exclusive lock per key): concurrent fetches of one key download once,
  the others find the entry when the lock is theirs;
- entries are read-only files (0444) in a private directory (0700);
- with a size cap, the least recently used entries are evicted first, never one that a running
  mission holds (`held`: a file naming the holder's PID, checked alive).

Sources: a local path, or an http(s) URL. Nothing else (no file://, no ftp://).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anchor.errors import BadInput, NotAnchored, Tampered, did_you_mean_path
from anchor.files import private_dir
from anchor.record import Value
from anchor.settings.session import start_ticks

if TYPE_CHECKING:
    from anchor.settings.session import Settings

CHUNK = 1 << 20
READ_ONLY = 0o444


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Fetched(Value):
    key: str
    path: Path
    size: int
    hit: bool
    """True: the entry was already cached (and re-verified); nothing was transferred."""
    quarantined: Path | None = None
    """Where a corrupt entry found on the way was moved."""


def parse_key(text: str) -> str:
    """`sha256:<hex>` or `<hex>` (64 lowercase hex) to the hex; `BadInput` otherwise."""
    body = text.strip().lower().removeprefix("sha256:")
    if len(body) != 64 or any(c not in "0123456789abcdef" for c in body):
        raise BadInput(f"{text!r}: not a SHA-256 snapshot key (sha256:<64 hex>)", detail={"field": "snapshot"})
    return body


class SnapshotCache:
    def __init__(self, root: Path, max_bytes: int | None = None) -> None:
        self.root, self.max_bytes = root, max_bytes
        private_dir(root)
        for sub in ("sha256", "quarantine", "locks", "holds", "tmp"):
            (root / sub).mkdir(mode=0o700, exist_ok=True)
        self._clear_tmp()

    @classmethod
    def for_settings(cls, settings: Settings, max_bytes: int | None = None) -> SnapshotCache:
        """The data dir's cache, capped at `max_bytes` (`--max-bytes`), else ANCHOR_SNAPSHOT_CACHE_BYTES."""
        return cls(settings.layout.snapshots, max_bytes or settings.env.snapshot_cache_bytes or None)

    def path_of(self, key: str) -> Path:
        return self.root / "sha256" / key

    # ------------------------------------------------------------------ in and out

    def add(self, source: Path) -> Fetched:
        """Copy a local file into the cache under its SHA-256."""
        if not source.exists():
            raise BadInput(f"{source}: no such file{did_you_mean_path(source)}", detail={"field": "path"})
        if not source.is_file():
            raise BadInput(
                f"{source}: not a file (a snapshot is one file: an archive, a table)", detail={"field": "path"}
            )
        digest = hashlib.sha256()
        tmp = self._tmp()
        try:
            with open(source, "rb") as src, open(tmp, "wb") as out:
                while chunk := src.read(CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
            key = digest.hexdigest()
            with self._locked(key):
                done = self._usable(key)
                if done is not None:
                    return Fetched(key, done, done.stat().st_size, hit=True)
                return self._install(tmp, key, hit=False)
        finally:
            tmp.unlink(missing_ok=True)

    def fetch(self, key: str, source: str | None, progress: Callable[[int], None] | None = None) -> Fetched:
        """The entry for `key`: from the cache if it verifies, else from `source` (a path or an http(s)
        URL), verified while it arrives. `NotAnchored` if it is not cached and there is no source."""
        key = parse_key(key)
        with self._locked(key):
            quarantined = None
            path = self.path_of(key)
            if path.exists():
                if self._verifies(path, key):
                    os.utime(path)  # least recently *used*: a hit counts
                    return Fetched(key, path, path.stat().st_size, hit=True)
                quarantined = self._quarantine(path, key)
            if source is None:
                raise NotAnchored(
                    f"snapshot sha256:{key} is not in the cache (hint: --from PATH or URL)",
                    detail={"snapshot": key, **({"quarantined": str(quarantined)} if quarantined else {})},
                )
            tmp = self._tmp()
            try:
                self._download(source, tmp, key, progress)
                done = self._install(tmp, key, hit=False)
            finally:
                tmp.unlink(missing_ok=True)
            return Fetched(done.key, done.path, done.size, hit=False, quarantined=quarantined)

    @contextlib.contextmanager
    def held(self, key: str, source: str | None) -> Iterator[Fetched]:
        """`fetch`, holding the entry from before the check until the block ends: verified once (a
        cache hit re-hashes 1 GiB once, not twice), and never evicted between the check and the use.
        The hold is a file naming the holder's PID and start time; eviction passes by a live one."""
        key = parse_key(key)
        marker = self.root / "holds" / f"{key}.{os.getpid()}.{start_ticks(os.getpid())}"
        marker.touch()
        try:
            yield self.fetch(key, source)
        finally:
            marker.unlink(missing_ok=True)

    def entries(self) -> list[tuple[str, int, float]]:
        """(key, size, last used) of every entry, least recently used first."""
        found = []
        for path in (self.root / "sha256").iterdir():
            info = path.stat()
            found.append((path.name, info.st_size, info.st_mtime))
        return sorted(found, key=lambda e: e[2])

    # ------------------------------------------------------------------ the parts

    def _tmp(self) -> Path:
        return self.root / "tmp" / f"{os.getpid()}-{time.monotonic_ns()}"

    @contextlib.contextmanager
    def _locked(self, key: str) -> Iterator[None]:
        with open(self.root / "locks" / f"{key}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _usable(self, key: str) -> Path | None:
        path = self.path_of(key)
        if path.exists() and self._verifies(path, key):
            os.utime(path)
            return path
        return None

    @staticmethod
    def _verifies(path: Path, key: str) -> bool:
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while chunk := handle.read(CHUNK):
                digest.update(chunk)
        return digest.hexdigest() == key

    def _quarantine(self, path: Path, key: str) -> Path:
        target = self.root / "quarantine" / f"{key}.{time.time_ns()}"
        path.rename(target)
        return target

    def _install(self, tmp: Path, key: str, hit: bool) -> Fetched:
        os.chmod(tmp, READ_ONLY)
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        path = self.path_of(key)
        os.replace(tmp, path)
        size = path.stat().st_size
        self._evict(keep=key)
        return Fetched(key, path, size, hit)

    def _download(self, source: str, tmp: Path, key: str, progress: Callable[[int], None] | None) -> None:
        digest, total = hashlib.sha256(), 0
        with self._open_source(source) as stream, open(tmp, "wb") as out:
            while chunk := stream.read(CHUNK):
                digest.update(chunk)
                out.write(chunk)
                total += len(chunk)
                if self.max_bytes is not None and total > self.max_bytes:
                    raise BadInput(
                        f"{source}: larger than the cache ({self.max_bytes} bytes)", detail={"field": "from"}
                    )
                if progress is not None:
                    progress(total)
        if digest.hexdigest() != key:
            raise Tampered(
                f"{source}: gives sha256:{digest.hexdigest()}, not the snapshot sha256:{key}; nothing was cached",
                detail={"snapshot": key, "received": digest.hexdigest(), "bytes": total},
            )

    @staticmethod
    @contextlib.contextmanager
    def _open_source(source: str) -> Iterator[Any]:
        if source.startswith(("http://", "https://")):
            import urllib.error
            import urllib.request

            try:
                with urllib.request.urlopen(source, timeout=60) as answer:  # noqa: S310 - http(s) only, checked above
                    yield answer
            except urllib.error.URLError as exc:
                raise BadInput(f"{source}: cannot be fetched ({exc.reason})", detail={"field": "from"}) from None
            return
        if "://" in source:
            raise BadInput(f"{source}: a source is a local path or an http(s) URL", detail={"field": "from"})
        try:
            with open(source, "rb") as handle:
                yield handle
        except FileNotFoundError:
            raise BadInput(f"{source}: no such file{did_you_mean_path(source)}", detail={"field": "from"}) from None

    def _clear_tmp(self) -> None:
        """Remove partial downloads left by a fetch that died (its process gone)."""
        for path in (self.root / "tmp").iterdir():
            pid = path.name.partition("-")[0]
            if (pid.isascii() and pid.isdigit()) and not _alive(int(pid)):
                path.unlink(missing_ok=True)

    def _evict(self, keep: str) -> None:
        """Least recently used first, until the cache fits; never `keep`, never a held entry."""
        if self.max_bytes is None:
            return
        entries = self.entries()
        total = sum(size for _, size, _ in entries)
        held = self._held()
        for key, size, _ in entries:
            if total <= self.max_bytes:
                break
            if key == keep or key in held:
                continue
            self.path_of(key).unlink(missing_ok=True)
            total -= size

    def _held(self) -> set[str]:
        held = set()
        for marker in (self.root / "holds").iterdir():
            key, _, holder = marker.name.partition(".")
            pid, _, ticks = holder.partition(".")
            # the holder, if it still runs (its start time too: a PID can be reused)
            if (pid.isascii() and pid.isdigit()) and _alive(int(pid)) and str(start_ticks(int(pid))) == ticks:
                held.add(key)
            else:
                marker.unlink(missing_ok=True)  # its holder is gone
        return held


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
