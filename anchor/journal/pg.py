"""The journal in PostgreSQL: service replicas on several hosts share one journal, no shared disk.

Same tables (anchor.journal.schema, written once for both), same statements, same effect protocol as
the SQLite journal (store.py); what differs is said here once:
- The protocol's statements are one text for both engines: where their SQL differs (a JSON field) a
  statement asks the journal's `dialect`. The one thing left is the drivers' placeholder: sqlite3 takes
  `?`, psycopg `%s` (DB-API's qmark and format paramstyles), so `PgConnection` hands psycopg each
  statement with its placeholders in psycopg's style.
- Every state transition takes one transaction-level advisory lock before it reads. SQLite's
  `BEGIN IMMEDIATE` gives the protocol a single writer; this gives it the same, across hosts, so every
  check-then-write of the protocol (a submission's duplicate check, a batch's pending items, the next
  nonce) stays exactly as safe as it is on one machine.
- One flush at a time per chain and registry is a lease row with a fencing token (`Lease`), not a
  lock file: a replica that stalls past its lease cannot commit a single transition afterwards,
  because every transaction of a fenced flush checks and renews its token under the same lock.
- Time for leases is the database's clock, so hosts with skewed clocks agree on who holds one.
The tables live in their own schema (`anchor_journal`), so a database shared with the research
ledger or anything else is never confused.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import psycopg

from anchor.errors import JournalBusy, JournalError, LeaseLost, StorageError
from anchor.journal.schema import POSTGRESQL, SCHEMA_VERSION, migrations, statements
from anchor.journal.store import Journal
from anchor.record import Value

PG_SCHEMA = "anchor_journal"

_WRITER_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('anchor_journal writer', 0))"
_SUBMIT_LOCK = "SELECT pg_advisory_xact_lock_shared(hashtextextended('anchor_journal writer', 0))"
_DB_NOW = "extract(epoch from clock_timestamp())::double precision"


@functools.lru_cache(maxsize=512)
def _placeholders(statement: str) -> str:
    """`statement` with sqlite3's `?` placeholders as psycopg's `%s` (and a literal `%` doubled, as
    psycopg reads it). Only placeholders change: no statement of the protocol holds a literal `?`."""
    return statement.replace("%", "%%").replace("?", "%s")


class Row(tuple[Any, ...]):
    """A row by position or by column name, like sqlite3.Row, so both backends' rows read alike."""

    _names: dict[str, int]

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names[key])
        return tuple.__getitem__(self, key)


def _row_factory(cursor: Any) -> Any:
    names = {column.name: i for i, column in enumerate(cursor.description or ())}

    def make(values: Sequence[Any]) -> Row:
        row = Row(bytes(v) if isinstance(v, memoryview) else v for v in values)
        row._names = names
        return row

    return make


class _Cursor:
    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor

    def fetchone(self) -> Any:
        return self.cursor.fetchone() if self.cursor.description else None

    def fetchall(self) -> list[Any]:
        return list(self.cursor.fetchall()) if self.cursor.description else []

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())

    @property
    def rowcount(self) -> int:
        return int(self.cursor.rowcount)


