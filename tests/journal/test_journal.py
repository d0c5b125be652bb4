"""The journal and the effect protocol against a real anvil, on both backends: every test that takes
`journal_url` or `backend_chain` runs once on SQLite and once on a real PostgreSQL (tests/postgres.py)."""

from __future__ import annotations

import json
import sqlite3
import time
import types
from pathlib import Path

import pytest

from anchor.anchoring.service import AnchorService
from anchor.chain.node import rpc_call
from anchor.errors import Conflict, ExitCode, JournalError
from anchor.journal.backends import open_journal
from anchor.journal.effects import RunnerConfig
from anchor.journal.store import Journal
from anchor.journal.submit import Submission, submit
from tests.conftest import Chain
from tests.journal_helpers import assert_exactly_once, unique_submissions
from tests.public_tools import cast_verify_inclusion


def test_same_manifest_twice_is_one_record_marked_duplicate(tmp_path: Path, journal_url: str | None) -> None:
    journal = open_journal(tmp_path, journal_url)
    sub = unique_submissions(1)[0]
    first, second = submit(journal, 31337, sub), submit(journal, 31337, sub)
    assert (first.duplicate, second.duplicate, first.item_id) == (False, True, second.item_id)
    assert journal.db.execute("SELECT count(*) FROM items").fetchone()[0] == 1


def test_idempotency_key_reused_with_another_payload_is_a_conflict(tmp_path: Path, journal_url: str | None) -> None:
    journal = open_journal(tmp_path, journal_url)
    a, b = unique_submissions(2)
    submit(journal, 31337, Submission(a.identity, a.payload, idempotency_key="run-7"))
    again = submit(journal, 31337, Submission(a.identity, a.payload, idempotency_key="run-7"))
    assert again.duplicate
    with pytest.raises(Conflict, match="idempotency key was already used for other content") as refused:
        submit(journal, 31337, Submission(b.identity, b.payload, idempotency_key="run-7"))
    assert refused.value.detail == {"field": "idempotency_key"}  # nothing of the first submission
    with pytest.raises(Conflict):  # the same manifest with other annotations is other content too
        submit(journal, 31337, Submission(a.identity, {"annotations": {"note": "new"}}, idempotency_key="run-7"))
    assert journal.db.execute("SELECT count(*) FROM items").fetchone()[0] == 1


def test_journal_durability_settings_and_schema_version_are_enforced(tmp_path: Path) -> None:
    journal = open_journal(tmp_path)  # the SQLite journal's own settings (PostgreSQL: fsync is the server's)
    pragmas = [
        journal.db.execute(f"PRAGMA {name}").fetchone()[0] for name in ("journal_mode", "synchronous", "foreign_keys")
    ]
    assert pragmas == ["wal", 2, 1]  # synchronous 2 = FULL
    journal.close()
    db = sqlite3.connect(tmp_path / "journal.sqlite")
    db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    db.commit()
    db.close()
    with pytest.raises(JournalError, match="schema version 99"):
        Journal(tmp_path / "journal.sqlite")


