"""One background flusher: a process of its own that flushes the journal whenever it is kicked.

Why: a flush waits for receipts (0.2 s on the local chain, a block or more on a real one) and is
CPU-bound Python while it batches, signs and writes proofs. Whoever journals (an API worker answering
requests, a research search between attempts) should do neither: it journals durably and kicks.
Why a process and not a thread: in a thread the flush would hold the GIL in 5 ms slices against the
event loop or the search; in a process, at a lower CPU priority, it takes only what is left. Kicks
that arrive during a flush are one more flush, not one each. It is spawned (never forked from a
threaded server), ours by the PID we started, and it leaves when told to or when its parent is gone.
A flush that fails (the chain out of reach) is reported on stderr and retried at the next kick; what
was journaled waits there, durable, for any later flush.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from anchor.session import Settings


class Flusher:
    def __init__(self, settings: Settings, label: str = "flush") -> None:
        import multiprocessing
        import os

        context = multiprocessing.get_context("spawn")
        self.inbox: Any = context.Queue()
        self.done: Any = context.Value("i", 0)
        """Flushes completed so far (for whoever waits on one)."""
        self.process = context.Process(
            target=_flush_loop,
            args=(settings, self.inbox, self.done, os.getpid(), label),
            name=f"anchor-{label}",
            daemon=True,
        )
        self.started = False

    def start(self) -> Flusher:
        self.process.start()
        self.started = True
        return self

    def kick(self) -> None:
        if not self.started:
            self.start()
        self.inbox.put("flush")

    def close(self, timeout_s: float = 600.0) -> None:
        """Let the last kick's flush finish, then stop; stopped by its PID if it does not within the bound."""
        if not self.started:
            return
        self.inbox.put("stop")
        self.process.join(timeout_s)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join()
        self.started = False


def _flush_loop(settings: Settings, inbox: Any, done: Any, parent: int, label: str) -> None:
    import contextlib
    import os
    import queue
    import signal
    import sys

    from anchor.errors import AnchorError
    from anchor.journal.service import AnchorService

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; we finish or leave
    with contextlib.suppress(OSError):
        os.nice(10)
    service = None
    try:
        while True:
            try:
                message = inbox.get(timeout=1.0)
            except queue.Empty:
                if os.getppid() != parent:
                    return  # the parent is gone: what it journaled waits for the next flush anywhere
                continue
            if message == "stop":
                return  # every kick before it was taken by an earlier flush (the queue keeps order)
            stop = False
            with contextlib.suppress(queue.Empty):
                while True:  # kicks that queued up during the last flush are one flush
                    stop |= inbox.get_nowait() == "stop"
            try:
                service = service or AnchorService.open(settings, start_local=False)
                service.flush()
            except AnchorError as exc:
                sys.stderr.write(f"{label}: not anchored yet ({exc.message}); retried at the next one\n")
            with done.get_lock():
                done.value += 1
            if stop:
                return
    finally:
        if service is not None:
            service.close()
