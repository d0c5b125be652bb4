"""`make demo`'s script on a fresh data directory, twice: verified results, then nothing anchored again."""

from __future__ import annotations

import json

from tests.cli import run_anchor
from tests.conftest import DemoRun, run_demo


def _head(env: dict[str, str]) -> int:
    def cli(*args: str) -> str:
        return run_anchor(args, env, check=True).stdout

    cli("chain", "up")
    block = json.loads(cli("chain", "status", "--json"))["chain"]["block_number"]
    cli("chain", "down")
    return int(block)


def test_demo_verifies_everything_and_a_second_run_anchors_nothing_new(demo_run: DemoRun) -> None:
    first = demo_run.stdout  # the session's one run of the demo (conftest.demo_run), on a fresh data dir
    assert "examples/bundle: anchored" in first and "OK: " in first
    assert "champion" in first and "⛓" in first and "lineage:" in first  # lineage record read back
    assert "mission 'demo-momentum' ran (bubblewrap)" in first  # a mission end to end, after the search
    assert "milestones  anchored: its timing record, checked on chain" in first
    head = _head(demo_run.env)
    second = run_demo(demo_run.env)
    assert "examples/bundle: already anchored" in second
    assert "r0: measured 0" in second
    assert "milestones  anchored: its timing record, checked on chain" in second  # verified, not run again
    assert _head(demo_run.env) == head  # no new block: nothing was anchored twice
