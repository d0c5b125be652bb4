"""Named crash seams for the fault tests (tests/faults/): `ANCHOR_FAULT=seam:n` SIGKILLs this
process the n-th time it reaches `seam`. Unset (always, outside those tests) it costs one dict lookup.

Why in the code: a crash test is only convincing if it can stop the process exactly between two
effects (after signing and before broadcast, after the receipt and before the journal commit...).
"""

from __future__ import annotations

import os
import signal

from anchor.settings.env import env

SEAMS = ("before_sign", "after_sign", "after_broadcast", "after_receipt", "during_confirmation")
_counts: dict[str, int] = {}


def fault_point(seam: str) -> None:
    spec = env().fault
    if not spec:
        return
    name, _, nth = spec.partition(":")
    if name != seam:
        return
    _counts[seam] = _counts.get(seam, 0) + 1
    if _counts[seam] >= int(nth or 1):
        os.kill(os.getpid(), signal.SIGKILL)