def test_the_kept_item_counts_follow_every_way_an_item_moves(tmp_path: Path, journal_url: str | None) -> None:
    """`journal status` reads per-state counts that triggers keep (counting a million items
    took most of its 0.8 s; on PostgreSQL, counting on the index took 0.4 s at 100,000). Each statement
    the effect runner moves items with, and a delete, must leave the kept counts equal to counting the
    rows, before and after PostgreSQL's count rows are folded (every other move here)."""
    journal = open_journal(tmp_path, journal_url)
    for sub in unique_submissions(6):
        submit(journal, 31337, sub)
    submit(journal, 5, unique_submissions(1)[0])

    def counted() -> dict[str, int]:
        rows = journal.db.execute("SELECT state, count(*) FROM items WHERE chain_id = 31337 GROUP BY state")
        return {state: n for state, n in rows.fetchall()}

    moves = [
        "UPDATE items SET state = 'batched', effect_id = NULL WHERE id IN (1, 2, 3)",
        "UPDATE items SET state = 'confirmed' WHERE id IN (1, 2)",
        "UPDATE items SET state = 'batched' WHERE chain_id = 31337 AND state = 'confirmed'",
        "UPDATE items SET state = 'batched' WHERE id = 3",  # to the state it is in: no change
        "UPDATE items SET proof_error = 'disk full' WHERE id = 4",  # another column: no change
        "UPDATE items SET chain_id = 5 WHERE id = 5",
        "DELETE FROM files WHERE item_id = 6",
        "DELETE FROM proof_paths WHERE item_id = 6",
        "DELETE FROM items WHERE id = 6",
    ]
    assert journal.item_counts(31337) == counted() == {"pending": 6}
    for index, move in enumerate(moves):
        with journal.tx() as db:
            db.execute(move)
        if index % 2:
            journal.compact_counts()
        kept = {state: n for state, n in journal.item_counts(31337).items() if n}
        assert kept == counted(), move
    assert journal.item_counts(5) == {"pending": 2}
    if journal_url is not None:  # folded: one row per (chain, state) that was ever counted
        journal.compact_counts()
        assert journal.db.execute("SELECT count(*) FROM item_count_deltas").fetchone()[0] <= 4


def test_recording_proof_errors_rewrites_only_the_rows_whose_error_changes(
    tmp_path: Path, journal_url: str | None
) -> None:
    """A flush records each item's proof error, None for most. Writing NULL over NULL made a new row
    version of every item of the batch, a third of the items table's bloat on PostgreSQL (the table held
    1,105 bytes an item at 50,000). Only the row that gains an error and the row that loses one move."""
    from anchor.journal.reads import record_proof_errors

    journal = open_journal(tmp_path, journal_url)
    for sub in unique_submissions(4):
        submit(journal, 31337, sub)
    with journal.tx() as db:
        db.execute("UPDATE items SET proof_error = 'symlink planted' WHERE id = 2")

    def versions() -> dict[int, object]:  # what changes when a row is written: its xmin, or SQLite's change count
        if journal_url is not None:
            return dict(journal.db.execute("SELECT id, xmin::text FROM items ORDER BY id").fetchall())
        return {0: journal.db.total_changes}

    before = versions()
    record_proof_errors(journal, {1: None, 2: None, 3: "disk full", 4: None})
    after = versions()
    errors = dict(journal.db.execute("SELECT id, proof_error FROM items ORDER BY id").fetchall())
    assert errors == {1: None, 2: None, 3: "disk full", 4: None}
    if journal_url is not None:
        assert [i for i in before if before[i] != after[i]] == [2, 3]
    else:
        assert after[0] - before[0] == 2


def test_items_are_batched_and_each_root_lands_on_chain_once(backend_chain: Chain) -> None:
    backend_chain.cli("deploy", check=True)
    service = AnchorService.open(backend_chain.settings)
    service.submit(unique_submissions(20))
    report = service.flush(max_items=8)
    service.close()
    assert len(report.confirmed) == 3  # 8 + 8 + 4
    counts = assert_exactly_once(backend_chain.node.rpc_url, backend_chain.data_dir, 20, backend_chain.journal_url)
    assert counts == {"roots": 3, "items": 20}
    # the backend under test is the one that journaled: no SQLite file beside a PostgreSQL journal
    assert (backend_chain.data_dir / "journal.sqlite").exists() == (backend_chain.journal_url is None)


