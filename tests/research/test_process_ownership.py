"""What the harness starts it stops, and only that: SIGINT/SIGTERM tear the attempt's process group down
before the harness exits; a proposer that hangs, crashes or fails is a rejected proposal; a ledger
scored under one contract refuses another."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from anchor.errors import ExitCode
from anchor.settings.session import runs
from tests.conftest import ANCHOR_BIN
from tests.research.helpers import make_repo

pytestmark = pytest.mark.sandbox  # runs attempts, proposers or evaluators as processes (bubblewrap)

SLOW = "sleep 60 & wait"  # the attempt: a child that would outlive a careless harness


def _contract(path: Path, command: str, mode: str = "max") -> Path:
    path.write_text(
        f'task = "t"\ncommand = "{command}"\neditable = ["params.json"]\n'
        f'metric = "score"\nmode = "{mode}"\nattempt_timeout_minutes = 5\ngrace_seconds = 1\n'
    )
    return path


SCORE_PY = "import json, sys\nopen(sys.argv[1] + '/metrics.jsonl', 'w').write(json.dumps({'score': 1}))\n"


def _repo(tmp_path: Path) -> Path:
    """The repository, with the scoring script committed in it (the attempt runs inside it)."""
    files = {"params.json": json.dumps({"x": 1}), "README.md": "r\n", "score.py": SCORE_PY}
    return make_repo(tmp_path / "repo", files)


def _scoring(tmp_path: Path, mode: str = "max") -> Path:
    """A contract whose attempt writes score 1 into its run dir."""
    return _contract(tmp_path / f"contract-{mode}.toml", "python3 score.py {run_dir}", mode)


def _env(data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    return {**env, "ANCHOR_DATA_DIR": str(data)}


def _group_alive(pgid: int) -> bool:
    """Whether a process of group `pgid` still runs (zombies awaiting a reaper do not: PID 1 in a
    container may never reap them)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state, _, group = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:3]
        except OSError:
            continue
        if int(group) == pgid and runs(int(entry.name), state):
            return True
    return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_search_stops_its_running_attempt_group_before_it_exits(tmp_path: Path, sig: int) -> None:
    repo = make_repo(tmp_path / "repo", {"params.json": json.dumps({"x": 1}), "README.md": "r\n"})
    contract = _contract(tmp_path / "c.toml", SLOW)
    # SIGINT's default action restored first, as a terminal's Ctrl-C finds it: a test run started in
    # the background by a shell without job control inherits SIGINT ignored (and an ignored signal
    # stays ignored across exec), and Python then never raises KeyboardInterrupt
    default_int = (
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"
    )
    search = subprocess.Popen(
        [
            sys.executable,
            "-c",
            default_int,
            str(ANCHOR_BIN),
            "research",
            "run",
            "--repo",
            str(repo),
            "--contract",
            str(contract),
            "--no-anchor",
        ],
        env=_env(tmp_path / "data"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    runs = tmp_path / "data" / "research" / "runs"
    deadline = time.monotonic() + 60
    while not list(runs.rglob("process.json")) and time.monotonic() < deadline:
        time.sleep(0.05)
    [record] = list(runs.rglob("process.json"))
    pgid = json.loads(record.read_text())["pgid"]
    assert _group_alive(pgid)
    search.send_signal(sig)  # the search we started, by its PID
    search.communicate(timeout=60)
    assert search.returncode == 130
    assert not _group_alive(pgid), "the attempt's process group outlived the harness"


def test_a_proposer_that_hangs_crashes_or_fails_is_a_rejected_proposal(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    contract = _scoring(tmp_path)
    base = [
        str(ANCHOR_BIN),
        "--json",
        "research",
        "run",
        "--repo",
        str(repo),
        "--contract",
        str(contract),
        "--no-anchor",
        "--max-failures",
        "2",
        "--proposer-timeout",
        "1",
    ]
    started = time.monotonic()
    hung = subprocess.run(
        [*base, "--propose", "sleep 30"], env=_env(tmp_path / "d1"), capture_output=True, text=True, timeout=120
    )
    assert hung.returncode == 0, hung.stderr
    summary = json.loads(hung.stdout)["researchers"][0]
    assert summary["rejected"] == 2 and "timed out after 1 s" in summary["rejections"][0]
    assert time.monotonic() - started < 25  # not 2 x 30 s: the sleeping group was stopped
    failing = subprocess.run(
        [*base, "--propose", "echo no idea >&2; exit 3", "--workdir", str(tmp_path / "w2")],
        env=_env(tmp_path / "d2"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    rejected = json.loads(failing.stdout)["researchers"][0]["rejections"]
    assert rejected and "exited with status 3: no idea" in rejected[0]


def test_a_ledger_scored_under_one_contract_refuses_another_naming_what_changed(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    first = _scoring(tmp_path)
    args = [str(ANCHOR_BIN), "research", "run", "--repo", str(repo), "--no-anchor", "--max-attempts", "1"]
    env = _env(tmp_path / "data")
    assert subprocess.run([*args, "--contract", str(first)], env=env, capture_output=True).returncode == 0
    flipped = _scoring(tmp_path, mode="min")
    refused = subprocess.run([*args, "--contract", str(flipped)], env=env, capture_output=True, text=True)
    assert refused.returncode == ExitCode.CONFLICT, refused.stderr
    assert "mode ('max' -> 'min')" in refused.stderr and "--workdir" in refused.stderr
    assert subprocess.run([*args, "--contract", str(first)], env=env, capture_output=True).returncode == 0
