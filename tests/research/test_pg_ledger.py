"""The research ledger on a real PostgreSQL: the same chain as the file, appends from many
processes serialized by the database, and tampering in the database named like tampering in a file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from anchor.errors import Tampered
from anchor.research.ledger import Ledger, PgLedger, open_ledger

ROWS = [
    {"event": "started", "commit": "a1" * 20, "researcher": "r0"},
    {"commit": "a1" * 20, "kept": True, "researcher": "r0", "status": "completed"},
]


def test_the_postgres_ledger_holds_the_same_chain_as_the_file(tmp_path: Path, postgres_url: str) -> None:
    file, pg = Ledger(tmp_path / "ledger.jsonl"), open_ledger(tmp_path / "search", postgres_url)
    assert isinstance(pg, PgLedger) and pg.name == "search"
    for fields in ROWS:
        assert file.append(fields) == pg.append(fields)
    assert file.rows() == pg.rows() and file.head() == pg.head() and file.verify() == pg.verify()
    assert [e["seq"] for e in pg.entries()] == [1]
    assert PgLedger.names(postgres_url) == ["search"]


APPEND = """
import sys
from pathlib import Path
from anchor.research.ledger import PgLedger
ledger = PgLedger(sys.argv[1], Path("/nonexistent"), "shared")
for k in range(25):
    ledger.append({"researcher": sys.argv[2], "n": k})
"""


def test_researchers_appending_at_once_get_one_chain_with_distinct_seqs(postgres_url: str) -> None:
    writers = [subprocess.Popen([sys.executable, "-c", APPEND, postgres_url, f"r{k}"]) for k in range(4)]
    assert [w.wait(timeout=120) for w in writers] == [0, 0, 0, 0]
    ledger = PgLedger(postgres_url, Path("/nonexistent"), "shared")
    rows = ledger.rows()
    assert [r["seq"] for r in rows] == list(range(100)) and ledger.verify()["entries"] == 100
    for k in range(4):  # each researcher's rows in its own order, none lost
        assert [r["n"] for r in rows if r["researcher"] == f"r{k}"] == list(range(25))


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ("UPDATE anchor_ledger SET body = replace(body, '\"kept\":true', '\"kept\":false') WHERE seq = 1", "edited"),
        ("DELETE FROM anchor_ledger WHERE seq = 1", "deleted or reordered"),
    ],
)
def test_a_row_edited_or_deleted_in_the_database_is_named(
    tmp_path: Path, postgres_url: str, change: str, problem: str
) -> None:
    ledger = PgLedger(postgres_url, tmp_path, "search")
    for fields in [*ROWS, {"commit": "b2" * 20, "kept": False, "researcher": "r0", "status": "failed"}]:
        ledger.append(fields)
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(change)  # an operator with write access to the database
    with pytest.raises(Tampered, match=problem) as info:
        ledger.verify()
    assert info.value.detail["seq"] == 1 and "postgresql ledger 'search'" in info.value.message
    assert json.loads(json.dumps(info.value.detail))  # the error shape is JSON


def test_an_unreachable_database_is_a_typed_error_naming_the_variable(tmp_path: Path) -> None:
    from anchor.errors import JournalError

    ledger = PgLedger("postgresql://anchor@/x?host=/nonexistent-socket-dir", tmp_path, "search")
    with pytest.raises(JournalError, match="cannot be reached") as info:
        ledger.rows()
    assert info.value.detail == {"variable": "ANCHOR_JOURNAL_URL"}


OPEN = """
import sys
from pathlib import Path
from anchor.research.ledger import PgLedger
print(len(PgLedger(sys.argv[1], Path("/nonexistent"), "fresh").rows()))
"""


def test_many_researchers_opening_a_fresh_database_at_once_all_get_the_schema(postgres_url: str) -> None:
    """CREATE TABLE IF NOT EXISTS races with itself in PostgreSQL; the schema is created under a lock."""
    openers = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN, postgres_url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(12)
    ]
    results = [o.communicate(timeout=120) for o in openers]
    assert [o.returncode for o in openers] == [0] * 12, [err[-300:] for _, err in results if err]
    assert {out.strip() for out, _ in results} == {"0"}
