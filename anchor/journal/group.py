"""Group commit: many threads' submissions journaled in shared transactions by one writer thread.

Why: a service answers each submission only once it is durable, and each durable transaction costs
a commit (an fsync). With one transaction per request, 16 clients' request threads queued on SQLite's
write lock (its busy handler sleeps and retries) and then paid a commit each: 3 ms of the service's
3.3 ms a submission went there, capping one service near 300 submissions/s. One writer that takes
every submission waiting and journals them in one transaction pays one commit for all of them, and
nobody waits on a lock. Each caller still gets its own answer: a batch that fails (one submission
reuses an idempotency key for other content) is rolled back whole and replayed one submission at a
time, so the others are journaled and only that one gets its `Conflict`.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from anchor.journal.store import Journal
from anchor.journal.submit import Submission, Submitted, submit_many

MAX_BATCH = 256
"""Submissions in one transaction at most: bounds how long the first of them waits for the commit."""

_STOP = object()


class GroupCommit:
    """`submit(chain_id, submission)` from any thread: blocks until the transaction holding it has
    committed (or refused it), then answers as `anchor.journal.submit.submit` would; `enqueue` gives
    the same answer as a future."""

    def __init__(self, open_journal: Callable[[], Journal], name: str = "journal-writer") -> None:
        self._open = open_journal
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._closed = False
        self._thread.start()

    def submit(self, chain_id: int, submission: Submission) -> Submitted:
        answer: Submitted = self.enqueue(chain_id, submission).result()
        return answer

    def enqueue(
        self, chain_id: int, submission: Submission, then: Callable[[Submitted], Any] | None = None
    ) -> Future[Any]:
        """The future answer, for a caller that waits some other way (an event loop, with
        `asyncio.wrap_future`, holds no thread while the commit happens). `then(answer)`, if given,
        runs in the writer's thread once the submission is durable, and its result is the answer: work
        the caller would otherwise do after waking (a service signs its receipt there, and
        libsecp256k1 and keccak run beside the event loop instead of on it)."""
        if self._closed:
            raise RuntimeError("the journal writer is closed")
        done: Future[Any] = Future()
        self._queue.put((chain_id, submission, done, then))
        return done

    def close(self) -> None:
        """Journal what is queued, then stop the writer (idempotent)."""
        if not self._closed:
            self._closed = True
            self._queue.put(_STOP)
            self._thread.join()

    def _run(self) -> None:
        journal: Journal | None = None
        opening_failed: BaseException | None = None
        try:
            while True:
                batch = [self._queue.get()]
                if batch[0] is _STOP:
                    return
                if journal is None or journal.closed:  # opened before the rest is taken: it joins this batch
                    try:
                        journal, opening_failed = self._open(), None
                    except BaseException as exc:  # noqa: BLE001 - every caller learns why, none hangs
                        journal, opening_failed = None, exc
                while len(batch) < MAX_BATCH:
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                waiting = [entry for entry in batch if entry is not _STOP]
                if journal is None:
                    for _, _, done, _ in waiting:
                        done.set_exception(opening_failed or RuntimeError("the journal did not open"))
                elif waiting:
                    _journal(journal, waiting)
                if len(waiting) < len(batch):
                    return
        finally:
            if journal is not None:
                journal.close()


def _journal(journal: Journal, waiting: list[tuple[int, Submission, Future[Any], Any]]) -> None:
    """Each chain's submissions in one transaction; a refused transaction replayed one by one."""
    by_chain: dict[int, list[tuple[Submission, Future[Any], Any]]] = {}
    for chain_id, submission, done, then in waiting:
        by_chain.setdefault(chain_id, []).append((submission, done, then))
    for chain_id, entries in by_chain.items():
        try:
            answers = submit_many(journal, chain_id, [submission for submission, _, _ in entries])
        except BaseException:  # noqa: BLE001 - rolled back whole: each one again, alone, for its own answer
            for submission, done, then in entries:
                try:
                    answer = submit_many(journal, chain_id, [submission])[0]
                except BaseException as exc:  # noqa: BLE001
                    done.set_exception(exc)
                else:
                    _answer(done, then, answer)
        else:
            for (_, done, then), answer in zip(entries, answers, strict=True):
                _answer(done, then, answer)


def _answer(done: Future[Any], then: Callable[[Submitted], Any] | None, answer: Submitted) -> None:
    try:
        done.set_result(answer if then is None else then(answer))
    except BaseException as exc:  # noqa: BLE001 - the caller's own step failed: its answer, nobody else's
        done.set_exception(exc)
