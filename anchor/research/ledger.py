"""The research ledger: append-only JSON lines, each entry committing to the digest of the one before.

An edited, deleted or reordered entry breaks the chain at that entry, and `verify` names it. Appends
take an exclusive lock on the file (several researchers share one ledger) and are fsynced before the
attempt counts as scored, so the ledger survives restarts and crashes.

Three kinds of row share the chain: a `started` trace (`"event": "started"`), written before an
attempt's command runs, the attempt's outcome row, written after it is measured, and a `rejected` event
for a proposal the guard turned away (never run, no trial). An attempt whose
harness died in between has a trace and no outcome; the next start of that researcher's search closes
it as `interrupted`, so every attempt that ever ran is on record, the killed ones included.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, TypedDict, cast

from anchor.errors import JournalError, Tampered
from anchor.files import private_dir
from anchor.manifest.canonical import canonical_json
from anchor.manifest.domain import Domain, tagged

GENESIS = "0" * 64


class MetricJson(TypedDict):
    """A measured metric as a row holds it (anchor.manifest.attempt.Metric): the value a canonical decimal."""

    name: str
    mode: Literal["max", "min"]
    value: str


class KeepRuleJson(TypedDict):
    """A noise calibration's keep rule (anchor.manifest.attempt.KeepRule), as an attempt binds it."""

    rule: Literal["noise"]
    replications: int
    spread: str
    sigmas: str
    threshold: str


class NoiseRun(TypedDict, total=False):
    """One re-measurement of the baseline in a noise calibration's row: its bound evidence and metric."""

    evidence: str
    metric: MetricJson
    status: str
    exit_code: int
    duration_ms: int


class LedgerRow(TypedDict, total=False):
    """One row of the hash chain, every key a row of any kind may hold: the chain's own (`seq`, `prev`,
    `digest`); a trace or an event's (`event`: `started`, `rejected`, `noise`); an attempt's outcome (its
    manifest's identity, anchor.manifest.attempt.AttemptManifest, and how its command ran). Rows are read
    back through `safe_rows` and `verify_lines`, which refuse what is not an entry; the keys a kind does
    not write are absent."""

    seq: int
    prev: str
    digest: str
    event: str
    at: str
    started_at: str
    reason: str
    message: str
    runs: list[NoiseRun]
    kind: str
    version: int
    commit: str
    parent: str
    diff_blake3: str
    metric: MetricJson | None
    metric_hash: str
    kept: bool
    status: str
    researcher: str
    contract_digest: str
    evidence: str
    sandbox: str
    measured_by: dict[str, str]
    partial: MetricJson
    environment: dict[str, object]
    keep_rule: KeepRuleJson
    exit_code: int
    duration_ms: int
    limit: dict[str, object]
    git_changed: list[str]
    memory_bound: str
    refused: list[str]
    quota: str
    attempt_digest: str
    evidence_removed: list[str]
    claims: str
    claims_differ: bool
    started_seq: int
    closed_at: str
    replications: int
    spread: str
    sigmas: str
    threshold: str


def row_of(identity: Mapping[str, object]) -> LedgerRow:
    """An attempt manifest's identity (anchor.manifest.attempt.AttemptManifest, as JSON) as the fields of
    its ledger row: the manifest's fields are keys of `LedgerRow`, their values checked when it was built."""
    return cast("LedgerRow", dict(identity))


def value_of(entry: LedgerRow) -> str | None:
    """The measured value of a row (None: it measured nothing)."""
    metric = entry.get("metric")
    return None if metric is None else metric["value"]


def entry_digest(fields: Mapping[str, object]) -> str:
    body = {k: v for k, v in fields.items() if k != "digest"}
    return tagged(Domain.LEDGER_ENTRY, canonical_json(body)).hex()


STARTED = "started"
"""The `event` of a trace row: an attempt's command is about to run (commit, parent, researcher, time)."""
REJECTED = "rejected"
"""The `event` of a rejected proposal (researcher, reason, message, time): never measured, no trial, on
record so the report can say how many proposals were turned away and why."""


