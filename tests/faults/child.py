"""A stand-alone anchoring process for the fault tests: `python -m tests.faults.child DATA PORT MODE N BATCH`.

MODE "submit" journals N fresh manifests and flushes in batches of BATCH; MODE "flush" only
reconciles and flushes. ANCHOR_FAULT (see anchor/journal/faults.py) decides where it dies.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from anchor.anchoring.service import AnchorService
from anchor.settings.session import Settings
from tests.journal_helpers import unique_submissions


def main() -> None:
    data, port, mode, n, batch = sys.argv[1:6]
    url = os.environ.get("ANCHOR_JOURNAL_URL")  # the backend under test (unset: SQLite in DATA)
    service = AnchorService.open(Settings(data_dir=Path(data), local_port=int(port), journal_url=url))
    if mode == "submit":
        service.submit(unique_submissions(int(n)))
    service.flush(max_items=int(batch))
    service.close()


if __name__ == "__main__":
    main()