def test_every_batched_item_gets_a_proof_that_verifies(backend_chain: Chain, tmp_path: Path) -> None:
    backend_chain.cli("deploy", check=True)
    bundles = []
    for i in range(5):
        target = tmp_path / f"b{i}"
        target.mkdir()
        (target / "result.txt").write_text(f"result {i}")
        bundles.append(str(target))
    backend_chain.cli("journal", "submit", *bundles, check=True)
    flushed = json.loads(backend_chain.cli("journal", "flush", "--batch-size", "2", "--json", check=True).stdout)
    assert flushed["confirmed_effects"] == 3 and flushed["items"]["confirmed"] == 5
    for bundle in bundles:
        assert backend_chain.cli("verify", bundle).returncode == ExitCode.OK
    status = json.loads(backend_chain.cli("journal", "status", "--json", check=True).stdout)
    assert status["effects"]["confirmed"] == 3 and status["items"]["pending"] == 0


def test_a_lineage_effect_is_anchored_once_and_conflicting_fields_are_refused(backend_chain: Chain) -> None:
    backend_chain.cli("deploy", check=True)
    service = AnchorService.open(backend_chain.settings)
    commit, parent = bytes.fromhex("aa" * 20).ljust(32, b"\0"), bytes.fromhex("bb" * 20).ljust(32, b"\0")
    first = service.runner.open_lineage(commit, parent, b"\1" * 32, b"\2" * 32, True)
    assert service.runner.open_lineage(commit, parent, b"\1" * 32, b"\2" * 32, True) == first
    service.runner.run()
    record = service.registry.lineage(commit)
    assert record is not None and record.kept and record.parent == "0x" + parent.hex()
    with pytest.raises(Conflict) as refused:
        service.runner.open_lineage(commit, parent, b"\1" * 32, b"\3" * 32, True)
    assert "whose metric_hash differs" in refused.value.message
    assert "hint: start the new search from a commit of its own" in refused.value.message
    assert refused.value.detail == {"effect": first, "fields": "metric_hash"}
    service.close()


def test_a_transaction_stuck_below_the_fee_market_is_replaced_with_a_fee_bump(backend_chain: Chain) -> None:
    backend_chain.cli("deploy", check=True)
    url = backend_chain.node.rpc_url
    service = AnchorService.open(backend_chain.settings)
    service.runner.config = RunnerConfig(confirmations=0, stuck_after_s=0.3)
    service.submit(unique_submissions(1))
    service.runner.open_batches(256)
    rpc_call(url, "evm_setAutomine", [False])
    effect = service.runner.open_effects()[0]
    service.runner.step(effect)  # signs at the current fees
    service.runner.step(service.runner.open_effects()[0])  # broadcasts
    signed = service.journal.db.execute("SELECT max_fee FROM txs").fetchone()["max_fee"]
    rpc_call(url, "anvil_setNextBlockBaseFeePerGas", [hex(signed * 4)])
    rpc_call(url, "evm_mine", [])  # the market moved above our max fee: our tx stays out
    assert (
        rpc_call(
            url,
            "eth_getTransactionReceipt",
            ["0x" + bytes(service.journal.db.execute("SELECT tx_hash FROM txs").fetchone()[0]).hex()],
        )
        is None
    )
    time.sleep(0.4)
    service.runner.step(service.runner.open_effects()[0])  # stuck: replaced at a higher fee
    service.runner.step(service.runner.open_effects()[0])  # broadcasts the replacement
    rpc_call(url, "evm_setAutomine", [True])
    rpc_call(url, "evm_mine", [])
    report = service.runner.run(deadline_s=30)
    rows = service.journal.db.execute("SELECT nonce, max_fee, state FROM txs ORDER BY id").fetchall()
    service.close()
    assert report.fee_bumps == 1
    assert [r["state"] for r in rows] == ["replaced", "mined"]
    assert rows[0]["nonce"] == rows[1]["nonce"] and rows[1]["max_fee"] > rows[0]["max_fee"]
    assert_exactly_once(url, backend_chain.data_dir, 1, backend_chain.journal_url)