def is_attempt(row: LedgerRow) -> bool:
    """An outcome row (an attempt's record); trace rows carry an `event`."""
    return "event" not in row


class Ledger:
    """The ledger as a file: one machine (or a shared filesystem with working POSIX locks)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.workdir = path.parent
        """Where the search keeps its run dirs and checkpoint proofs, beside the ledger."""
        private_dir(path.parent)  # 0700 whatever the umask: the search's files are nobody else's
        if not path.exists():  # never `touch` an existing ledger: a read would change its times
            path.touch(exist_ok=True)

    @contextmanager
    def _locked(self) -> Iterator[Any]:
        with open(self.path, "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield handle
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def rows(self) -> list[LedgerRow]:
        """Every row of the chain, in order (row i has seq i): attempts and their `started` traces. A row
        whose ids git or a path would misread is refused here too, verified or not (`unsafe_field`)."""
        lines = self.path.read_text(encoding="utf-8").splitlines()
        return safe_rows([json.loads(line) for line in lines if line.strip()], self.where, "line")

    def entries(self) -> list[LedgerRow]:
        """The attempts: one outcome row per measured (or interrupted) attempt, without the `started`
        rows written before each command ran (`rows()` has both)."""
        return [row for row in self.rows() if is_attempt(row)]

    def append(self, fields: LedgerRow) -> LedgerRow:
        """Chain `fields` onto the ledger under the lock; returns the entry with seq, prev and digest."""
        with self._locked() as handle:
            handle.seek(0)
            lines = [line for line in handle.read().decode("utf-8").splitlines() if line.strip()]
            last = json.loads(lines[-1]) if lines else None
            entry: LedgerRow = {
                **fields,
                "seq": 0 if last is None else last["seq"] + 1,
                "prev": GENESIS if last is None else last["digest"],
            }
            entry["digest"] = entry_digest(entry)
            handle.seek(0, os.SEEK_END)
            handle.write(canonical_json(entry) + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        return entry

    def verify(self) -> dict[str, Any]:
        """Check the whole chain; raises `Tampered` naming the first bad entry (its line number)."""
        lines = enumerate(self.path.read_text(encoding="utf-8").splitlines(), start=1)
        return verify_lines(((n, line) for n, line in lines if line.strip()), str(self.path), "line")

    @property
    def where(self) -> str:
        return str(self.path)

    def head(self) -> tuple[str, int]:
        rows = self.rows()
        return (rows[-1]["digest"], len(rows)) if rows else (GENESIS, 0)

    def stamp(self) -> tuple[object, ...]:
        """Changes whenever the file does (ctime cannot be set back by anyone): a reader that verified
        the ledger under one stamp need not verify it again until the stamp moves."""
        st = os.stat(self.path)
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


RESEARCHER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
"""A researcher id: it names run directories and git refs (refs/anchor/<researcher>/<seq>)."""
COMMIT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
"""A full git commit id, SHA-1 or SHA-256: what git is given, never an option or a path."""


def unsafe_field(entry: LedgerRow) -> tuple[str, str] | None:
    """(field, why) for the first field of a row that is not what it must be before it names a run dir or
    is handed to git: the hash chain is its author's to make (a shared ledger: every researcher host's; a
    published one: whoever published it), so a row's `parent` of `--output=FILE` would have `git diff`
    write FILE for whoever audits it, and a researcher `../..` name run dirs outside the work dir."""
    checks = (
        ("researcher", RESEARCHER_ID, "a researcher id"),
        ("commit", COMMIT_ID, "a full commit id"),
        ("parent", COMMIT_ID, "a full commit id"),
    )
    for field, pattern, what in checks:
        value = entry.get(field)
        if field in entry and not (isinstance(value, str) and pattern.fullmatch(value)):
            return field, f"its {field} {str(value)[:80]!r} is not {what}"
    return None


def safe_rows(rows: list[LedgerRow], where: str, unit: str) -> list[LedgerRow]:
    """`rows`, or `Tampered` naming the first whose ids are not what they must be (`unsafe_field`)."""
    for number, row in enumerate(rows, start=1):
        unsafe = unsafe_field(row) if isinstance(row, dict) else ("row", "not a ledger entry")
        if unsafe is not None:
            field, problem = unsafe
            raise Tampered(
                f"{where}: entry at {unit} {number} is bad: {problem}",
                detail={unit: number, "seq": number - 1, "problem": problem, "field": field},
            )
    return rows


def verify_lines(lines: Iterable[tuple[int, str]], where: str, unit: str) -> dict[str, Any]:
    """Check a chain given as (position, canonical JSON) pairs; `Tampered` names the first bad one: a row
    that is not an entry, one edited, deleted or reordered, or one whose ids git or a path would take
    for something else (`unsafe_field`)."""
    prev, count = GENESIS, 0
    for number, line in lines:
        try:
            entry = json.loads(line)
            ok_shape = isinstance(entry, dict) and {"seq", "prev", "digest"} <= entry.keys()
        except ValueError:
            ok_shape = False
        problem, field = None, None
        unsafe = unsafe_field(entry) if ok_shape else None
        if not ok_shape:
            problem = "not a ledger entry"
        elif unsafe is not None:
            field, problem = unsafe
        elif entry_digest(entry) != entry["digest"]:
            problem = "its content does not match its digest (edited)"
        elif entry["seq"] != count:
            problem = f"seq {entry['seq']} where {count} was expected (deleted or reordered)"
        elif entry["prev"] != prev:
            problem = "it does not chain to the entry before (deleted or reordered)"
        if problem is not None:
            raise Tampered(
                f"{where}: entry at {unit} {number} is bad: {problem}",
                detail={unit: number, "seq": count, "problem": problem, **({"field": field} if field else {})},
            )
        prev, count = entry["digest"], count + 1
    return {"entries": count, "head": prev}


SCHEMA_VERSION = 1


class PgLedger:
    """The ledger in PostgreSQL: researchers on many hosts append to one chain.

    Same rows, same digests, same verification as the file: each row is stored as the canonical JSON
    line the file would hold (`body`), keyed by (ledger name, seq). An append takes a transaction-level
    advisory lock on the ledger's name, reads the last row and inserts the next, so concurrent
    researchers are serialized by the database; the primary key refuses a second row at one seq even
    if the lock were bypassed. The name is the search's (by default its work dir's base name,
    ANCHOR_LEDGER_NAME to choose): pods that mount /work/search on several hosts share "search".
    """

    def __init__(self, url: str, workdir: Path, name: str) -> None:
        self.url, self.workdir, self.name = url, workdir, name
        self._conn: Any = None

    @property
    def where(self) -> str:
        return f"postgresql ledger {self.name!r}"

    def _db(self) -> Any:
        import psycopg

        if self._conn is None or self._conn.closed:
            try:
                self._conn = psycopg.connect(self.url, connect_timeout=10)
            except psycopg.OperationalError as exc:
                raise JournalError(
                    f"{self.where}: the database cannot be reached ({str(exc).splitlines()[0][:200]})",
                    detail={"variable": "ANCHOR_JOURNAL_URL"},
                ) from None
            with self._conn.transaction():
                # CREATE TABLE IF NOT EXISTS is not safe against a concurrent one (both sessions may try,
                # and one fails on the catalog's unique index): researchers starting together lock first
                self._conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('anchor_ledger_schema', 0))")
                self._conn.execute("CREATE TABLE IF NOT EXISTS anchor_meta (key text PRIMARY KEY, value text NOT NULL)")
                self._conn.execute(
                    "INSERT INTO anchor_meta VALUES ('ledger_schema', %s) ON CONFLICT (key) DO NOTHING",
                    (str(SCHEMA_VERSION),),
                )
                (version,) = self._conn.execute("SELECT value FROM anchor_meta WHERE key = 'ledger_schema'").fetchone()
                if version != str(SCHEMA_VERSION):
                    raise JournalError(
                        f"{self.where}: ledger schema version {version}, this anchor knows {SCHEMA_VERSION}",
                        detail={"schema": version},
                    )
                self._conn.execute(
                    "CREATE TABLE IF NOT EXISTS anchor_ledger (ledger text NOT NULL, seq bigint NOT NULL,"
                    " body text NOT NULL, PRIMARY KEY (ledger, seq))"
                )
        return self._conn

    def _lines(self) -> list[tuple[int, str]]:
        db = self._db()
        with db.transaction():
            found = db.execute("SELECT seq, body FROM anchor_ledger WHERE ledger = %s ORDER BY seq", (self.name,))
            return [(int(seq), str(body)) for seq, body in found.fetchall()]

    def rows(self) -> list[LedgerRow]:
        return safe_rows([json.loads(body) for _, body in self._lines()], self.where, "row")

    def entries(self) -> list[LedgerRow]:
        return [row for row in self.rows() if is_attempt(row)]

    def append(self, fields: LedgerRow) -> LedgerRow:
        db = self._db()
        with db.transaction():
            db.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (f"anchor_ledger:{self.name}",))
            last = db.execute(
                "SELECT body FROM anchor_ledger WHERE ledger = %s ORDER BY seq DESC LIMIT 1", (self.name,)
            ).fetchone()
            previous = json.loads(last[0]) if last else None
            entry: LedgerRow = {
                **fields,
                "seq": 0 if previous is None else previous["seq"] + 1,
                "prev": GENESIS if previous is None else previous["digest"],
            }
            entry["digest"] = entry_digest(entry)
            db.execute(
                "INSERT INTO anchor_ledger (ledger, seq, body) VALUES (%s, %s, %s)",
                (self.name, entry["seq"], canonical_json(entry).decode("utf-8")),
            )
        return entry

    def verify(self) -> dict[str, Any]:
        return verify_lines(self._lines(), self.where, "row")

    def head(self) -> tuple[str, int]:
        rows = self.rows()
        return (rows[-1]["digest"], len(rows)) if rows else (GENESIS, 0)

    def stamp(self) -> tuple[object, ...]:
        """The last row's seq and body digest, and the row count, in one query: what moves when a row
        is appended or one is deleted (rows already verified are what a cache keeps serving)."""
        row = (
            self._db()
            .execute(
                "SELECT count(*), max(seq), (SELECT md5(body) FROM anchor_ledger WHERE ledger = %s ORDER BY seq DESC"
                " LIMIT 1) FROM anchor_ledger WHERE ledger = %s",
                (self.name, self.name),
            )
            .fetchone()
        )
        return tuple(row) if row else ()

    @staticmethod
    def names(url: str) -> list[str]:
        """The ledgers (searches) this database holds."""
        import psycopg

        with psycopg.connect(url, connect_timeout=10) as conn:
            exists = conn.execute("SELECT to_regclass('anchor_ledger') IS NOT NULL").fetchone()
            if not exists or not exists[0]:
                return []
            return [str(n) for (n,) in conn.execute("SELECT DISTINCT ledger FROM anchor_ledger ORDER BY 1")]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def open_ledger(workdir: Path, journal_url: str | None = None, name: str | None = None) -> Ledger | PgLedger:
    """The search's ledger: in PostgreSQL when `journal_url` (ANCHOR_JOURNAL_URL) names a database, as
    the ledger `name` (ANCHOR_LEDGER_NAME, else the work dir's name), else the file <workdir>/ledger.jsonl."""
    if journal_url and journal_url.startswith(("postgresql://", "postgres://")):
        name = name or workdir.name or "search"
        return PgLedger(journal_url, workdir, name)
    return Ledger(workdir / "ledger.jsonl")


AnyLedger = Ledger | PgLedger
"""Either backend: the same rows, digests and verification (docs/research.md, "The ledger")."""
