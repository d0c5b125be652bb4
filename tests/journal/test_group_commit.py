"""The service's journal writer (anchor.journal.group) on both backends: concurrent submissions share
one transaction, and each caller still gets its own answer or its own error."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from anchor.errors import Conflict
from anchor.journal.backends import open_journal
from anchor.journal.group import GroupCommit
from anchor.journal.store import Journal
from anchor.journal.submit import Submission, submit
from tests.journal_helpers import unique_submissions

CHAIN = 31337


def gated_writer(tmp_path: Path, journal_url: str | None) -> tuple[GroupCommit, threading.Event, list[int]]:
    """A writer whose journal opens only when the gate is set (so submissions pile up first), and
    whose transactions are counted."""
    gate, transactions = threading.Event(), [0]

    def opened() -> Journal:
        gate.wait(30)
        journal = open_journal(tmp_path, journal_url)
        tx = journal.tx

        def counted(*args: Any, **kwargs: Any) -> Any:
            transactions[0] += 1
            return tx(*args, **kwargs)

        journal.tx = counted  # type: ignore[method-assign]
        return journal

    return GroupCommit(opened), gate, transactions


def all_queued(writer: GroupCommit, behind_first: int) -> None:
    """Wait until the writer holds the first submission and `behind_first` more wait in its queue."""
    deadline = time.monotonic() + 30
    while writer._queue.qsize() < behind_first:
        assert time.monotonic() < deadline, "the submissions never reached the writer"
        time.sleep(0.01)


def concurrently(count: int, call: Callable[[int], Any]) -> list[Any]:
    def guarded(n: int) -> Any:
        try:
            return call(n)
        except Exception as exc:  # noqa: BLE001 - the test compares what each caller got
            return exc

    pool = ThreadPoolExecutor(count)
    return list(pool.map(guarded, range(count)))


def test_twenty_concurrent_submissions_are_journaled_in_one_transaction(
    tmp_path: Path, journal_url: str | None
) -> None:
    writer, gate, transactions = gated_writer(tmp_path, journal_url)
    subs = unique_submissions(20)
    with ThreadPoolExecutor(1) as opener:
        waiting = opener.submit(concurrently, 20, lambda n: writer.submit(CHAIN, subs[n]))
        all_queued(writer, 19)
        gate.set()
        answers = waiting.result(60)
    writer.close()
    assert transactions == [1]
    assert sorted(a.item_id for a in answers) == sorted({a.item_id for a in answers})  # 20 distinct records
    assert not any(a.duplicate for a in answers)
    journal = open_journal(tmp_path, journal_url)
    assert journal.db.execute("SELECT count(*) FROM items").fetchone()[0] == 20


def test_one_conflicting_submission_fails_alone_and_the_rest_of_its_batch_is_journaled(
    tmp_path: Path, journal_url: str | None
) -> None:
    first = open_journal(tmp_path, journal_url)
    taken, *subs = unique_submissions(11)
    submit(first, CHAIN, Submission(taken.identity, taken.payload, idempotency_key="k"))
    first.close()
    reused = Submission(subs[0].identity, subs[0].payload, idempotency_key="k")  # the key, other content
    batch = [reused, *subs[1:], subs[1]]  # and the same manifest twice in one batch: one record
    writer, gate, _ = gated_writer(tmp_path, journal_url)
    with ThreadPoolExecutor(1) as opener:
        waiting = opener.submit(concurrently, len(batch), lambda n: writer.submit(CHAIN, batch[n]))
        all_queued(writer, len(batch) - 1)
        gate.set()
        answers = waiting.result(60)
    writer.close()
    assert isinstance(answers[0], Conflict) and answers[0].detail == {"field": "idempotency_key"}
    journaled = answers[1:]
    assert not any(isinstance(a, Exception) for a in journaled), journaled
    assert journaled[0].item_id == journaled[-1].item_id
    assert sorted([journaled[0].duplicate, journaled[-1].duplicate]) == [False, True]
    journal = open_journal(tmp_path, journal_url)
    assert journal.db.execute("SELECT count(*) FROM items").fetchone()[0] == 1 + 9  # the first, and subs[1:]


def test_a_writer_whose_journal_cannot_open_answers_every_caller_with_the_error(tmp_path: Path) -> None:
    def refused() -> Journal:
        raise OSError(28, "No space left on device")

    writer = GroupCommit(refused)
    answers = concurrently(5, lambda n: writer.submit(CHAIN, unique_submissions(5)[n]))
    writer.close()
    assert all(isinstance(a, OSError) and a.errno == 28 for a in answers)
    with pytest.raises(RuntimeError, match="closed"):
        writer.submit(CHAIN, unique_submissions(1)[0])
