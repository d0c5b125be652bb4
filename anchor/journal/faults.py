"""Named crash seams for the fault tests (tests/faults/): `ANCHOR_FAULT=seam:n` SIGKILLs this
process the n-th time it reaches `seam`; `seam:n:int` sends it Ctrl-C (SIGINT) there instead, and
`seam:n:int-in-del` sends it while a finalizer (`__del__`) runs, where Python drops the exception it
raises (tests/cli/test_interrupts.py). Unset (always, outside those tests) it costs one dict lookup.

Why in the code: a crash test is only convincing if it can stop the process exactly between two
effects (after signing and before broadcast, after the receipt and before the journal commit...).
"""

from __future__ import annotations

import os
import signal

from anchor.settings.model import fault_spec

SEAMS = ("before_sign", "after_sign", "after_broadcast", "after_receipt", "during_confirmation")
_counts: dict[str, int] = {}


def fault_point(seam: str) -> None:
    spec = fault_spec()
    if not spec:
        return
    name, _, rest = spec.partition(":")
    if name != seam:
        return
    nth, _, how = rest.partition(":")
    _counts[seam] = _counts.get(seam, 0) + 1
    if _counts[seam] < int(nth or 1):
        return
    if how == "int":
        os.kill(os.getpid(), signal.SIGINT)
    elif how == "int-in-del":
        _InterruptedFinalizer()  # made and dropped at once: its __del__ runs here, and the signal lands in it
    else:
        os.kill(os.getpid(), signal.SIGKILL)


class _InterruptedFinalizer:
    def __del__(self) -> None:
        import time

        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.01)  # the handler runs in here, between two bytecodes of this finalizer
