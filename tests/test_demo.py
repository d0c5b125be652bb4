"""`make demo`'s script on a fresh data directory, twice: verified results, then nothing anchored again."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import ANCHOR_BIN, ROOT, free_port


def _demo(env: dict[str, str]) -> str:
    result = subprocess.run(
        ["bash", str(ROOT / "examples" / "demo.sh")], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def _head(env: dict[str, str]) -> int:
    def cli(*args: str) -> str:
        return subprocess.run([str(ANCHOR_BIN), *args], env=env, capture_output=True, text=True, check=True).stdout

    cli("chain", "up")
    block = json.loads(cli("chain", "status", "--json"))["chain"]["block_number"]
    cli("chain", "down")
    return int(block)


def test_demo_verifies_everything_and_a_second_run_anchors_nothing_new(tmp_path: Path) -> None:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANCHOR_", "GIT_"))}
    env.update(ANCHOR_DATA_DIR=str(tmp_path / "demo"), ANCHOR_LOCAL_PORT=str(free_port()))
    first = _demo(env)
    assert "examples/bundle: anchored" in first and "OK: " in first
    assert "champion" in first and "⛓" in first and "lineage:" in first  # lineage record read back
    assert "mission 'demo-momentum' ran (bubblewrap)" in first  # a mission end to end, after the search
    assert "milestones  anchored: its timing record, checked on chain" in first
    head = _head(env)
    second = _demo(env)
    assert "examples/bundle: already anchored" in second
    assert "r0: measured 0" in second
    assert "milestones  anchored: its timing record, checked on chain" in second  # verified, not run again
    assert _head(env) == head  # no new block: nothing was anchored twice