def test_a_reorged_out_anchor_is_detected_and_anchored_again(
    backend_chain: Chain, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend_chain.cli("deploy", check=True)
    url = backend_chain.node.rpc_url
    service = AnchorService.open(backend_chain.settings)
    service.runner.config = RunnerConfig(confirmations=3)
    service.submit(unique_submissions(1))
    service.runner.open_batches(256)
    snapshot = rpc_call(url, "evm_snapshot", [])
    for _ in range(4):  # intent -> signed -> broadcast -> mined, not yet 3 deep
        service.runner.step(service.runner.open_effects()[0])
    mined = service.runner.open_effects()[0]
    assert mined["state"] == "mined"
    rpc_call(url, "evm_revert", [snapshot])  # the block holding our anchor is gone
    rpc_call(url, "anvil_mine", [hex(5)])  # and other blocks took its height
    for _ in range(5):  # detects the reorg, anchors again, and is mined again
        service.runner.step(service.runner.open_effects()[0])
    assert service.runner.open_effects()[0]["state"] == "mined"
    rpc_call(url, "anvil_mine", [hex(3)])  # the new anchor gets its 3 confirmations
    report = service.runner.run(deadline_s=30)
    final = service.journal.db.execute("SELECT block_hash FROM effects").fetchone()["block_hash"]
    service.close()
    assert report.reanchored == [mined["id"]]
    assert bytes(final) != bytes(mined["block_hash"])
    assert_exactly_once(url, backend_chain.data_dir, 1, backend_chain.journal_url)


def test_a_batched_proof_verifies_with_only_an_rpc_url_and_with_cast_alone(
    backend_chain: Chain, tmp_path: Path
) -> None:
    import subprocess

    from tests.conftest import ANCHOR_BIN

    backend_chain.cli("deploy", check=True)
    bundles = []
    for i in range(6):
        (tmp_path / f"b{i}").mkdir()
        (tmp_path / f"b{i}" / "out.txt").write_text(str(i))
        bundles.append(str(tmp_path / f"b{i}"))
    backend_chain.cli("journal", "submit", *bundles, check=True)
    backend_chain.cli("journal", "flush", check=True)
    proof_path = tmp_path / "b3.anchor.json"
    proof = json.loads(proof_path.read_text())
    assert len(proof["batch"]["proof"]) >= 2  # a real Merkle path, not a batch of one

    # our CLI with nothing but the proof and an RPC URL: an empty data directory, no deployment record,
    # no registry named (the canonical one is trusted by derivation); or the registry named explicitly
    env = {k: v for k, v in backend_chain.env().items() if k != "ANCHOR_DATA_DIR"}
    env["ANCHOR_DATA_DIR"] = str(tmp_path / "empty-data-dir")
    argv = [str(ANCHOR_BIN), "--rpc-url", backend_chain.node.rpc_url, "verify", bundles[3], "--json"]
    unnamed = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    assert json.loads(unnamed.stdout)["registry_trusted_by"].startswith("canonical address")
    alone = subprocess.run(
        [*argv, "--registry", proof["anchor"]["registry"]], env=env, capture_output=True, text=True, check=True
    )
    assert json.loads(alone.stdout)["verified"] is True

    # public tools alone: cast and the registry's inclusion view
    assert cast_verify_inclusion(proof, backend_chain.node.rpc_url)


def test_the_same_content_submitted_from_several_places_gets_a_proof_in_each(
    backend_chain: Chain, tmp_path: Path
) -> None:
    """`anchor submit A B` with B a copy of A wrote only A's proof, also after `anchor flush`."""
    backend_chain.cli("deploy", check=True)
    copies = []
    for name in ("a", "b", "late"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "result.txt").write_text("the same bytes")
        copies.append(tmp_path / name)
    submitted = json.loads(
        backend_chain.cli("journal", "submit", str(copies[0]), str(copies[1]), "--json", check=True).stdout
    )
    assert [row["duplicate"] for row in submitted["submitted"]] == [False, True]
    backend_chain.cli("journal", "flush", check=True)
    for place in copies[:2]:
        assert backend_chain.cli("verify", str(place)).returncode == 0
    backend_chain.cli("journal", "submit", str(copies[2]), check=True)  # anchored long ago: its proof at once
    assert backend_chain.cli("verify", str(copies[2])).returncode == 0


def test_a_postgresql_journal_of_a_newer_schema_is_refused(postgres_url: str, tmp_path: Path) -> None:
    open_journal(tmp_path, postgres_url).close()
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("UPDATE anchor_journal.meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(JournalError, match="schema version 99"):
        open_journal(tmp_path, postgres_url)


def test_a_journal_url_that_is_not_postgresql_is_refused_naming_the_variable(tmp_path: Path) -> None:
    from anchor.errors import BadInput

    with pytest.raises(BadInput, match="postgresql://") as refused:
        open_journal(tmp_path, "mysql://db/anchor")
    assert refused.value.detail == {"variable": "ANCHOR_JOURNAL_URL"}


def test_an_unreachable_postgresql_journal_is_a_typed_error_that_never_shows_the_password(tmp_path: Path) -> None:
    url = f"postgresql://anchor:s3cret-pw@/nowhere?host={tmp_path}"
    with pytest.raises(JournalError) as failed:
        open_journal(tmp_path, url)
    assert "s3cret-pw" not in str(failed.value) and failed.value.detail == {"variable": "ANCHOR_JOURNAL_URL"}


def test_a_replica_that_stalls_past_its_lease_cannot_commit_after_another_took_it(
    postgres_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fencing token: A holds the flush lease, stalls past its expiry, B takes it over; A's next
    transition is refused and leaves nothing behind, B's commits. The stall is made on the database's
    clock (the lease's expiry moved into the past), so no assertion depends on how fast this machine is."""
    import psycopg

    from anchor.errors import LeaseLost
    from anchor.journal import pg
    from anchor.journal.pg import _DB_NOW, PgJournal

    a, b = open_journal(tmp_path, postgres_url), open_journal(tmp_path, postgres_url)
    assert isinstance(a, PgJournal) and isinstance(b, PgJournal)
    submit(a, 31337, unique_submissions(1)[0])
    with a.leased("flush:test", ttl_s=30) as held_by_a:
        assert b.try_lease("flush:test", "replica-b", ttl_s=30) is None  # held and fresh: B waits
        with psycopg.connect(postgres_url, autocommit=True) as clock:  # A stalls (a GC pause, a frozen VM)
            clock.execute(f"UPDATE anchor_journal.leases SET expires_at = {_DB_NOW} - 1")  # noqa: S608 - constant
        held_by_b = b.try_lease("flush:test", "replica-b", ttl_s=30)
        assert held_by_b is not None and held_by_b.token == held_by_a.token + 1
        with pytest.raises(LeaseLost, match="expired or was taken over"), a.tx() as db:
            db.execute("UPDATE items SET state = 'batched'")
        later = types.SimpleNamespace(monotonic=lambda: time.monotonic() + 60, sleep=time.sleep)
        monkeypatch.setattr(pg, "time", later)  # A's own clock, injected: its keepalive is due
        with pytest.raises(LeaseLost):
            a.keepalive()
    assert a.db.execute("SELECT state FROM items").fetchone()[0] == "pending"  # A committed nothing
    b.fence = held_by_b
    with b.tx() as db:
        db.execute("UPDATE items SET state = 'batched'")
    assert a.db.execute("SELECT state FROM items").fetchone()[0] == "batched"
    assert a.db.execute("SELECT holder FROM leases").fetchone()[0] == "replica-b"  # A's release left B's lease
    a.close(), b.close()


def test_psycopg_is_handed_each_statement_with_its_own_placeholders() -> None:
    """The protocol's statements are one text for both engines; only the drivers' placeholder differs."""
    from anchor.journal.pg import _placeholders

    assert _placeholders("SELECT x FROM items WHERE chain_id = ? AND digest = ?") == (
        "SELECT x FROM items WHERE chain_id = %s AND digest = %s"
    )
    assert _placeholders("SELECT '100%'") == "SELECT '100%%'"


def test_a_sigkilled_replica_leaves_its_lease_to_the_next_flush_at_once(postgres_url: str, tmp_path: Path) -> None:
    """Its database session ends with its process: the lease is orphaned, not held for 30 s."""
    import signal
    import subprocess
    import sys

    from anchor.journal.pg import PgJournal
    from tests.conftest import ROOT

    holder = (
        "import sys, time; from pathlib import Path\n"
        "from anchor.journal.backends import open_journal\n"
        "j = open_journal(Path(sys.argv[1]), sys.argv[2])\n"
        "lease = j.try_lease('flush:test', 'doomed', 600)\n"
        "print(lease.token, flush=True); time.sleep(600)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", holder, str(tmp_path), postgres_url], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "1"
        other = open_journal(tmp_path, postgres_url)
        assert isinstance(other, PgJournal)
        assert other.try_lease("flush:test", "next", 30) is None  # alive, lease fresh for 600 s: held
    finally:
        child.send_signal(signal.SIGKILL)  # the process we started, by its PID
        child.wait()
    deadline = time.monotonic() + 10
    while (taken := other.try_lease("flush:test", "next", 30)) is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert taken is not None and taken.token == 2
    other.close()


def test_racing_submissions_of_one_manifest_on_postgresql_are_one_record(postgres_url: str, tmp_path: Path) -> None:
    """Submissions share the writer lock on PostgreSQL and meet at the unique constraint: 8
    connections submitting the same manifest and the same idempotency key at once make one record."""
    import threading

    journals = [open_journal(tmp_path, postgres_url) for _ in range(8)]
    sub = unique_submissions(1)[0]
    keyed = Submission(sub.identity, sub.payload, idempotency_key="race-1")
    gate = threading.Barrier(len(journals))
    results: list[bool] = []

    def race(journal: Journal) -> None:
        gate.wait()
        results.append(submit(journal, 31337, keyed).duplicate)

    threads = [threading.Thread(target=race, args=(j,)) for j in journals]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(results) == [False] + [True] * 7
    assert journals[0].db.execute("SELECT count(*) FROM items").fetchone()[0] == 1
    for journal in journals:
        journal.close()


def test_a_wait_on_many_transactions_is_one_counted_line_a_second_not_a_line_each(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A flush at batch size 1 pipelines every root: 192 roots in flight printed 192 lines "tx 0x… sent;
    waiting for it to be mined" a second after the flush began, most of them already mined. Many in
    flight are now counted on one line, said again only when the counts change; a few are still named
    one by one (what a single stamp's user watches)."""
    import logging

    from anchor.journal import effects

    class Head:
        def block_number(self) -> int:
            return 7

    clock = [100.0]
    monkeypatch.setattr(effects.time, "monotonic", lambda: clock[0])
    watch = effects._Watch(Head(), effects.RunnerConfig(confirmations=2), lambda _id: b"\x11" * 32)  # type: ignore[arg-type]
    many = [
        {"id": n, "state": "broadcast" if n % 4 else "mined", "tx_hash": bytes([n]) * 32, "block_number": 6}
        for n in range(40)
    ]
    with caplog.at_level(logging.INFO, logger="anchor.progress"):
        for _ in range(3):  # three seconds of the same counts: said once
            clock[0] += 1.0
            watch.look(lambda: many)  # type: ignore[arg-type,return-value]
        lines = [r.getMessage() for r in caplog.records]
        assert lines == [
            "block 7: 40 transactions in flight: 30 sent, waiting to be mined; 10 mined, waiting for 2 confirmations"
        ]
        caplog.clear()
        clock[0] += 1.0
        watch.look(lambda: many[:2])  # type: ignore[arg-type,return-value]
        assert [r.getMessage() for r in caplog.records] == [
            "tx 0x" + "00" * 32 + " in block 6; block 7: waiting for 2 confirmations (1/2)",
            "tx 0x" + "11" * 32 + " sent; block 7: waiting for it to be mined",
        ]
