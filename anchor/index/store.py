"""The chain-only index: a registry's events copied into a SQLite file of their own.

Why a store apart from the journal and the ledger: an auditor who has neither (a stranger with an RPC
URL and a registry address) must still be able to browse every lineage record and batch root. Every
row here came from an event log of the registry and names the block, block hash and transaction it
came from; nothing is written by anyone but the follower (anchor/index/follow.py), and the file can be
deleted and rebuilt from the chain at any time.

A root's time is not kept: the batch page reads the registry's own record of it live (one call),
and the follower needs no block header per root.

One file indexes one registry on one chain (`meta` says which; another registry is refused, not mixed
in). Hex is lowercase with `0x`; a commit is the registry's bytes32 (a SHA-1 id left-aligned).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypedDict

from anchor.errors import BadInput
from anchor.manifest.onchain import LEDGER_TAG, PROMOTION_TAG

SCHEMA_VERSION = 1
CHECKPOINT = "0x" + LEDGER_TAG.hex()
"""The diff_hash of a research ledger checkpoint's record, as stored here."""
PROMOTION = "0x" + PROMOTION_TAG.hex()
"""The diff_hash of a model promotion's record (anchor.mlflow.registry): a lineage record, not an attempt."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS lineage (
    researcher TEXT NOT NULL, commit_id TEXT NOT NULL, parent TEXT NOT NULL, diff_hash TEXT NOT NULL,
    metric_hash TEXT NOT NULL, kept INTEGER NOT NULL, timestamp INTEGER NOT NULL,
    block INTEGER NOT NULL, block_hash TEXT NOT NULL, tx TEXT NOT NULL, log_index INTEGER NOT NULL,
    PRIMARY KEY (researcher, commit_id)
);
CREATE INDEX IF NOT EXISTS lineage_commit ON lineage (commit_id);
CREATE INDEX IF NOT EXISTS lineage_tx ON lineage (tx);
CREATE INDEX IF NOT EXISTS lineage_block ON lineage (block, log_index);
CREATE INDEX IF NOT EXISTS lineage_researcher_parent ON lineage (researcher, parent);
CREATE TABLE IF NOT EXISTS roots (
    root TEXT PRIMARY KEY, submitter TEXT NOT NULL, block INTEGER NOT NULL,
    block_hash TEXT NOT NULL, tx TEXT NOT NULL, log_index INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS roots_tx ON roots (tx);
CREATE INDEX IF NOT EXISTS roots_block ON roots (block, log_index);
CREATE TABLE IF NOT EXISTS blocks (number INTEGER PRIMARY KEY, hash TEXT NOT NULL);
"""


class LineageRow(TypedDict):
    """A row of `lineage`: one lineage record (or ledger checkpoint) as the registry's event gave it."""

    researcher: str
    commit_id: str
    parent: str
    diff_hash: str
    metric_hash: str
    kept: int
    timestamp: int
    block: int
    block_hash: str
    tx: str
    log_index: int


class RootRow(TypedDict):
    """A row of `roots`: one anchored batch root."""

    root: str
    submitter: str
    block: int
    block_hash: str
    tx: str
    log_index: int


class RecentRow(TypedDict):
    """A record of either kind in `recent`'s union: `kind` is checkpoint, lineage or root."""

    kind: str
    key: str
    who: str
    block: int
    tx: str
    log_index: int
    timestamp: int | None
    kept: int | None
    parent: str | None


class ResearcherRow(TypedDict):
    researcher: str
    attempts: int
    kept: int
    first_block: int
    last_block: int


class SearchHit(TypedDict, total=False):
    """What a query names: `kind` (researcher, root, lineage), `key`, and what else the page shows."""

    kind: str
    key: str
    who: str
    block: int
    attempts: int


