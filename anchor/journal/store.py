"""Open the journal with the guarantees the effect protocol relies on.

WAL mode so readers never block the writer; synchronous=FULL so a committed state transition
survives power loss; foreign keys on; a bounded busy timeout mapped to `JournalBusy`; and the
schema version checked on open, so an old binary never writes a newer journal.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from operator import itemgetter
from pathlib import Path
from typing import Any

from anchor.errors import JournalBusy, JournalError, StorageError
from anchor.files import PRIVATE_FILE, private_dir
from anchor.journal.schema import SCHEMA_VERSION as SCHEMA_VERSION  # where the rest of anchor reads it
from anchor.journal.schema import SQLITE, migrations, statements

BUSY_TIMEOUT_MS = 10_000


def _backfill_files(db: sqlite3.Connection) -> None:
    import json

    for item in db.execute("SELECT id, payload FROM items").fetchall():
        index_files(db, item[0], json.loads(item[1]).get("files") or [])


def index_files(db: sqlite3.Connection, item_id: int, files: Sequence[Mapping[str, object]]) -> None:
    """Index an item's files by content hash (search and verify-by-upload). The rows go in in the
    index's order: inserted in the folder's order, each lands on a random page of the content-hash
    index, and a re-stamp of 100,000 files spent a fifth of its time there; sorted, they land on
    neighbouring pages (0.52 against 0.38 s for the first 100,000, 0.95 against 0.53 s by the fourth)."""
    rows = [(item_id, bytes.fromhex(str(f["blake3"])), f["path"]) for f in files]
    rows.sort(key=itemgetter(1))
    db.executemany("INSERT INTO files (item_id, blake3, path) VALUES (?, ?, ?)", rows)


def now() -> float:
    return time.time()


def _read_only_filesystem(directory: Path) -> bool:
    try:
        return bool(os.statvfs(directory).f_flag & os.ST_RDONLY)
    except OSError:
        return False


class Journal:
    """One connection to the journal. Use `tx()` for every state transition.

    This is the SQLite journal, the embedded default for one machine; `anchor.journal.pg.PgJournal`
    is the same interface over PostgreSQL (`open_journal` in anchor.journal.backends chooses)."""

    backend = "sqlite"
    dialect = SQLITE
    """What this engine's SQL says differently (anchor.journal.schema): a JSON field, for one."""
    IntegrityError: type[Exception] = sqlite3.IntegrityError
    """What a unique constraint raises: two submissions of one manifest racing (PostgreSQL only;
    SQLite's single writer never lets them race)."""

    def __init__(self, path: Path) -> None:
        private_dir(path.parent)
        self.path = path
        self.closed = False
        if not path.exists():  # SQLite gives the -wal and -shm files the database file's mode
            try:
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW, PRIVATE_FILE))
            except OSError as exc:
                from anchor.files import storage_error

                raise storage_error(exc, path) or exc from None
        # Any: the PostgreSQL journal's `db` is an adapter with the same execute/executemany/rows
        self.read_only = _read_only_filesystem(path.parent)
        try:
            if self.read_only:
                self.db = self._open_read_only(path)
                return
            self.db = sqlite3.connect(
                path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
            )
            self.db.row_factory = sqlite3.Row
            self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self.db.execute("PRAGMA journal_mode = WAL")
            self.db.execute("PRAGMA synchronous = FULL")
            self.db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            raise self._damaged(exc) from None

    def _open_read_only(self, path: Path) -> Any:
        """The journal on a read-only filesystem (a data dir mounted read-only for an auditor, a full
        disk remounted ro by the kernel): readable as it is, every write a `StorageError`. Only when
        no write-ahead log is left to replay: SQLite could not apply it here, and reading without it
        would show an older journal as if it were the current one."""
        import errno

        wal = path.with_name(path.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            raise self._refused(errno.EROFS, "read-only, with a write-ahead log left to replay")
        db = sqlite3.connect(f"file:{path}?immutable=1", uri=True, isolation_level=None, check_same_thread=False)
        db.row_factory = sqlite3.Row
        row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None or int(row[0]) != SCHEMA_VERSION:
            raise JournalError(
                f"{path}: journal schema version {None if row is None else row[0]} on a read-only filesystem,"
                f" this Anchor reads {SCHEMA_VERSION} (mount it writable once so it can be brought up to date)",
                detail={"journal": str(path)},
            )
        return db

    def _damaged(self, exc: sqlite3.DatabaseError) -> Exception:
        """What opening the journal failed on, as the typed error naming it and what to do: a full or
        read-only filesystem (the same classification as a transaction's), or a file that is not a
        database any more; anything else as it is."""
        import errno

        from anchor.errors import JournalDamaged

        text = str(exc)
        if isinstance(exc, sqlite3.OperationalError):
            if "unable to open" in text:  # WAL mode could not make its -shm/-wal files beside the journal
                return self._refused(errno.EROFS, text)
            return self._storage(exc) or exc
        return JournalDamaged(
            f"{self.path}: the journal is damaged ({text}): it was truncated or overwritten outside Anchor."
            " Nothing was written to it. Restore it from a backup; or move it aside to start an empty"
            " journal (what it held is then not anchored by this data dir)",
            detail={"journal": str(self.path), "sqlite": text},
        )

    def _migrate(self) -> None:
        with self.tx():
            exists = self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone()
            if not exists:  # a new journal: the tables as they are now (anchor.journal.schema)
                for statement in statements(SQLITE):
                    self.db.execute(statement)
                self.db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            row = self.db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            found = None if row is None else int(row[0])
            if found is None or found > SCHEMA_VERSION:
                raise JournalError(
                    f"{self.path}: journal schema version {found}, this Anchor speaks {SCHEMA_VERSION}",
                    detail={"journal": str(self.path)},
                )
            steps = migrations(SQLITE)
            for version in range(found + 1, SCHEMA_VERSION + 1):
                for statement in steps[version]:
                    self.db.execute(statement)
                if version == 2:
                    _backfill_files(self.db)
                self.db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))

    @contextmanager
    def tx(self, submission: bool = False) -> Iterator[Any]:
        """BEGIN IMMEDIATE ... COMMIT: one durable state transition, or none.

        `submission`: the transaction only journals submissions (PostgreSQL lets those run side by
        side, see pg.py; SQLite has one writer whatever it writes)."""
        if self.read_only:
            import errno

            raise self._refused(errno.EROFS, "read-only")
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise JournalBusy(f"{self.path}: busy for more than {BUSY_TIMEOUT_MS} ms") from None
            raise self._storage(exc) or exc from None
        try:
            yield self.db
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error):  # a full disk can refuse the rollback too: SQLite undoes it
                self.db.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError):
                raise self._storage(exc) or exc from None
            raise
        else:
            try:
                self.db.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                with contextlib.suppress(sqlite3.Error):
                    self.db.execute("ROLLBACK")
                raise self._storage(exc) or exc from None

    def _storage(self, exc: sqlite3.OperationalError) -> Exception | None:
        """SQLite's "database or disk is full" / "readonly database" as the typed storage error naming
        the journal; the transaction was rolled back, so nothing of it is half there."""
        import errno

        text = str(exc)
        code = errno.ENOSPC if "full" in text else errno.EROFS if "readonly" in text else None
        return None if code is None else self._refused(code, text)

    def _refused(self, code: int, text: str) -> StorageError:
        """The storage error naming the journal, for ENOSPC or EROFS."""
        from anchor.files import storage_error

        refused = storage_error(OSError(code, text), self.path)
        assert refused is not None  # both are storage errnos
        return refused

    def keepalive(self) -> None:
        """Nothing to renew on one machine: the flush lock is the kernel's, released with the process."""

    @contextmanager
    def exclusive(self, name: str, ttl_s: float = 30.0, wait_s: float = 600.0) -> Iterator[None]:
        """One flush at a time per data directory: an exclusive flock, which the kernel releases when
        its process dies (so a SIGKILLed flush never blocks the next). `name`, `ttl_s` and `wait_s`
        matter to the PostgreSQL journal's lease only."""
        import fcntl

        from anchor.files import storage_error

        try:
            lock = open(self.path.parent / "flush.lock", "a")  # noqa: SIM115 - closed below, on every path
        except OSError as exc:
            raise storage_error(exc, self.path.parent / "flush.lock") or exc from None
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def item_counts(self, chain_id: int) -> dict[str, int]:
        """Items of `chain_id` by state, from the counts its triggers keep (anchor.journal.schema)."""
        rows = self.db.execute("SELECT state, n FROM item_counts WHERE chain_id = ?", (chain_id,)).fetchall()
        return {str(state): int(n) for state, n in rows}

    def compact_counts(self) -> None:
        """Nothing to do: SQLite's counts are one row per (chain, state), kept by triggers."""

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        with self.tx() as db:
            db.execute(
                "INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", (key, value)
            )

    def close(self) -> None:
        self.db.close()
        self.closed = True
