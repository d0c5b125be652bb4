"""SIGKILL at every seam of the effect protocol, 20 times each at a random occurrence; after each
restart every submitted item is anchored exactly once (counted on chain), none lost, none duplicated.
On both journal backends: SQLite in the data dir, and a real PostgreSQL."""

from __future__ import annotations

import dataclasses
import os
import random
import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from anchor.journal.faults import SEAMS
from tests.conftest import JOURNAL_BACKENDS, ROOT, Chain, deployed, journal_url_for
from tests.journal_helpers import assert_exactly_once, journal_value

RUNS_PER_SEAM = 20
ITEMS_PER_RUN = 6
BATCH = 2  # 3 batches per run: every seam is reached at least 3 times


@pytest.fixture(scope="module", params=JOURNAL_BACKENDS)
def crash_chain(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Chain]:
    with deployed(tmp_path_factory.mktemp("crash-data")) as chain:
        yield dataclasses.replace(chain, journal_url=journal_url_for(request.param, request))


def _child(chain: Chain, mode: str, fault: str | None) -> subprocess.CompletedProcess[str]:
    env = {**chain.env(), "PYTHONPATH": str(ROOT)}
    env.pop("ANCHOR_FAULT", None)
    if fault:
        env["ANCHOR_FAULT"] = fault
    argv = [
        sys.executable,
        "-m",
        "tests.faults.child",
        str(chain.data_dir),
        str(chain.port),
        mode,
        str(ITEMS_PER_RUN),
        str(BATCH),
    ]
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)


@pytest.mark.parametrize("seam", SEAMS)
def test_sigkill_at_seam_never_loses_or_duplicates_an_anchor(seam: str, crash_chain: Chain) -> None:
    rng = random.Random(f"{seam}-{os.getpid()}")
    journal_items = assert_exactly_once(
        crash_chain.node.rpc_url,
        crash_chain.data_dir,
        int(journal_value(crash_chain.data_dir, "SELECT count(*) FROM items", crash_chain.journal_url)),
        crash_chain.journal_url,
    )["items"]
    kills = 0
    for _ in range(RUNS_PER_SEAM):
        nth = rng.randint(1, 3)
        crashed = _child(crash_chain, "submit", f"{seam}:{nth}")
        assert crashed.returncode == -signal.SIGKILL, f"{seam}:{nth} did not die: {crashed.stderr[-2000:]}"
        kills += 1
        recovered = _child(crash_chain, "flush", None)
        assert recovered.returncode == 0, recovered.stderr[-2000:]
        journal_items += ITEMS_PER_RUN
        assert_exactly_once(crash_chain.node.rpc_url, crash_chain.data_dir, journal_items, crash_chain.journal_url)
    assert kills == RUNS_PER_SEAM
