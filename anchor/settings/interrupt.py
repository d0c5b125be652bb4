"""How this process takes Ctrl-C: one handler, which remembers the interrupt as well as raising it.

Why remember it: Python raises KeyboardInterrupt wherever the main thread happens to be, and where that
is a finalizer (`__del__`) the exception is printed as "Exception ignored in …" and dropped: a stamp
interrupted there went on to "anchored", exit 0. With the interrupt remembered, the steps that cannot
be undone ask `check()` first (every broadcast of a transaction, in anchor.chain.transactions; the
command line, before it prints a result) and the command line ends with `aborted`, exit 130, however
the exception travelled (click turns it into an Abort of its own). An interrupt met inside a
finalizer, or anywhere else Python cannot raise it (a weakref callback: `_unraisable`), is not lost
there but delivered again a moment later.

Installed by the command line only (`install`): a library call leaves its caller's signals alone, and
`check()` is then a no-op. A SIGINT the process inherited as ignored (a job started in the background
by a shell without job control) stays ignored."""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType
from typing import Any

_SEEN = threading.Event()
_REDELIVERY_S = 0.02
_previous_hook = sys.unraisablehook
"""Python's own hook (or whoever set one before `install`): what `_unraisable` passes everything else to."""


def install() -> None:
    """Take SIGINT with `_on_interrupt`, unless it is ignored or someone else's handler holds it; forget
    any interrupt of an earlier call (the tests run many commands in one process)."""
    _SEEN.clear()
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _on_interrupt)
        if sys.unraisablehook is not _unraisable:
            global _previous_hook
            _previous_hook = sys.unraisablehook
            sys.unraisablehook = _unraisable


def _unraisable(unraisable: Any) -> None:
    """Python's word on an exception raised where nobody can catch it. A KeyboardInterrupt of ours met
    there (in a weakref callback: an import's module lock has one; in a finalizer `_in_finalizer` did not
    see) is neither printed ("Exception ignored in …", a traceback in a user's terminal) nor dropped:
    delivered again a moment later, where it can stop the command. Anything else: as Python says it."""
    if isinstance(unraisable.exc_value, KeyboardInterrupt) and _SEEN.is_set():
        _deliver_again()
        return
    _previous_hook(unraisable)


def _deliver_again() -> None:
    timer = threading.Timer(_REDELIVERY_S, os.kill, (os.getpid(), signal.SIGINT))
    timer.daemon = True
    timer.start()


def seen() -> bool:
    """Whether Ctrl-C came since `install`, raised where it landed or not."""
    return _SEEN.is_set()


def check() -> None:
    """Raise KeyboardInterrupt if Ctrl-C came, even if a finalizer swallowed the first one: called right
    before a step that cannot be taken back."""
    if _SEEN.is_set():
        raise KeyboardInterrupt


def answered() -> None:
    """The command's answer is out (its result, or its error): Ctrl-C from here on changes nothing, and is
    ignored rather than killing the interpreter as it ends (an exit status of "killed by SIGINT" after the
    answer was given). Only where `install` took the signal."""
    if signal.getsignal(signal.SIGINT) is _on_interrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _on_interrupt(signum: int, frame: FrameType | None) -> None:
    _SEEN.set()
    if _in_finalizer(frame):  # raised here it would be printed and dropped: once more, outside it
        _deliver_again()
        return
    raise KeyboardInterrupt


def _in_finalizer(frame: FrameType | None) -> bool:
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False
