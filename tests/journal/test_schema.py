"""One journal schema for both engines, and every journal an earlier Anchor made still opens.

The golden journals in tests/vectors/journal/ were made by the Anchor that wrote the schema twice (once
per engine, with a regex turning one dialect into the other), through its own code: `sqlite-v1.sql` is
the first SQLite schema with one item; `sqlite-v8.sql` and `postgresql-v8.sql` are journals at version 8
filled through the protocol (items submitted from two places, a confirmed batch with its transaction, a
partial batch, a failed lineage effect, a claimed mission output); `postgresql-v5.sql` is the first
PostgreSQL schema with one item. SQLite's are `iterdump()` text, PostgreSQL's `pg_dump --inserts`.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from anchor.errors import Conflict
from anchor.journal import reads
from anchor.journal.pg import PgJournal
from anchor.journal.schema import POSTGRESQL, SCHEMA_VERSION, SQLITE, migrations, statements
from anchor.journal.store import Journal
from anchor.journal.submit import claim_output, proof_paths, submit
from tests.conftest import ROOT
from tests.journal_helpers import unique_submissions
from tests.postgres import _bin, fresh_database

VECTORS = ROOT / "tests" / "vectors" / "journal"
TYPES = {
    "integer": "integer",
    "bigint": "integer",
    "real": "real",
    "double precision": "real",
    "blob": "blob",
    "bytea": "blob",
    "text": "text",
}


def _predicate(sql: str | None) -> str | None:
    """A partial index's condition, said alike by both engines (PostgreSQL writes `(state <> 'x'::text)`)."""
    if sql is None:
        return None
    said = re.sub(r"::\w+|[()]", "", sql).replace("<>", "!=")
    return " ".join(said.split()).lower()


