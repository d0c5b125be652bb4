"""One background flusher: a process of its own that flushes the journal whenever it is kicked.

Why: a flush waits for receipts (0.2 s on the local chain, a block or more on a real one) and is
CPU-bound Python while it batches, signs and writes proofs. Whoever journals (an API worker answering
requests, a research search between attempts) should do neither: it journals durably and kicks.
Why a process and not a thread: in a thread the flush would hold the GIL in 5 ms slices against the
event loop or the search; in a process, at a lower CPU priority, it takes only what is left. Kicks
that arrive during a flush are one more flush, not one each; and a kick while one is already waiting
is not sent at all (a flag in shared memory: under 1,000 submissions/s, a message each was 8% of the
server's samples, pickled and written to a pipe). It is spawned (never forked from a
threaded server), ours by the PID we started, and it leaves when told to or when its parent is gone.
A flush that fails (the chain out of reach) is reported on stderr and retried at the next kick; what
was journaled waits there, durable, for any later flush.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from anchor.settings.session import Settings


class Flusher:
    """`in_thread=True`: the same loop in a thread of this process, for a caller that has already paid
    for the imports and a connection (a research search: a spawned process would spend 1-2 s of CPU
    starting up, which on a short search costs more than the GIL does)."""

    def __init__(
        self, settings: Settings, label: str = "flush", in_thread: bool = False, interval_s: float = 0.0
    ) -> None:
        self.settings, self.label, self.in_thread, self.interval_s = settings, label, in_thread, interval_s
        self.started = False
        self.inbox: Any = None
        self.process: Any = None
        self.waiting: Any = _Flag()
        if in_thread:  # a plain queue holds nothing of the system's: made now, kicks before the start wait in it
            import queue

            self.inbox = queue.Queue()

    def start(self) -> Flusher:
        """Start the loop, with the queue it reads: made here, not before, so that a flusher never
        kicked holds no named semaphore (an `anchor serve` stopped by SIGTERM runs no atexit handler
        that could release them: uvicorn raises the signal again once the app has shut down)."""
        import os

        if self.in_thread:
            import queue
            import threading

            if self.inbox is None:  # closed before: a new queue for the new loop
                self.inbox, self.waiting = queue.Queue(), _Flag()
            self.process = threading.Thread(
                target=_flush_loop,
                args=(self.settings, self.inbox, None, self.label, self.interval_s, self.waiting),
                name=f"anchor-{self.label}",
                daemon=True,
            )
        else:
            import multiprocessing

            context = multiprocessing.get_context("spawn")
            self.inbox, self.waiting = context.Queue(), context.RawValue("b", 0)
            self.process = context.Process(
                target=_flush_loop,
                args=(self.settings, self.inbox, os.getpid(), self.label, self.interval_s, self.waiting),
                name=f"anchor-{self.label}",
                daemon=True,
            )
        self.process.start()
        self.started = True
        return self

    def kick(self) -> None:
        """Ask for a flush of what is journaled now. The loop lowers `waiting` before it reads what is
        pending, so a kick that finds it raised is already covered by the flush to come."""
        if not self.started:
            self.start()
        if self.waiting.value:
            return
        self.waiting.value = 1
        self.inbox.put("flush")

    def close(self, timeout_s: float = 600.0) -> None:
        """Let the last kick's flush finish, then stop; stopped by its PID if it does not within the bound.
        The queue is closed and let go here, which releases its semaphores at once (not at exit)."""
        if not self.started:
            return
        self.inbox.put("stop")
        self.process.join(timeout_s)
        if self.process.is_alive() and hasattr(self.process, "terminate"):
            self.process.terminate()
            self.process.join()
        if hasattr(self.inbox, "join_thread"):
            self.inbox.close()
            self.inbox.join_thread()
        self.inbox = self.process = None
        self.waiting = _Flag()
        self.started = False


class _Flag:
    """`waiting` for a flusher in a thread (a process's is a byte of shared memory)."""

    value = 0


def _flush_loop(
    settings: Settings, inbox: Any, parent: int | None, label: str, interval_s: float = 0.0, waiting: Any = None
) -> None:
    """`interval_s`: after a kick, wait this long for more before flushing (a calendar under load puts
    the submissions of one interval in one transaction: the wait is what a pending receipt waits)."""
    import contextlib
    import os
    import queue
    import signal
    import sys
    import time

    from anchor.anchoring.service import SERVICE_BATCH, AnchorService
    from anchor.errors import AnchorError

    if parent is not None:  # a process of our own (in a thread: the caller's signals stay the caller's)
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; we finish or leave
    with contextlib.suppress(OSError):
        os.nice(10)  # Linux: the calling thread only, when in a thread
    service = None
    try:
        while True:
            try:
                message = inbox.get(timeout=1.0)
            except queue.Empty:
                if parent is not None and os.getppid() != parent:
                    return  # the parent is gone: what it journaled waits for the next flush anywhere
                continue
            if message == "stop":
                return  # every kick before it was taken by an earlier flush (the queue keeps order)
            if interval_s > 0:
                time.sleep(interval_s)
            stop = False
            with contextlib.suppress(queue.Empty):
                while True:  # kicks that queued up during the last flush are one flush
                    stop |= inbox.get_nowait() == "stop"
            if waiting is not None:
                waiting.value = 0  # before the flush reads what is pending: a later kick is sent again
            try:
                service = service or AnchorService.open(settings, start_local=False)
                service.flush(SERVICE_BATCH)  # every pending item, up to the bound: batches follow the load
            except AnchorError as exc:
                sys.stderr.write(f"{label}: not anchored yet ({exc.message}); retried at the next one\n")
            if stop:
                return
    finally:
        if service is not None:
            service.close()
