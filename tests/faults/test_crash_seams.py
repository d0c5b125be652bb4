"""SIGKILL at every seam of the effect protocol, 20 times each at a random occurrence; after each
restart every submitted item is anchored exactly once (counted on chain), none lost, none duplicated.
On both journal backends: SQLite in the data dir, and a real PostgreSQL. Which occurrence of a seam
is hit comes from ANCHOR_TEST_SEED (the same seed makes the same choices); each run is a process of
its own, forked from a server that imported the stack once (tests/faults/child.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from anchor.journal.faults import SEAMS
from tests.conftest import JOURNAL_BACKENDS, ROOT, Chain, deployed, journal_url_for, test_rng, touches
from tests.journal_helpers import assert_exactly_once, journal_value

RUNS_PER_SEAM = 20
ITEMS_PER_RUN = 6
BATCH = 2  # 3 batches per run: every seam is reached at least 3 times


@pytest.fixture(scope="module", params=JOURNAL_BACKENDS)
@touches("chain")
def crash_chain(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Chain]:
    with deployed(tmp_path_factory.mktemp("crash-data")) as chain:
        yield dataclasses.replace(chain, journal_url=journal_url_for(request.param, request))


class ForkServer:
    """tests/faults/child.py's fork server, started by this module and stopped by its PID: each call
    is a fresh process with the environment given, its exit status and output returned."""

    def __init__(self, tmp: Path) -> None:
        self.tmp, self.calls = tmp, 0
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.faults.child", "--forkserver"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )

    def run(self, env: dict[str, str], argv: list[str]) -> subprocess.CompletedProcess[str]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.calls += 1
        output = self.tmp / f"child-{self.calls}.log"
        self.process.stdin.write(json.dumps({"env": env, "argv": argv, "output": str(output)}) + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline()
        assert answer, f"the fork server died (exit {self.process.poll()})"
        return subprocess.CompletedProcess(argv, json.loads(answer)["returncode"], "", output.read_text())

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()  # it ends when its input does
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()  # the process we started, by its PID
            self.process.wait()


@pytest.fixture(scope="module")
def children(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ForkServer]:
    server = ForkServer(tmp_path_factory.mktemp("children"))
    yield server
    server.stop()


def _child(children: ForkServer, chain: Chain, mode: str, fault: str | None) -> subprocess.CompletedProcess[str]:
    env = {**chain.env(), "PYTHONPATH": str(ROOT)}
    env.pop("ANCHOR_FAULT", None)
    if fault:
        env["ANCHOR_FAULT"] = fault
    argv = [str(chain.data_dir), str(chain.port), mode, str(ITEMS_PER_RUN), str(BATCH)]
    return children.run(env, argv)


@pytest.mark.parametrize("seam", SEAMS)
def test_sigkill_at_seam_never_loses_or_duplicates_an_anchor(
    seam: str, crash_chain: Chain, children: ForkServer
) -> None:
    rng = test_rng("crash-seams", seam, "sqlite" if crash_chain.journal_url is None else "postgresql")
    journal_items = assert_exactly_once(
        crash_chain.node.rpc_url,
        crash_chain.data_dir,
        int(journal_value(crash_chain.data_dir, "SELECT count(*) FROM items", crash_chain.journal_url)),
        crash_chain.journal_url,
    )["items"]
    kills, choices = 0, [rng.randint(1, 3) for _ in range(RUNS_PER_SEAM)]
    print(f"{seam}: killed at occurrences {choices}")  # the same under the same ANCHOR_TEST_SEED (-s shows it)
    for nth in choices:
        crashed = _child(children, crash_chain, "submit", f"{seam}:{nth}")
        assert crashed.returncode == -signal.SIGKILL, f"{seam}:{nth} did not die: {crashed.stderr[-2000:]}"
        kills += 1
        recovered = _child(children, crash_chain, "flush", None)
        assert recovered.returncode == 0, recovered.stderr[-2000:]
        journal_items += ITEMS_PER_RUN
        assert_exactly_once(crash_chain.node.rpc_url, crash_chain.data_dir, journal_items, crash_chain.journal_url)
    assert kills == RUNS_PER_SEAM
