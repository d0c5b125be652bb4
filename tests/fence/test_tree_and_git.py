"""The harness never runs git on what an attempt wrote, and what a losing proposal leaves never jams the
search. A proposer made a nested repository in the editable folder whose own `.git/config` named a
`filter.x.clean` program: the harness committed it as a gitlink, and its next `git status` recursed
into it and ran that program on the host, as root. A proposal that left such a repository made the
reset call `unlink` on a directory, and every resume crashed the same way. Each case is planted by a
proposer and by an attempt, sandboxed (on every runtime here) and unconfined."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from anchor.fence.git import Repo
from anchor.research.contract import AttemptContract
from anchor.research.ledger import Ledger
from anchor.research.loop import Search, SearchLimits
from anchor.research.proposers import CommandProposer
from tests.fence.helpers import RUNTIMES, box
from tests.research.helpers import make_repo

pytestmark = pytest.mark.sandbox

EDITABLE = ("params.json", "src")
SCORE = (
    "python3 -c \"import json,sys; x=json.load(open('params.json'))['x'];"
    " open(sys.argv[1]+'/metrics.jsonl','a').write(json.dumps({'score': x})+chr(10))\" {run_dir}"
)
NESTED = (
    "mkdir -p src/sub && cd src/sub && git init -q . && echo data > f"
    " && git -c user.name=a -c user.email=a@b add f && git -c user.name=a -c user.email=a@b commit -qm planted"
    " && git config filter.x.clean 'touch {marker}; cat' && echo '* filter=x' > .gitattributes"
    " && touch -d 2001-01-01 f; cd ../..; "
)
"""A nested repository whose own config names a program for git to run on any file it reads (set after
its commit, so that the planting itself runs nothing; the file's changed time makes the next `git
status` that reaches it read the file through the filter)."""
NEXT_X = "python3 -c \"import json, os; json.dump({{'x': {x}}}, open('params.json', 'w'))\""


def _contract(command: str) -> AttemptContract:
    return AttemptContract(
        task="t",
        command=command,
        editable=EDITABLE,
        metric="score",
        mode="max",
        attempt_timeout_minutes=1.0,
        min_improvement=0.0,
        grace_seconds=0.5,
    )


def _search(tmp_path: Path, runtime: str, command: str, propose: str, attempts: int = 3) -> tuple[Search, Ledger]:
    repo_path = make_repo(tmp_path / "repo", {"params.json": json.dumps({"x": 1}), "src/model.py": "w = 1\n"})
    sandbox = None if runtime == "unconfined" else box(repo_path, runtime, EDITABLE)
    proposer = CommandProposer(propose, EDITABLE, 60, sandbox=sandbox)
    ledger = Ledger(tmp_path / "work" / "ledger.jsonl")
    search = Search(
        Repo(repo_path),
        _contract(command),
        "ab" * 32,
        ledger,
        tmp_path / "work",
        proposer,
        "r0",
        SearchLimits(max_attempts=attempts, budget_s=300, max_consecutive_failures=5),
        sandbox=sandbox,
    )
    return search, ledger


def _git_status(repo: Path) -> str:
    """`git status` as a user would run it after the search, with the repository's own config."""
    return subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.mark.parametrize("runtime", [*RUNTIMES, "unconfined"])
def test_a_nested_repository_planted_by_a_proposer_runs_nothing_on_the_host_and_is_a_named_rejection(
    tmp_path: Path, runtime: str
) -> None:
    marker = tmp_path / "filter-ran-on-the-host"
    propose = f'if [ "$ANCHOR_ATTEMPT" = 1 ]; then {NESTED.format(marker=marker)} fi; ' + NEXT_X.format(
        x="int(os.environ['ANCHOR_ATTEMPT']) + 1"
    )
    search, ledger = _search(tmp_path, runtime, SCORE, propose)
    summary = search.run()
    assert not marker.exists(), "the planted filter ran on the host"
    rejected = [row for row in ledger.rows() if row.get("event") == "rejected"]
    assert [row["reason"] for row in rejected] == ["unsafe entry"], rejected
    assert "src/sub/.git" in rejected[0]["message"]
    assert summary.measured == 3  # the baseline and two proposals after the rejected one: the search went on
    # ANCHOR_ATTEMPT as docs/configuration.md says: 1 for the first proposal after the baseline (the
    # rejected one), then 2 and 3, so x = 3 and 4
    assert [e["metric"]["value"] for e in ledger.entries()] == ["1", "3", "4"]
    assert _git_status(tmp_path / "repo") == "" and not (tmp_path / "repo" / "src" / "sub").exists()
    assert not marker.exists()


@pytest.mark.parametrize("runtime", [*RUNTIMES, "unconfined"])
def test_a_nested_repository_planted_by_an_attempt_runs_nothing_on_the_host_and_fails_it_by_name(
    tmp_path: Path, runtime: str
) -> None:
    marker = tmp_path / "filter-ran-on-the-host"
    command = f'x=$(cat params.json); case "$x" in *2*) {NESTED.format(marker=marker)} ;; esac; {SCORE}'
    search, ledger = _search(tmp_path, runtime, command, NEXT_X.format(x="int(os.environ['ANCHOR_ATTEMPT']) + 1"))
    search.run()
    assert not marker.exists(), "the planted filter ran on the host"
    entries = ledger.entries()
    assert [e["status"] for e in entries] == ["completed", "failed", "completed"], entries
    assert any(path.startswith("src/sub/.git") for path in entries[1]["refused"]), entries[1]
    assert _git_status(tmp_path / "repo") == "" and not (tmp_path / "repo" / "src" / "sub").exists()


LEAVE = {
    "a nested repository": "git init -q src/nested && echo x > src/nested/f",
    "a read-only tree": "mkdir -p src/ro/a/b && echo x > src/ro/a/b/f && chmod -R a-w src/ro",
    "20,000 empty directories": (
        "python3 -c \"import os; [os.makedirs(f'src/e/{i // 100}/{i}') for i in range(20000)]\""
    ),
}


@pytest.mark.parametrize("left", list(LEAVE))
def test_a_losing_unconfined_proposal_is_reset_whatever_it_leaves(tmp_path: Path, left: str) -> None:
    """Unconfined, the proposer writes the repository itself; a proposal that leaves any of these and
    loses is reset to a clean tree, and the search goes on."""
    propose = f"{LEAVE[left]}; " + NEXT_X.format(x="-int(os.environ['ANCHOR_ATTEMPT'])")
    search, ledger = _search(tmp_path, "unconfined", SCORE, propose, attempts=3)
    search.run()
    rows = ledger.rows()
    assert [row.get("event", row.get("status")) for row in rows if row.get("event") != "started"][0] == "completed"
    assert _git_status(tmp_path / "repo") == ""
    assert sorted(os.listdir(tmp_path / "repo" / "src")) == ["model.py"]


def test_a_search_killed_while_it_resets_continues_on_resume_and_leaves_a_clean_tree(tmp_path: Path) -> None:
    """SIGKILL to the whole harness while it removes 20,000 directories a losing proposal left: the next
    start finishes the reset and the search continues."""
    from tests.cli import ANCHOR_BIN

    repo = make_repo(tmp_path / "repo", {"params.json": json.dumps({"x": 5}), "src/model.py": "w = 1\n"})
    contract = tmp_path / "contract.toml"
    contract.write_text(
        'task = "t"\ncommand = """' + SCORE + '"""\neditable = ["params.json", "src"]\nmetric = "score"\n'
        'mode = "max"\nattempt_timeout_minutes = 1\n'
    )
    propose = f"{LEAVE['20,000 empty directories']}; " + NEXT_X.format(x="-int(os.environ['ANCHOR_ATTEMPT'])")
    env = {**os.environ, "ANCHOR_DATA_DIR": str(tmp_path / "data")}
    argv = [
        str(ANCHOR_BIN),
        "research",
        "run",
        "--repo",
        str(repo),
        "--contract",
        str(contract),
        "--no-anchor",
        "--no-sandbox",
        "--propose",
        propose,
        "--workdir",
        str(tmp_path / "work"),
    ]
    harness = subprocess.Popen(
        [*argv, "--max-attempts", "2"],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    planted = repo / "src" / "e"
    deadline = time.monotonic() + 120
    seen = 0
    while time.monotonic() < deadline and harness.poll() is None:  # wait for the reset to start removing
        now = sum(1 for _ in planted.glob("*/*")) if planted.exists() else 0
        if seen >= 20000 and now < seen:
            break
        seen = max(seen, now)
        time.sleep(0.01)
    assert harness.poll() is None, "the harness ended before its reset could be cut short"
    os.killpg(harness.pid, signal.SIGKILL)  # ours: the session we started
    harness.wait()
    assert planted.exists(), "the reset finished before the kill: nothing was cut short"
    resumed = subprocess.run([*argv, "--max-attempts", "3"], env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert _git_status(repo) == "" and sorted(os.listdir(repo / "src")) == ["model.py"]
    ledger = Ledger(tmp_path / "work" / "ledger.jsonl")
    assert len(ledger.entries()) == 3