def describe_sqlite(db: Any) -> dict[str, Any]:
    """What a SQLite journal's schema holds, engine-neutrally: columns (type, not null, key), unique
    keys, indexes (columns, unique, condition), foreign keys, triggers and each table's options."""
    tables = [
        r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    ]
    described: dict[str, Any] = {"columns": {}, "unique": set(), "indexes": {}, "foreign": set(), "triggers": set()}
    for table in tables:
        rows = db.execute(f"PRAGMA table_info({table})").fetchall()
        described["columns"][table] = {r[1]: (TYPES[r[2].lower()], bool(r[3] or r[5]), r[5] > 0) for r in rows}
        for _, name, unique, origin, _partial in db.execute(f"PRAGMA index_list({table})").fetchall():
            columns = tuple(r[2] for r in db.execute(f"PRAGMA index_info({name})").fetchall())
            if origin == "u":
                described["unique"].add((table, columns))
            elif origin == "c":
                (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()
                where = sql.split(" WHERE ", 1)[1] if " WHERE " in sql else None
                described["indexes"][name] = (table, columns, bool(unique), _predicate(where))
        for row in db.execute(f"PRAGMA foreign_key_list({table})").fetchall():
            described["foreign"].add((table, row[3], row[2], row[4]))
    described["triggers"] = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
    return described


def describe_postgresql(conn: Any) -> dict[str, Any]:
    """The same description, read from PostgreSQL's catalogs for the journal's own schema."""
    schema = "anchor_journal"
    described: dict[str, Any] = {"columns": {}, "unique": set(), "indexes": {}, "foreign": set(), "triggers": set()}
    keys = {
        (t, c)
        for t, c in conn.execute(
            "SELECT t.relname, a.attname FROM pg_constraint k JOIN pg_class t ON t.oid = k.conrelid"
            " JOIN pg_namespace n ON n.oid = t.relnamespace JOIN pg_attribute a ON a.attrelid = t.oid"
            " AND a.attnum = ANY (k.conkey) WHERE n.nspname = %s AND k.contype = 'p'",
            (schema,),
        )
    }
    for table, column, data_type, nullable in conn.execute(
        "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns"
        " WHERE table_schema = %s",
        (schema,),
    ):
        is_key = (table, column) in keys
        described["columns"].setdefault(table, {})[column] = (TYPES[data_type], nullable == "NO", is_key)
    for table, columns in conn.execute(
        "SELECT t.relname, array(SELECT a.attname FROM unnest(k.conkey) WITH ORDINALITY c(n, o)"
        " JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = c.n ORDER BY c.o)"
        " FROM pg_constraint k JOIN pg_class t ON t.oid = k.conrelid JOIN pg_namespace s ON s.oid = t.relnamespace"
        " WHERE s.nspname = %s AND k.contype = 'u'",
        (schema,),
    ):
        described["unique"].add((table, tuple(columns)))
    for name, table, unique, columns, where in conn.execute(
        "SELECT i.relname, t.relname, x.indisunique, array(SELECT a.attname FROM unnest(x.indkey::int2[])"
        " WITH ORDINALITY c(n, o) JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = c.n ORDER BY c.o),"
        " pg_get_expr(x.indpred, x.indrelid) FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid"
        " JOIN pg_class t ON t.oid = x.indrelid JOIN pg_namespace s ON s.oid = t.relnamespace"
        " WHERE s.nspname = %s AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = x.indexrelid)",
        (schema,),
    ):
        described["indexes"][name] = (table, tuple(columns), unique, _predicate(where))
    for table, column, target, target_column in conn.execute(
        "SELECT t.relname, a.attname, r.relname, b.attname FROM pg_constraint k"
        " JOIN pg_class t ON t.oid = k.conrelid JOIN pg_namespace s ON s.oid = t.relnamespace"
        " JOIN pg_class r ON r.oid = k.confrelid"
        " JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.conkey[1]"
        " JOIN pg_attribute b ON b.attrelid = r.oid AND b.attnum = k.confkey[1]"
        " WHERE s.nspname = %s AND k.contype = 'f'",
        (schema,),
    ):
        described["foreign"].add((table, column, target, target_column))
    described["triggers"] = {
        r[0]
        for r in conn.execute(
            "SELECT trigger_name FROM information_schema.triggers WHERE trigger_schema = %s", (schema,)
        )
    }
    described["options"] = {
        r[0]: sorted(r[1])
        for r in conn.execute(
            "SELECT c.relname, c.reloptions FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace"
            " WHERE s.nspname = %s AND c.relkind = 'r' AND c.reloptions IS NOT NULL",
            (schema,),
        )
    }
    return described


def _sqlite_journal(tmp_path: Path, dump: str | None) -> Journal:
    """A journal in `tmp_path`: made from a golden dump (by an earlier Anchor) and opened, or made new."""
    path = tmp_path / "journal.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    if dump is not None:
        db = sqlite3.connect(path)
        db.executescript((VECTORS / dump).read_text())
        db.close()
    return Journal(path)


def _pg_journal(server_url: str, dump: str | None) -> PgJournal:
    """The same on PostgreSQL: a database of its own, the dump restored with psql as pg_dump meant it."""
    url = fresh_database(server_url, "s_" + uuid.uuid4().hex[:16])
    if dump is not None:
        subprocess.run(
            [_bin("psql"), url, "-q", "-v", "ON_ERROR_STOP=1", "-f", str(VECTORS / dump)],
            check=True,
            capture_output=True,
        )
    return PgJournal(url)


@pytest.mark.parametrize("dump", ["sqlite-v1.sql", "sqlite-v8.sql"])
def test_a_sqlite_journal_of_an_earlier_anchor_migrates_to_the_tables_a_new_one_has(tmp_path: Path, dump: str) -> None:
    old = _sqlite_journal(tmp_path / "old", dump)
    new = _sqlite_journal(tmp_path / "new", None)
    assert old.meta("schema_version") == new.meta("schema_version") == str(SCHEMA_VERSION)
    assert describe_sqlite(old.db) == describe_sqlite(new.db)


@pytest.mark.parametrize("dump", ["postgresql-v5.sql", "postgresql-v8.sql"])
def test_a_postgresql_journal_of_an_earlier_anchor_migrates_to_the_tables_a_new_one_has(
    postgres_server_url: str, dump: str
) -> None:
    old = _pg_journal(postgres_server_url, dump)
    new = _pg_journal(postgres_server_url, None)
    assert old.meta("schema_version") == new.meta("schema_version") == str(SCHEMA_VERSION)
    assert describe_postgresql(old.conn) == describe_postgresql(new.conn)
    old.close(), new.close()


def test_both_engines_hold_one_schema(tmp_path: Path, postgres_server_url: str) -> None:
    """The same tables, columns (their types as each engine names them), keys, indexes and references;
    what differs is only what each engine does its own way, named here."""
    sqlite = describe_sqlite(_sqlite_journal(tmp_path, None).db)
    pg_journal = _pg_journal(postgres_server_url, None)
    pg = describe_postgresql(pg_journal.conn)
    pg_journal.close()
    assert set(sqlite["columns"]) - set(pg["columns"]) == {"item_counts"}  # SQLite counts items per state
    assert set(pg["columns"]) - set(sqlite["columns"]) == {"item_count_deltas", "leases"}  # +1/-1 rows; leases
    assert pg["columns"]["proof_paths"].pop("rowid") == ("integer", True, False)  # SQLite numbers every row
    shared = set(sqlite["columns"]) & set(pg["columns"])
    assert len(shared) == 7
    assert {t: sqlite["columns"][t] for t in shared} == {t: pg["columns"][t] for t in shared}
    assert {u for u in sqlite["unique"] if u[0] in shared} == {u for u in pg["unique"] if u[0] in shared}
    assert sqlite["foreign"] == pg["foreign"]
    pg["indexes"].pop("item_count_deltas_chain")
    assert sqlite["indexes"] == pg["indexes"]
    assert sqlite["triggers"] == pg["triggers"] == {"items_counted_in", "items_counted_moved", "items_counted_out"}


def test_each_engine_is_told_the_schema_in_its_own_words_with_nothing_left_to_translate() -> None:
    """One text, two dialects: no statement keeps a parameter unfilled or the other engine's words."""
    for dialect, foreign in ((SQLITE, ("BYTEA", "BIGINT", "jsonb", "IDENTITY")), (POSTGRESQL, ("BLOB", "REAL "))):
        said = [*statements(dialect), *(s for step in migrations(dialect).values() for s in step)]
        assert not [s for s in said if re.search(r"\{\w+\}", s) or any(word in s for word in foreign)], dialect.name
    assert sorted(migrations(SQLITE)) == list(range(2, SCHEMA_VERSION + 1))
    assert sorted(migrations(POSTGRESQL)) == list(range(6, SCHEMA_VERSION + 1))


def _holds_what_it_held(journal: Journal) -> None:
    """The golden version-8 journal, opened by this Anchor: every row there and read as before, and it
    takes new submissions after them."""
    assert journal.meta("chain_genesis:31337") == "0x" + "ff" * 32
    assert journal.item_counts(31337) == {"confirmed": 3, "batched": 1, "pending": 0}
    status = [(r["id"], r["state"], r["failure"]) for r in journal.db.execute("SELECT * FROM effects ORDER BY id")]
    assert status == [(1, "confirmed", None), (2, "intent", None), (3, "intent", "reverted: NotSigned")]
    [lineage] = reads.effects_matching(journal, 31337, bytes.fromhex("dd" * 20))  # found by its args' commit
    assert lineage.kind == "lineage" and lineage.args["kept"] is True
    assert [hit.path for hit in reads.files_with_blake3(journal, 31337, bytes.fromhex("10" * 32))] == ["f0.txt"]
    assert [str(p) for p in proof_paths(journal.db, [1])[1]] == ["/results/r0.anchor.json", "/elsewhere/r0.anchor.json"]
    with pytest.raises(Conflict, match="already the output of a submitted mission"):
        claim_output(journal, "tour-1", "ee" * 32, "another-host")
    added = submit(journal, 31337, unique_submissions(1)[0])
    assert (added.item_id, added.duplicate) == (5, False)
    assert journal.item_counts(31337) == {"confirmed": 3, "batched": 1, "pending": 1}


def test_the_sqlite_journal_an_earlier_anchor_filled_opens_with_everything_it_held(tmp_path: Path) -> None:
    _holds_what_it_held(_sqlite_journal(tmp_path, "sqlite-v8.sql"))


def test_the_postgresql_journal_an_earlier_anchor_filled_opens_with_everything_it_held(
    postgres_server_url: str,
) -> None:
    journal = _pg_journal(postgres_server_url, "postgresql-v8.sql")
    _holds_what_it_held(journal)
    journal.close()


def test_a_version_1_journal_is_migrated_and_its_files_indexed(tmp_path: Path) -> None:
    journal = _sqlite_journal(tmp_path, "sqlite-v1.sql")
    row = journal.db.execute("SELECT item_id, path FROM files WHERE blake3 = ?", (bytes.fromhex("ab" * 32),)).fetchone()
    assert tuple(row) == (1, "a.txt")
    assert [str(p) for p in proof_paths(journal.db, [1])[1]] == ["/results/r.anchor.json"]  # version 4's copy
    assert journal.item_counts(31337) == {"pending": 1}  # the counts of version 7 start from what is there
