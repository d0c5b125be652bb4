"""Measured commits pushed to a shared git remote: every attempt's refs/anchor/<r>/<seq>,
losers included, so a clone of the remote is enough for `research verify --repo`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from anchor.errors import ExitCode
from tests.conftest import ANCHOR_BIN
from tests.research.helpers import SCORE_IS_X, make_repo

pytestmark = pytest.mark.sandbox  # runs attempts, proposers or evaluators as processes (bubblewrap)


def _env(data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    return {**env, "ANCHOR_DATA_DIR": str(data)}


def _search(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    repo = make_repo(tmp_path / "repo", {"params.json": json.dumps({"x": 1.0, "y": 2}), "README.md": "r\n"})
    contract = tmp_path / "contract.toml"
    contract.write_text(
        f'task = "t"\ncommand = "{SCORE_IS_X.replace(chr(34), chr(92) + chr(34))}"\neditable = ["params.json"]\n'
        'metric = "score"\nmode = "max"\nattempt_timeout_minutes = 1\n'
    )
    return subprocess.run(
        [
            str(ANCHOR_BIN),
            "research",
            "run",
            "--repo",
            str(repo),
            "--contract",
            str(contract),
            "--no-anchor",
            "--researcher",
            "alice",
            "--max-attempts",
            "5",
            *extra,
        ],
        env=_env(tmp_path / "data"),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_every_measured_commit_reaches_the_shared_remote_and_a_clone_of_it_verifies(tmp_path: Path) -> None:
    remote = tmp_path / "shared.git"
    subprocess.run(["git", "init", "--bare", "-q", str(remote)], check=True)
    run = _search(tmp_path, "--push", str(remote))
    assert run.returncode == 0, run.stderr
    ledger = tmp_path / "data" / "research" / "ledger.jsonl"
    attempts = [e for e in map(json.loads, ledger.read_text().splitlines()) if "event" not in e]
    listing = ["git", "-C", str(remote), "for-each-ref", "--format=%(refname) %(objectname)", "refs/anchor/alice/"]
    refs = subprocess.run(listing, check=True, capture_output=True, text=True).stdout.splitlines()
    pushed = dict(line.split() for line in refs if line)
    assert pushed == {f"refs/anchor/alice/{e['seq']}": e["commit"] for e in attempts}
    assert any(not e["kept"] for e in attempts)  # losers too
    # an auditor with a clone of the remote alone finds every commit and diff the ledger names
    clone = tmp_path / "auditor"
    subprocess.run(["git", "init", "-q", str(clone)], check=True)
    verify = [str(ANCHOR_BIN), "research", "verify", "--repo", str(clone)]
    empty = subprocess.run(verify, env=_env(tmp_path / "data"), capture_output=True, text=True)
    assert empty.returncode != ExitCode.OK  # without the pushed refs the ledger's commits are nowhere
    subprocess.run(["git", "-C", str(clone), "fetch", "-q", str(remote), "refs/anchor/*:refs/anchor/*"], check=True)
    checked = subprocess.run(verify, env=_env(tmp_path / "data"), capture_output=True, text=True)
    assert checked.returncode == ExitCode.OK, checked.stderr
    assert f"commits: {len(attempts)} found with the ledgered diff in {clone}" in checked.stdout


def test_an_unreachable_remote_is_refused_before_the_first_attempt(tmp_path: Path) -> None:
    run = _search(tmp_path, "--push", str(tmp_path / "no-such-remote.git"))
    assert run.returncode != 0 and "--push" in run.stderr and "Traceback" not in run.stderr
    assert not (tmp_path / "data" / "research" / "runs" / "alice").exists() or not any(
        (tmp_path / "data" / "research" / "runs" / "alice").glob("*/process.json")
    )