class IndexStore:
    """Rows of one registry's events; reads for the pages, writes for the follower only."""

    def __init__(self, path: Path, chain_id: int, registry: str) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA busy_timeout=5000")
        self.db.executescript(_SCHEMA)
        self._bind(chain_id, registry.lower())

    def _bind(self, chain_id: int, registry: str) -> None:
        want = {"schema": str(SCHEMA_VERSION), "chain_id": str(chain_id), "registry": registry}
        have = {r["key"]: r["value"] for r in self.db.execute("SELECT key, value FROM meta")}
        for key, value in want.items():
            if key in have and have[key] != value:
                raise BadInput(
                    f"--index {self.path}: this index holds {key} {have[key]}, not {value}"
                    " (hint: give each registry its own --index file)",
                    detail={"field": "index", key: have[key]},
                )
        with self.tx():
            for key, value in want.items():
                self.db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (key, value))

    @contextmanager
    def tx(self) -> Iterator[None]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row["value"])

    def set_meta(self, key: str, value: str) -> None:
        self.db.execute(
            "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = ?", (key, value, value)
        )

    def cursor(self) -> int | None:
        """The last block whose events are all here (None before the first sync)."""
        value = self.meta("cursor")
        return None if value is None else int(value)

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------------ reads for the pages

    def _all(self, sql: str, *args: Any) -> list[Any]:
        """The rows as dicts: each caller names their shape (the columns its query selects)."""
        return [dict(r) for r in self.db.execute(sql, args).fetchall()]

    def counts(self) -> dict[str, int]:
        """Records by kind: a ledger checkpoint and a model promotion are lineage events too, counted apart
        (the home page said "8 lineage records" where the researcher's page listed 4 and 4 checkpoints)."""
        one = self.db.execute(
            "SELECT (SELECT count(*) FROM lineage WHERE diff_hash NOT IN (?, ?)) AS lineage,"
            " (SELECT count(*) FROM lineage WHERE diff_hash = ?) AS checkpoints,"
            " (SELECT count(*) FROM lineage WHERE diff_hash = ?) AS promotions,"
            " (SELECT count(*) FROM roots) AS roots, (SELECT count(DISTINCT researcher) FROM lineage) AS researchers",
            (CHECKPOINT, PROMOTION, CHECKPOINT, PROMOTION),
        ).fetchone()
        return {k: int(one[k]) for k in ("lineage", "checkpoints", "promotions", "roots", "researchers")}

    def recent(self, limit: int = 20) -> list[RecentRow]:
        """The latest records of both kinds, newest first."""
        return self._all(
            "SELECT CASE WHEN diff_hash = ? THEN 'checkpoint' WHEN diff_hash = ? THEN 'promotion' ELSE 'lineage' END"
            " AS kind, commit_id AS key,"
            " researcher AS who, block, tx, log_index, timestamp, kept, parent"
            " FROM lineage UNION ALL SELECT 'root', root, submitter, block, tx, log_index, NULL, NULL, NULL FROM roots"
            " ORDER BY block DESC, log_index DESC LIMIT ?",
            CHECKPOINT,
            PROMOTION,
            limit,
        )

    def researchers(self, limit: int = -1, offset: int = 0, address: str | None = None) -> list[ResearcherRow]:
        """Researchers, the most recently active first (`limit` of them from `offset`; -1: all), or the
        one with `address`. Pages are bounded: anyone can make researchers (a fresh key each)."""
        return self._all(
            "SELECT researcher, sum(diff_hash NOT IN (?, ?)) AS attempts, sum(kept) AS kept, min(block) AS first_block,"
            " max(block) AS last_block FROM lineage WHERE (? IS NULL OR researcher = ?) GROUP BY researcher"
            " ORDER BY max(block) DESC, researcher LIMIT ? OFFSET ?",
            CHECKPOINT,
            PROMOTION,
            address,
            address,
            limit,
            offset,
        )

    def attempts(self, researcher: str) -> list[LineageRow]:
        """A researcher's attempt records in the order the chain holds them: the trial order (its ledger
        checkpoints' records are apart: `checkpoints`; a model promotion's record is no attempt)."""
        return self._all(
            "SELECT * FROM lineage WHERE researcher = ? AND diff_hash NOT IN (?, ?) ORDER BY block, log_index",
            researcher.lower(),
            CHECKPOINT,
            PROMOTION,
        )

    def checkpoints(self, researcher: str) -> list[LineageRow]:
        """A researcher's ledger checkpoint records (anchor.research.checkpoints), oldest first."""
        return self._all(
            "SELECT * FROM lineage WHERE researcher = ? AND diff_hash = ? ORDER BY block, log_index",
            researcher.lower(),
            CHECKPOINT,
        )

    def lineage_of(self, commit: str, limit: int = -1, offset: int = 0) -> list[LineageRow]:
        """The records of `commit` (one per researcher on v2), first anchored first; `limit` from `offset`."""
        return self._all(
            "SELECT * FROM lineage WHERE commit_id = ? ORDER BY block, log_index LIMIT ? OFFSET ?",
            commit,
            limit,
            offset,
        )

    def lineage_count(self, commit: str) -> int:
        return int(self.db.execute("SELECT count(*) FROM lineage WHERE commit_id = ?", (commit,)).fetchone()[0])

    def children(self, researcher: str, commit: str, limit: int = 50) -> list[LineageRow]:
        """A researcher's records whose parent is `commit` (the attempts built on it), at most `limit`."""
        return self._all(
            "SELECT * FROM lineage WHERE researcher = ? AND parent = ? ORDER BY block, log_index LIMIT ?",
            researcher.lower(),
            commit,
            limit,
        )

    def root(self, root: str) -> RootRow | None:
        rows: list[RootRow] = self._all("SELECT * FROM roots WHERE root = ?", root)
        return rows[0] if rows else None

    def search(self, text: str) -> list[SearchHit]:
        """Records a query names: a commit (full or a prefix of 7+ hex), a researcher, a root or a tx."""
        q = text.strip().lower().removeprefix("0x")
        if not q or len(q) > 64 or any(c not in "0123456789abcdef" for c in q):
            return []
        full = "0x" + q
        found: list[SearchHit] = []
        if len(q) == 40:  # a researcher's address, or a SHA-1 commit id
            found += [
                {"kind": "researcher", "key": r["researcher"], "attempts": r["attempts"]}
                for r in self.researchers(address=full)
            ]
        if len(q) == 64:
            roots = self._all("SELECT root, block FROM roots WHERE root = ? OR tx = ?", full, full)
            found += [{"kind": "root", "key": r["root"], "block": r["block"]} for r in roots]
            by_tx = self._all("SELECT commit_id, researcher, block FROM lineage WHERE tx = ?", full)
            found += [
                {"kind": "lineage", "key": r["commit_id"], "who": r["researcher"], "block": r["block"]} for r in by_tx
            ]
        if len(q) >= 7:  # a commit: SHA-1 ids are stored left-aligned, so a prefix finds both forms
            rows = self._all(
                "SELECT commit_id, researcher, block FROM lineage WHERE commit_id >= ? AND commit_id < ?"
                " ORDER BY block LIMIT 50",
                full,
                full + "g",
            )
            found += [
                {"kind": "lineage", "key": r["commit_id"], "who": r["researcher"], "block": r["block"]} for r in rows
            ]
        seen: set[tuple[str, str, str]] = set()
        unique = []
        for hit in found:
            mark = (hit["kind"], hit["key"], str(hit.get("who", "")))
            if mark not in seen:
                seen.add(mark)
                unique.append(hit)
        return unique
