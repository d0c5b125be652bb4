"""The git guard's three rules and the attempt runner's time bound, on real repositories and processes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from anchor.errors import GuardError
from anchor.fence.git import Repo
from anchor.fence.guard import check_committed, check_fence, check_unscored
from anchor.fence.runner import TIMEOUT_STATUS, run_command
from tests.research.helpers import params_repo

pytestmark = pytest.mark.sandbox  # runs attempts, proposers or evaluators as processes (bubblewrap)


def test_commit_before_measure_refuses_uncommitted_editable_changes(tmp_path: Path) -> None:
    repo = Repo(params_repo(tmp_path / "repo", 1))
    (repo.path / "params.json").write_text('{"x": 2}')
    with pytest.raises(GuardError, match="uncommitted changes in the editable: params.json; commit before measure"):
        check_committed(repo, ("params.json",))


def test_the_fence_refuses_any_dirt_outside_the_editable(tmp_path: Path) -> None:
    repo = Repo(params_repo(tmp_path / "repo", 1))
    (repo.path / "README.md").write_text("edited by a proposer\n")
    (repo.path / "new_helper.py").write_text("x = 1\n")
    with pytest.raises(GuardError) as info:
        check_fence(repo, ("params.json",))
    assert info.value.detail["paths"] == ["README.md", "new_helper.py"]


def test_a_commit_already_scored_for_the_researcher_is_refused() -> None:
    with pytest.raises(GuardError, match="commit abc was already scored for r1"):
        check_unscored("abc", {"abc"}, "r1")
    check_unscored("abc", {"def"}, "r1")


def test_a_timeout_kills_a_term_ignoring_grandchild_within_the_grace_and_yields_124(tmp_path: Path) -> None:
    pid_file, ready = tmp_path / "grandchild.pid", tmp_path / "ignoring-term"
    script = tmp_path / "stubborn.py"
    script.write_text(
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "open(sys.argv[1], 'w').close()\n"
        "time.sleep(60)\n"
    )
    # the shell records its child (our grandchild) at once, so the test never depends on how fast a
    # loaded machine starts Python; the timeout leaves the grandchild ample time to ignore SIGTERM
    command = f"sh -c 'python3 {script} {ready} & echo $! > {pid_file}; wait'"
    start = time.monotonic()
    result = run_command(command, tmp_path, tmp_path / "run", timeout_s=5, grace_s=0.5)
    took = time.monotonic() - start
    assert (result.exit_code, result.timed_out) == (TIMEOUT_STATUS, True)
    # not a timing test: the grandchild sleeps 60 s, so returning at all means it was killed, not awaited
    assert took < 45
    assert not _running(int(pid_file.read_text()))
    assert ready.exists(), "the grandchild never got to ignore SIGTERM: the case was not exercised"


def _running(pid: int) -> bool:
    """Alive and not a zombie (a killed orphan may wait a while for its new parent to reap it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def test_output_is_captured_and_a_fast_command_is_not_cut(tmp_path: Path) -> None:
    result = run_command("echo out; echo err >&2; exit 3", tmp_path, tmp_path / "run", timeout_s=5, grace_s=1)
    assert (result.exit_code, result.timed_out) == (3, False)
    assert (tmp_path / "run" / "stdout.log").read_text() == "out\n"
    assert (tmp_path / "run" / "stderr.log").read_text() == "err\n"


def test_a_mistyped_repository_is_named_with_the_one_meant(tmp_path: Path) -> None:
    """`research run --repo examples/resarch` said "not a git repository (no .git)" of a folder that
    does not exist; now it says so, with the name that was meant. A folder without .git still gets that."""
    from anchor.errors import BadInput

    (tmp_path / "research").mkdir()
    with pytest.raises(BadInput, match=r"resarch: no such directory \(did you mean .*research\?\)"):
        Repo(tmp_path / "resarch")
    with pytest.raises(BadInput, match=r"not a git repository \(no \.git\)"):
        Repo(tmp_path / "research")


def test_no_sandbox_with_a_sandbox_runtime_is_refused_as_a_contradiction_before_anything_runs(tmp_path: Path) -> None:
    import os

    from tests.cli import run_anchor

    repo = params_repo(tmp_path / "repo", 1)
    contract = Path(__file__).parents[2] / "examples" / "research" / "contract.toml"
    env = {**os.environ, "ANCHOR_DATA_DIR": str(tmp_path / "data")}
    env = {k: v for k, v in env.items() if k not in ("ANCHOR_PRIVATE_KEY", "ANCHOR_KEYSTORE")}
    said = run_anchor(
        [
            "research",
            "run",
            "--repo",
            str(repo),
            "--contract",
            str(contract),
            "--no-anchor",
            "--no-sandbox",
            "--sandbox-runtime",
            "bubblewrap",
        ],
        env,
    )
    assert said.returncode == 2, said.stdout + said.stderr
    assert "--sandbox-runtime bubblewrap with --no-sandbox" in said.stderr and "Traceback" not in said.stderr
    assert not (tmp_path / "data" / "research").exists()


def test_a_folder_given_to_the_built_in_proposer_is_said_to_be_a_folder(tmp_path: Path) -> None:
    from anchor.errors import BadInput
    from anchor.research.proposers import ParamSearch

    repo = params_repo(tmp_path / "repo", 1)
    (repo / "cfg").mkdir()
    with pytest.raises(BadInput) as refused:
        ParamSearch("cfg", 1, "r0").check(repo)
    assert "a folder" in refused.value.message and "--propose" in refused.value.message
