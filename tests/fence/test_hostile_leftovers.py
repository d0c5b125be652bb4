"""What a command leaves is read by the harness as hostile data. Each case was an attack on the fence as
first built, found by an adversary: a mission command made the root harness append to any host file
(its log replaced by a link) and chown any host tree (its HOME replaced by a link); a proposer's stderr
replaced by a link to /proc/self/environ put the harness's environment into the ledger; a FIFO there
hung the harness; a name that is not UTF-8 made every resume crash; sparse files and hard links filled
the host's disk past a 1 MiB bound; a work dir or keystore inside the repository, and holdout data in
an editable folder, were shown again; a planted `.gitignore` kept a file no commit holds in the
measured tree; an attempt rewrote the harness's `code.diff`; a tree 1,200 directories deep crashed it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from anchor.errors import BadInput
from anchor.fence.git import Repo
from anchor.fence.sandbox import Sandbox
from anchor.research.ledger import Ledger
from anchor.research.loop import Search, SearchLimits
from anchor.research.proposers import CommandProposer
from tests.conftest import Chain
from tests.fence.helpers import RUNTIMES, box, run
from tests.fence.test_tree_and_git import EDITABLE, NEXT_X, SCORE, _contract, _git_status
from tests.research.helpers import make_repo

pytestmark = pytest.mark.sandbox


def _limits(attempts: int, failures: int) -> SearchLimits:
    return SearchLimits(max_attempts=attempts, budget_s=120, max_consecutive_failures=failures)


@pytest.mark.chain
def test_a_mission_command_cannot_make_the_harness_write_or_give_away_a_host_file(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    from tests.missions.test_mission_run import _dispatch

    fresh_chain.cli("deploy", check=True)
    target = tmp_path / "root-only.txt"
    target.write_text("ORIGINAL\n")
    target.chmod(0o600)
    tree = tmp_path / "root-only-tree"
    tree.mkdir(mode=0o700)
    (tree / "f").write_text("x")
    command = (
        f'cd "$HOME/.."; rm -f run.log; ln -s {target} run.log; rm -rf home; ln -s {tree} home; echo payload; true'
    )
    rule = '[[stop_rules]]\nmetric = "score"\nmode = "max"\ntarget = 3\n'
    _dispatch(fresh_chain, tmp_path, "hostile", command, attempts=2, rules=rule)
    fresh_chain.cli("mission", "run", "hostile")
    assert target.read_text() == "ORIGINAL\n" and target.stat().st_uid == 0
    assert tree.stat().st_uid == 0 and (tree / "f").stat().st_uid == 0


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("left", ["a link to the harness's environ", "a FIFO"])
def test_a_proposers_stderr_replaced_is_never_followed_or_waited_on(tmp_path: Path, runtime: str, left: str) -> None:
    secret = "harness-only-canary"
    os.environ["ANCHOR_TEST_CANARY"] = secret
    try:
        plant = "ln -s /proc/self/environ stderr.log" if left.startswith("a link") else "mkfifo stderr.log"
        repo = make_repo(tmp_path / "repo", {"params.json": json.dumps({"x": 1}), "src/model.py": "w = 1\n"})
        sandbox = box(repo, runtime, EDITABLE)
        proposer = CommandProposer(
            f'cd "$HOME/.."; rm -f stderr.log; {plant}; exit 1',
            EDITABLE,
            30,
            scratch=tmp_path / "scratch",
            sandbox=sandbox,
        )
        ledger = Ledger(tmp_path / "work" / "ledger.jsonl")
        Search(
            Repo(repo),
            _contract(SCORE),
            "ab" * 32,
            ledger,
            tmp_path / "work",
            proposer,
            "r0",
            _limits(3, 2),
            sandbox=sandbox,
        ).run()
    finally:
        del os.environ["ANCHOR_TEST_CANARY"]
    rejected = [row["message"] for row in ledger.rows() if row.get("event") == "rejected"]
    assert len(rejected) == 2 and not any(secret in message for message in rejected), rejected


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_an_evaluators_stdout_linked_to_a_host_file_is_not_its_answer(tmp_path: Path, runtime: str) -> None:
    host_file = tmp_path / "host-only.txt"
    host_file.write_text("0.999\n")
    host_file.chmod(0o600)
    repo = make_repo(tmp_path / "repo", {"params.json": "{}"})
    result = run(
        box(repo, runtime),
        repo,
        tmp_path / "run",
        f"rm -f {tmp_path / 'run'}/stdout.log; ln -s {host_file} {tmp_path / 'run'}/stdout.log; exit 0",
    )
    from anchor.research.evaluator import _last_line

    assert result.exit_code == 0
    assert (tmp_path / "run" / "stdout.log").is_symlink() and _last_line(tmp_path / "run" / "stdout.log") == ""


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_name_that_is_not_utf8_is_refused_and_the_search_resumes(tmp_path: Path, runtime: str) -> None:
    propose = "python3 -c \"import os; open(os.fsencode('src/') + b'\\xff.py', 'w').write('x')\"; " + NEXT_X.format(
        x="int(os.environ['ANCHOR_ATTEMPT']) + 1"
    )
    repo = make_repo(tmp_path / "repo", {"params.json": json.dumps({"x": 1}), "src/model.py": "w = 1\n"})
    sandbox = box(repo, runtime, EDITABLE)
    for _ in range(2):  # a first run, and a resume of it
        ledger = Ledger(tmp_path / "work" / "ledger.jsonl")
        Search(
            Repo(repo),
            _contract(SCORE),
            "ab" * 32,
            ledger,
            tmp_path / "work",
            CommandProposer(propose, EDITABLE, 30, sandbox=sandbox),
            "r0",
            _limits(2, 2),
            sandbox=sandbox,
        ).run()
    reasons = [row["reason"] for row in ledger.rows() if row.get("event") == "rejected"]
    assert reasons and set(reasons) == {"unsafe entry"}
    assert _git_status(repo) == "" and sorted(os.listdir(repo / "src")) == ["model.py"]


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("attack", ["sparse files", "hard links"])
def test_sparse_files_and_hard_links_never_fill_the_hosts_disk_past_the_bound(
    tmp_path: Path, runtime: str, attack: str
) -> None:
    make = (
        "for i in 1 2 3 4 5; do truncate -s 100M {run}/s$i; done"
        if attack == "sparse files"
        else "head -c 600000 /dev/zero > {run}/f; for i in $(seq 300); do ln {run}/f {run}/l$i; done"
    )
    repo = make_repo(tmp_path / "repo", {"params.json": "{}"})
    run_dir = tmp_path / "run"
    result = run(box(repo, runtime), repo, run_dir, make.format(run=run_dir), run_dir_bytes=1 << 20)
    assert result.limit is not None and result.limit["name"] == "disk" and result.exit_code != 0
    on_disk = sum(os.lstat(os.path.join(r, n)).st_blocks * 512 for r, ds, fs in os.walk(run_dir) for n in (*ds, *fs))
    assert on_disk < 2 << 20, on_disk


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_work_dir_and_a_keystore_inside_the_repository_stay_hidden(tmp_path: Path, runtime: str) -> None:
    repo = make_repo(tmp_path / "repo", {"params.json": "{}"})
    (repo / "work").mkdir()
    (repo / "work" / "ledger.jsonl").write_text("LEDGER-SECRET")
    (repo / "keystore.json").write_text("KEYSTORE-SECRET")
    sandbox = Sandbox.find(repo, ("params.json",), (repo / "work", repo / "keystore.json"), runtime=runtime)
    run_dir = tmp_path / "run"
    result = run(sandbox, repo, run_dir, f"cat work/ledger.jsonl keystore.json > {run_dir}/seen 2>/dev/null; true")
    assert result.exit_code == 0
    assert "SECRET" not in (run_dir / "seen").read_text()


def test_holdout_data_in_an_editable_folder_is_refused_before_anything_runs(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"params.json": "{}", "src/holdout.csv": "HOLDOUT\n"})
    with pytest.raises(BadInput) as refused:
        Sandbox.find(repo, ("params.json", "src"), (), holdout=(repo / "src" / "holdout.csv",), runtime="bubblewrap")
    assert refused.value.detail["field"] == "holdout_data"


DEEP = "(cd src && python3 -c \"import os; [(os.mkdir('d'), os.chdir('d')) for _ in range(1200)]\")"


@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("planted", [".gitignore", ".gitattributes", "a changed .gitmodules", "a 1,200-deep tree"])
def test_what_steers_git_or_overflows_the_harness_is_a_named_rejection(
    tmp_path: Path, runtime: str, planted: str
) -> None:
    plant = {
        ".gitignore": "printf '*\\n' > src/.gitignore; echo 1 > src/evil.py",
        ".gitattributes": "printf '* filter=x\\n' > src/.gitattributes",
        "a changed .gitmodules": "printf '[submodule \"x\"]\\n\\turl = ext::planted\\n' > src/.gitmodules",
        "a 1,200-deep tree": DEEP,
    }[planted]
    propose = f'if [ "$ANCHOR_ATTEMPT" = 1 ]; then {plant}; fi; ' + NEXT_X.format(x="int(os.environ['ANCHOR_ATTEMPT'])")
    repo = make_repo(
        tmp_path / "repo",
        {"params.json": json.dumps({"x": 0}), "src/model.py": "w = 1\n", "src/.gitmodules": "# none\n"},
    )
    sandbox = box(repo, runtime, EDITABLE)
    ledger = Ledger(tmp_path / "work" / "ledger.jsonl")
    Search(
        Repo(repo),
        _contract(SCORE),
        "ab" * 32,
        ledger,
        tmp_path / "work",
        CommandProposer(propose, EDITABLE, 60, sandbox=sandbox),
        "r0",
        _limits(2, 3),
        sandbox=sandbox,
    ).run()
    reasons = [row["reason"] for row in ledger.rows() if row.get("event") == "rejected"]
    assert reasons == ["unsafe entry"], [row.get("message") for row in ledger.rows() if row.get("event")]
    assert [e["metric"]["value"] for e in ledger.entries()] == ["0", "2"]
    assert _git_status(repo) == "" and sorted(os.listdir(repo / "src")) == [".gitmodules", "model.py"]
    assert (repo / "src" / ".gitmodules").read_text() == "# none\n"


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_an_attempt_cannot_replace_the_harnesss_code_diff(tmp_path: Path, runtime: str) -> None:
    repo = make_repo(tmp_path / "repo", {"params.json": "{}"})
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "code.diff").write_bytes(b"the harness's diff\n")
    run(box(repo, runtime), repo, run_dir, f"rm -f {run_dir}/code.diff; echo forged > {run_dir}/code.diff")
    assert (run_dir / "code.diff").read_bytes() == b"the harness's diff\n"


def test_an_attempt_left_running_by_a_dead_harness_is_stopped_even_once_its_first_thread_has_ended(
    tmp_path: Path,
) -> None:
    """A harness killed mid-attempt leaves the attempt's group running; the next search stops it by its
    record. Measured code that ends its first thread (pthread_exit) shows as a zombie while its other
    threads run on: it was taken for gone, and never stopped."""
    from anchor.fence.runner import _record, reap_survivors
    from tests.first_thread import first_thread_ended

    runs = tmp_path / "runs"
    (runs / "a1").mkdir(parents=True)
    with first_thread_ended() as attempt:
        (runs / "a1" / "process.json").write_text(json.dumps(_record(attempt.pid)))
        assert reap_survivors(runs) == [attempt.pid]
        assert attempt.wait(timeout=10) == -9  # stopped by the reaper, not by the fixture