class PgConnection:
    """The part of sqlite3.Connection the journal uses, over one psycopg connection."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def execute(self, statement: str, params: Sequence[Any] = ()) -> _Cursor:
        return _Cursor(self.conn.execute(_placeholders(statement), tuple(params)))

    def executemany(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        rows = list(rows)
        if rows:
            with self.conn.cursor() as cursor:
                cursor.executemany(_placeholders(statement), rows)

    def close(self) -> None:
        self.conn.close()


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Lease(Value):
    """A held lease: whoever has the newest token for `name` may commit; nobody else."""

    name: str
    holder: str
    token: int
    ttl_s: float


def connect(url: str) -> Any:
    """A psycopg connection in autocommit (each statement its own transaction unless inside `tx()`);
    an unreachable database is a typed error that never shows the URL (it may hold a password)."""
    import psycopg

    try:
        # the journal's own schema first on the path: its tables never meet anyone else's
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10, options=f"-c search_path={PG_SCHEMA}")
    except psycopg.OperationalError as exc:
        first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise JournalError(
            f"the PostgreSQL journal cannot be reached ({_scrub(first, url)})",
            detail={"variable": "ANCHOR_JOURNAL_URL"},
        ) from None
    conn.row_factory = _row_factory
    return conn


def _scrub(message: str, url: str) -> str:
    from urllib.parse import urlsplit

    password = urlsplit(url).password
    return message.replace(password, "***") if password else message


class PgJournal(Journal):
    """The journal in a PostgreSQL database: `store.Journal`'s interface, shared across hosts."""

    backend = "postgresql"
    dialect = POSTGRESQL
    IntegrityError = psycopg.IntegrityError

    def __init__(self, url: str) -> None:
        self.url = url
        self.closed = False
        self.conn = connect(url)
        self.db = PgConnection(self.conn)
        self.fence: Lease | None = None
        self._renewed = 0.0
        try:
            if self._version() == SCHEMA_VERSION:
                return  # up to date: nothing to write (so a read-only database still opens for reading)
            with self._refusals(), self.conn.transaction():
                self.conn.execute(_WRITER_LOCK)
                self.conn.execute(f"CREATE SCHEMA IF NOT EXISTS {PG_SCHEMA}")
                exists = self.conn.execute("SELECT to_regclass('meta') IS NOT NULL").fetchone()[0]
                if not exists:  # a new journal: the tables as they are now
                    for statement in statements(POSTGRESQL):
                        self.conn.execute(statement)
                    self.conn.execute("INSERT INTO meta VALUES ('schema_version', %s)", (str(SCHEMA_VERSION),))
                row = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                found = None if row is None else int(row[0])
                if found is None or found > SCHEMA_VERSION:
                    raise JournalError(
                        f"PostgreSQL journal: schema version {found}, this Anchor speaks {SCHEMA_VERSION}",
                        detail={"variable": "ANCHOR_JOURNAL_URL"},
                    )
                steps = migrations(POSTGRESQL)
                for version in range(found + 1, SCHEMA_VERSION + 1):
                    for statement in steps[version]:
                        self.conn.execute(statement)
                    self.conn.execute("UPDATE meta SET value = %s WHERE key = 'schema_version'", (str(version),))
        except BaseException:
            self.conn.close()
            raise

    def item_counts(self, chain_id: int) -> dict[str, int]:
        """Items of `chain_id` by state: the sum of the rows the triggers append (anchor.journal.schema), as
        many as the transitions since the last flush folded them, one row per state after it."""
        rows = self.db.execute(
            "SELECT state, sum(n) FROM item_count_deltas WHERE chain_id = ? GROUP BY state", (chain_id,)
        )
        return {str(state): int(n) for state, n in rows.fetchall()}

    def compact_counts(self) -> None:
        """Fold the count rows into one per (chain, state). No writer lock: a row appended meanwhile is
        not in this statement's snapshot, so it is neither deleted nor counted twice."""
        with self._refusals(), self.conn.transaction():
            self.conn.execute(
                "WITH gone AS (DELETE FROM item_count_deltas RETURNING chain_id, state, n)"
                " INSERT INTO item_count_deltas SELECT chain_id, state, sum(n) FROM gone GROUP BY chain_id, state"
            )

    def _version(self) -> int | None:
        """The schema version the database holds (None: no journal there yet); reads only."""
        if not self.conn.execute("SELECT to_regclass('meta') IS NOT NULL").fetchone()[0]:
            return None
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return None if row is None else int(row[0])

    @contextmanager
    def _refusals(self) -> Iterator[None]:
        """The server's "disk full" and "read-only" as the typed storage error (exit 15, HTTP 507),
        as the SQLite journal's are: the transaction was rolled back whole, nothing is half there."""
        import psycopg

        try:
            yield
        except (psycopg.errors.DiskFull, psycopg.errors.ReadOnlySqlTransaction) as exc:
            why = (
                "the database server's disk is full"
                if isinstance(exc, psycopg.errors.DiskFull)
                else "the database is read-only (a hot standby, or default_transaction_read_only)"
            )
            raise StorageError(
                f"PostgreSQL journal: {why}; nothing was half-written and nothing journaled is lost: free space"
                " (or restore write access) and run the same command again",
                detail={"variable": "ANCHOR_JOURNAL_URL", "sqlstate": exc.sqlstate or ""},
            ) from None

    @contextmanager
    def tx(self, submission: bool = False) -> Iterator[Any]:
        """One transition: a transaction that first takes the writer lock (and checks the fence).

        A transaction that only journals submissions takes the lock shared: submissions from every
        replica run side by side, and never beside a batch, a signature or a confirmation (those take
        it exclusively). Two submissions of one manifest (or one idempotency key) racing meet at the
        unique constraint; the loser gets `IntegrityError` and is retried by submit_many, and then
        finds the winner's row: one record, as on one machine."""
        import psycopg

        try:
            with self._refusals(), self.conn.transaction():
                self.conn.execute(_SUBMIT_LOCK if submission else _WRITER_LOCK)
                if self.fence is not None:
                    self._check_fence(self.fence)
                    self._renewed = time.monotonic()
                yield self.db
        except psycopg.errors.LockNotAvailable:
            raise JournalBusy("PostgreSQL journal: the writer lock was not granted in time") from None
        except psycopg.OperationalError as exc:
            raise JournalError(
                f"PostgreSQL journal: the connection failed ({_scrub(str(exc).splitlines()[0][:200], self.url)})",
                detail={"variable": "ANCHOR_JOURNAL_URL"},
            ) from None

    def keepalive(self) -> None:
        """Renew a held lease between transitions (a flush waiting for receipts commits nothing for a
        while); a lease already lost raises `LeaseLost` here too."""
        if self.fence is not None and time.monotonic() - self._renewed > self.fence.ttl_s / 3:
            with self.tx():
                pass

    @contextmanager
    def exclusive(self, name: str, ttl_s: float = 30.0, wait_s: float = 600.0) -> Iterator[None]:
        with self.leased(name, ttl_s, wait_s):
            yield

    def close(self) -> None:
        self.conn.close()
        self.closed = True

    def _check_fence(self, lease: Lease) -> None:
        renewed = self.conn.execute(
            f"UPDATE leases SET expires_at = {_DB_NOW} + %s"  # noqa: S608 - _DB_NOW is a constant
            f" WHERE name = %s AND holder = %s AND token = %s AND expires_at >= {_DB_NOW} RETURNING token",
            (lease.ttl_s, lease.name, lease.holder, lease.token),
        ).fetchone()
        if renewed is None:
            raise LeaseLost(
                f"the lease {lease.name!r} (token {lease.token}) expired or was taken over: nothing committed",
                detail={"lease": lease.name, "token": lease.token},
            )

    def try_lease(self, name: str, holder: str, ttl_s: float) -> Lease | None:
        """Take the lease `name` if it is free, expired, already ours, or orphaned; None if another
        holds it.

        Orphaned: its holder's database session is gone. A replica SIGKILLed mid-flush loses its
        connection with its process (the server sees the socket close), so the next flush anywhere
        starts at once instead of waiting out the lease; a replica that stalls with its connection
        open keeps the lease until it expires, and its fencing token is what stops it then."""
        with self.conn.transaction():
            self.conn.execute(_WRITER_LOCK)
            row = self.conn.execute(
                f"SELECT holder, token, expires_at < {_DB_NOW} AS expired,"  # noqa: S608 - a constant
                " NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = leases.backend_pid) AS orphaned"
                " FROM leases WHERE name = %s",
                (name,),
            ).fetchone()
            if row is not None and row["holder"] != holder and not (row["expired"] or row["orphaned"]):
                return None
            token = 1 if row is None else int(row["token"]) + 1
            self.conn.execute(
                "INSERT INTO leases (name, holder, token, expires_at, backend_pid)"  # noqa: S608 - a constant
                f" VALUES (%s, %s, %s, {_DB_NOW} + %s, pg_backend_pid())"
                " ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, token = excluded.token,"
                " expires_at = excluded.expires_at, backend_pid = excluded.backend_pid",
                (name, holder, token, ttl_s),
            )
        return Lease(name, holder, token, ttl_s)

    def release_lease(self, lease: Lease) -> None:
        """Give the lease up (only if still ours), so the next flush anywhere need not wait for expiry."""
        with self.conn.transaction():
            self.conn.execute(_WRITER_LOCK)
            self.conn.execute(
                "DELETE FROM leases WHERE name = %s AND holder = %s AND token = %s",
                (lease.name, lease.holder, lease.token),
            )

    @contextmanager
    def leased(self, name: str, ttl_s: float, wait_s: float = 600.0) -> Iterator[Lease]:
        """Hold `name` for the block, every transition of this journal fenced by its token."""
        import os
        import socket
        import uuid

        holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        deadline = time.monotonic() + wait_s
        while (lease := self.try_lease(name, holder, ttl_s)) is None:
            if time.monotonic() > deadline:
                raise JournalBusy(f"the lease {name!r} stayed held by another replica for {wait_s:.0f} s")
            time.sleep(min(0.2, ttl_s / 10))
        self.fence = lease
        self._renewed = time.monotonic()
        try:
            yield lease
        finally:
            self.fence = None
            if not self.conn.closed:
                import contextlib

                with contextlib.suppress(JournalError, Exception):
                    self.release_lease(lease)
