"""The keep/reset loop on real git repositories, with scores the test controls."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from anchor.errors import GuardError
from anchor.fence.git import Repo
from anchor.research.ledger import Ledger
from anchor.research.loop import NO_PARENT, Search, SearchLimits
from anchor.settings.model import Environment
from tests.research.helpers import ScriptedProposer, contract, params_repo

pytestmark = pytest.mark.sandbox  # runs attempts, proposers or evaluators as processes (bubblewrap)


def _search(
    tmp_path: Path, baseline: float, values: list[Any], attempts: int | None = None, **terms: Any
) -> tuple[Search, Ledger]:
    """A search whose proposer plays `values`; `attempts` (measured, baseline included) when some are rejected."""
    repo = Repo(params_repo(tmp_path / "repo", baseline))
    ledger = Ledger(tmp_path / "work" / "ledger.jsonl")
    search = Search(
        repo,
        contract(**terms),
        "ab" * 32,
        ledger,
        tmp_path / "work",
        ScriptedProposer(values),
        "r0",
        SearchLimits(max_attempts=attempts or len(values) + 1, budget_s=300, max_consecutive_failures=10),
        env=Environment.load(),  # as a door reads it: a test's ANCHOR_ATTEMPT_* bounds apply
    )
    return search, ledger


def _scores(ledger: Ledger) -> list[tuple[str, bool]]:
    return [(e["metric"]["value"] if "metric" in e else e["status"], e["kept"]) for e in ledger.entries()]


def test_max_keeps_only_strict_improvements_and_resets_losers(tmp_path: Path) -> None:
    search, ledger = _search(tmp_path, 1, [2, 1.5, 2.0000001, 3], mode="max")
    summary = search.run()
    assert _scores(ledger) == [("1", True), ("2", True), ("1.5", False), ("2.0000001", True), ("3", True)]
    assert summary.champion_metric == "3"
    assert json.loads((search.repo.path / "params.json").read_text()) == {"x": 3}


def test_min_keeps_only_strict_decreases(tmp_path: Path) -> None:
    search, ledger = _search(tmp_path, 5, [4, 6, 4.5, 3], mode="min")
    search.run()
    assert _scores(ledger) == [("5", True), ("4", True), ("6", False), ("4.5", False), ("3", True)]


def test_min_improvement_is_respected(tmp_path: Path) -> None:
    search, ledger = _search(tmp_path, 1, [1.5, 1.6, 2.05, 2.2], mode="max", min_improvement=0.5)
    search.run()
    # 1.5 is not > 1 + 0.5; 1.6 is; 2.05 is not > 1.6 + 0.5; 2.2 is
    assert _scores(ledger) == [("1", True), ("1.5", False), ("1.6", True), ("2.05", False), ("2.2", True)]


def test_a_loser_leaves_nothing_behind_in_the_working_tree(tmp_path: Path) -> None:
    def loser_with_litter(repo: Path) -> None:
        (repo / "params.json").write_text(json.dumps({"x": 0}))

    command = (
        "python3 -c \"import json,sys; x=json.load(open('params.json'))['x'];"
        " open('litter.tmp','w').write('stray');"
        " open(sys.argv[1]+'/metrics.jsonl','a').write(json.dumps({'score': x})+chr(10))\" {run_dir}"
    )
    search, ledger = _search(tmp_path, 1, [loser_with_litter], command=command)
    search.run()
    champion = ledger.entries()[0]["commit"]
    assert search.repo.head() == champion and search.repo.dirty() == []
    assert json.loads((search.repo.path / "params.json").read_text()) == {"x": 1}
    assert not (search.repo.path / "litter.tmp").exists()


def test_the_baseline_comes_first_and_every_attempt_is_a_new_commit_on_the_champion(tmp_path: Path) -> None:
    search, ledger = _search(tmp_path, 1, [2, 1.5, 3])
    search.run()
    entries = ledger.entries()
    assert entries[0]["parent"] == NO_PARENT and entries[0]["diff_blake3"]
    assert [e["parent"] for e in entries[1:]] == [entries[0]["commit"], entries[1]["commit"], entries[1]["commit"]]
    assert len({e["commit"] for e in entries}) == 4


def test_a_repeated_proposal_is_the_same_commit_and_is_not_measured_twice(tmp_path: Path) -> None:
    search, ledger = _search(tmp_path, 1, [0.5, 0.5, 2], attempts=3)
    summary = search.run()
    assert _scores(ledger) == [("1", True), ("0.5", False), ("2", True)]
    assert summary.rejected == 1 and "already scored" in summary.rejections[0]


def test_a_proposal_outside_the_fence_is_rejected_and_undone(tmp_path: Path) -> None:
    def sneaky(repo: Path) -> None:
        (repo / "params.json").write_text(json.dumps({"x": 9}))
        (repo / "README.md").write_text("the evaluator is easy now\n")

    search, ledger = _search(tmp_path, 1, [sneaky, 2], attempts=2)
    summary = search.run()
    assert _scores(ledger) == [("1", True), ("2", True)]
    assert "outside the editable fence" in summary.rejections[0] and "README.md" in summary.rejections[0]
    assert (search.repo.path / "README.md").read_text() == "a search\n"


def test_agent_claims_are_recorded_and_flagged_but_never_the_record(tmp_path: Path) -> None:
    command = (
        "python3 -c \"import json,sys; x=json.load(open('params.json'))['x'];"
        " open(sys.argv[1]+'/metrics.jsonl','a').write(json.dumps({'score': x})+chr(10));"
        " open(sys.argv[1]+'/claims.json','w').write(json.dumps({'score': 0.99}))\" {run_dir}"
    )
    search, ledger = _search(tmp_path, 0.5, [0.6], command=command)
    search.run()
    last = ledger.entries()[-1]
    assert last["metric"]["value"] == "0.6" and last["claims_differ"] is True
    assert json.loads(last["claims"]) == {"score": 0.99}


def test_a_timed_out_attempt_is_status_timed_out_with_124(tmp_path: Path) -> None:
    search, ledger = _search(tmp_path, 1, [2], command="sleep 30", timeout_min=0.5 / 60)
    summary = search.run()
    # why, in words, and where to read what it said
    stderr = tmp_path / "work" / "runs" / "r0" / ledger.entries()[0]["commit"][:12] / "stderr.log"
    assert summary.stopped_because == f"the baseline produced no metric (timed_out, exit 124; its stderr: {stderr})"
    entry = ledger.entries()[0]
    assert (entry["status"], entry["exit_code"], entry["kept"]) == ("timed_out", 124, False)


@pytest.mark.parametrize("stop", ["max_attempts", "failures"])
def test_stop_rules(tmp_path: Path, stop: str) -> None:
    if stop == "max_attempts":
        search, ledger = _search(tmp_path, 1, [2, 3, 4, 5])
        search.limits = SearchLimits(max_attempts=3, budget_s=300, max_consecutive_failures=5)
        assert search.run().stopped_because == "max attempts (3)"
        assert len(ledger.entries()) == 3
    else:
        search, ledger = _search(tmp_path, 1, [0.5, 0.5, 0.5, 0.5, 0.5])  # repeats are rejected: failures
        search.limits = SearchLimits(max_attempts=20, budget_s=300, max_consecutive_failures=3)
        assert search.run().stopped_because == "3 consecutive failures (3 rejected proposals, 0 failed runs)"


def test_a_proposal_that_only_reformats_the_editable_is_no_trial_and_is_never_measured(tmp_path: Path) -> None:
    """re-serializing params.json (same values, pretty-printed) was measured and counted as a
    trial, inflating N; and the stop line said "5 consecutive failures" beside "0 failed"."""

    def reformat(repo: Path) -> None:
        (repo / "params.json").write_text(json.dumps({"x": 1}, indent=4, sort_keys=True) + "\n")

    search, ledger = _search(tmp_path, 1, [reformat] * 3, attempts=4)
    search.limits = SearchLimits(max_attempts=4, budget_s=300, max_consecutive_failures=3)
    summary = search.run()
    assert [e["parent"] for e in ledger.entries()] == [NO_PARENT]  # the baseline, alone
    assert summary.measured == 1 and summary.rejected == 3
    assert all(r.startswith("no change: params.json holds the same values") for r in summary.rejections)
    assert summary.stopped_because == "3 consecutive failures (3 rejected proposals, 0 failed runs)"
    assert not search.repo.dirty()  # the reformatted file was reset


def test_an_external_proposer_command_edits_the_editable_and_is_fenced(tmp_path: Path) -> None:
    from anchor.research.proposers import CommandProposer

    repo = Repo(params_repo(tmp_path / "repo", 1))
    ledger = Ledger(tmp_path / "work" / "ledger.jsonl")
    # an "agent": raises x by one each attempt, and on its second attempt also edits the README
    agent = (
        "python3 -c \"import json,os; p=json.load(open('params.json')); p['x']+=1;"
        " json.dump(p, open('params.json','w'));"
        " os.environ['ANCHOR_ATTEMPT']=='2' and open('README.md','a').write('sneaky')\""
    )
    search = Search(
        repo,
        contract(),
        "ab" * 32,
        ledger,
        tmp_path / "work",
        CommandProposer(agent, ("params.json",)),
        "r0",
        SearchLimits(max_attempts=3, budget_s=300, max_consecutive_failures=5),
    )
    summary = search.run()
    assert [e["metric"]["value"] for e in ledger.entries()] == ["1", "2", "3"]
    assert summary.rejected == 1 and "README.md" in summary.rejections[0]
    assert (repo.path / "README.md").read_text() == "a search\n"


def test_a_rerun_never_deletes_untracked_files_or_resets_uncommitted_edits_it_did_not_make(tmp_path: Path) -> None:
    """The first-hour data loss: a re-run ran `git clean -fdq` over the user's repository."""
    search, ledger = _search(tmp_path, 1, [2, 0.5])
    search.run()
    repo = search.repo.path
    (repo / "notes.txt").write_text("my notes")
    (repo / "params.json").write_text(json.dumps({"x": 42}))  # an uncommitted edit of the editable
    again = Search(
        search.repo,
        search.contract,
        search.contract_digest,
        ledger,
        search.workdir,
        ScriptedProposer([7]),
        "r0",
        SearchLimits(max_attempts=10, budget_s=300, max_consecutive_failures=10),
    )
    with pytest.raises(GuardError) as refused:
        again.run()
    assert "notes.txt" in refused.value.message
    assert (repo / "notes.txt").read_text() == "my notes"
    assert json.loads((repo / "params.json").read_text()) == {"x": 42}
    assert len(ledger.entries()) == 3  # nothing measured
    (repo / "params.json").write_text(json.dumps({"x": 2}))  # the user undoes the edit, keeps the notes
    with pytest.raises(GuardError, match="notes.txt"):
        again.run()
    assert (repo / "notes.txt").read_text() == "my notes"


def test_the_reset_removes_only_what_the_attempt_created(tmp_path: Path) -> None:
    """Ignored files and files present before the attempt stay; the attempt's litter (and its new,
    now empty, directories) go."""
    command = (
        "python3 -c \"import json,os,sys; x=json.load(open('params.json'))['x'];"
        " os.makedirs('out/deep', exist_ok=True); open('out/deep/litter.tmp','w').write('stray');"
        " open('cache.ignored','w').write('kept');"
        " open(sys.argv[1]+'/metrics.jsonl','a').write(json.dumps({'score': x})+chr(10))\" {run_dir}"
    )
    search, ledger = _search(tmp_path, 1, [0.5], command=command)
    repo = search.repo.path
    (repo / ".gitignore").write_text("*.ignored\n")
    search.repo.git("add", ".gitignore")
    search.repo.git(
        "commit",
        "-qm",
        "ignore",
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@x",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@x",
        },
    )
    search.run()
    assert not (repo / "out").exists() and (repo / "cache.ignored").read_text() == "kept"
    assert search.repo.dirty() == [] and not search.marker.exists()


def test_every_measured_commit_survives_git_gc_under_refs_anchor(tmp_path: Path) -> None:
    """Losers are reset away, but their commits are evidence: a ref per ledger entry keeps each one
    reachable through `git gc --prune=now` (and pushable)."""
    import subprocess

    search, ledger = _search(tmp_path, 1, [2, 0.5, 0.7, 3], mode="max")
    search.run()
    repo = search.repo.path
    subprocess.run(["git", "-C", str(repo), "reflog", "expire", "--expire=now", "--all"], check=True)
    subprocess.run(["git", "-C", str(repo), "gc", "--prune=now", "--quiet"], check=True)
    for entry in ledger.entries():
        found = subprocess.run(["git", "-C", str(repo), "cat-file", "-e", entry["commit"] + "^{commit}"])
        assert found.returncode == 0, f"seq {entry['seq']} ({'kept' if entry['kept'] else 'loser'}) was collected"
    refs = subprocess.run(["git", "-C", str(repo), "for-each-ref", "refs/anchor/"], capture_output=True, text=True)
    assert len(refs.stdout.splitlines()) == len(ledger.entries())


# x < 1.5: the attempt allocates 1 GiB; 1.5 <= x < 2.5: it writes 40 MB into its run dir; else it scores x
GREEDY = (
    "python3 -c \"import json,sys; x=json.load(open('params.json'))['x'];"
    " big = bytearray(1 << 30) if x < 1.5 else None;"
    " open(sys.argv[1]+'/fill.bin','wb').write(b'0' * 40_000_000) if x < 2.5 else None;"
    " open(sys.argv[1]+'/metrics.jsonl','a').write(json.dumps({'score': x})+chr(10))\" {run_dir}"
)


def test_an_attempt_past_its_memory_or_run_dir_limit_fails_naming_it_and_the_search_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No memory or disk bound held an attempt once. Now each crossing ends that attempt as failed
    with the limit named in its ledger entry, and the next attempt runs as usual."""
    monkeypatch.setenv("ANCHOR_ATTEMPT_MEMORY_BYTES", str(512 << 20))
    monkeypatch.setenv("ANCHOR_ATTEMPT_RUN_DIR_BYTES", str(20 << 20))
    search, ledger = _search(tmp_path, 3, [1, 2, 4], command=GREEDY)
    search.run()
    entries = ledger.entries()
    assert [e["status"] for e in entries] == ["completed", "failed", "failed", "completed"]
    assert entries[1]["limit"] == {"name": "memory", "bound": 512 << 20}
    assert entries[2]["limit"] == {"name": "disk", "bound": 20 << 20}
    assert "limit" not in entries[3] and entries[3]["metric"]["value"] == "4" and entries[3]["kept"]


FORKS = (
    "python3 -c \"import json, os, sys, time; x=json.load(open('params.json'))['x'];"
    " children = [os.fork() or time.sleep(30) for _ in range(64)] if x < 1.5 else None;"
    " open(sys.argv[1]+'/metrics.jsonl','a').write(json.dumps({'score': x})+chr(10))\" {run_dir}"
)


def test_an_attempt_past_its_process_bound_fails_naming_it_even_under_root_and_the_search_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RLIMIT_NPROC does not bind root (CI, containers), so an attempt's fork flood reached the
    host's process table. Its own pids cgroup refuses the 17th process: the attempt fails naming the
    limit, none of its processes outlives it, and the next attempt runs as usual."""
    from anchor.fence.cgroups import CommandGroup

    probe = CommandGroup.create(16, 1 << 30)
    probe.close()
    # never skipped: a machine where no process bound can be set (root without a writable pids cgroup)
    # is one where the fence does not hold, and this test says so by failing
    assert probe.processes_enforced or os.geteuid() != 0, "no writable pids cgroup and running as root: no bound"
    monkeypatch.setenv("ANCHOR_ATTEMPT_PROCESSES", "16")
    search, ledger = _search(tmp_path, 3, [1, 4], command=FORKS)
    search.run()
    entries = ledger.entries()
    assert [e["status"] for e in entries] == ["completed", "failed", "completed"]
    assert entries[1]["limit"] == {"name": "processes", "bound": 16}
    assert "limit" not in entries[2] and entries[2]["metric"]["value"] == "4" and entries[2]["kept"]
    if probe.group is not None:
        assert not probe.group.exists()  # and every attempt's own group is gone with it
        assert not list(probe.group.parent.glob(f"anchor-{os.getpid()}-*"))
        # a group a SIGKILLed harness left (its pid gone, the group empty) is removed by the next one
        dead = next(pid for pid in range(4_194_000, 4_194_304) if not Path(f"/proc/{pid}").exists())
        stale = probe.group.parent / f"anchor-{dead}-0"
        stale.mkdir()
        CommandGroup.create(1, 1 << 30).close()
        assert not stale.exists()


def _cli_search(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A repository, its contract (score = x) and an environment of its own, for `anchor research run`."""
    from tests.research.helpers import SCORE_IS_X

    repo = params_repo(tmp_path / "repo", 1)
    spec = tmp_path / "contract.toml"
    spec.write_text(
        f'task = "t"\ncommand = {json.dumps(SCORE_IS_X)}\neditable = ["params.json"]\nmetric = "score"\n'
        'mode = "max"\nattempt_timeout_minutes = 1\ngrace_seconds = 1\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env["ANCHOR_DATA_DIR"] = str(tmp_path / "data")
    return repo, spec, env


def test_research_report_counts_the_reformatting_proposals_as_rejected_not_as_trials(tmp_path: Path) -> None:
    """As a user runs it: a --propose command that only pretty-prints params.json. The ledger's
    only measured attempt is the baseline, and `research report` names the rejections and their reason."""
    from anchor.errors import ExitCode
    from tests.cli import run_anchor

    repo, spec, env = _cli_search(tmp_path)
    pretty = "python3 -c \"import json; json.dump(json.load(open('params.json')), open('params.json', 'w'), indent=4)\""
    ran = run_anchor(
        [
            "--json",
            "research",
            "run",
            "--repo",
            str(repo),
            "--contract",
            str(spec),
            "--no-anchor",
            "--max-failures",
            "3",
            "--propose",
            pretty,
        ],
        env,
    )
    assert ran.returncode == ExitCode.OK, ran.stdout + ran.stderr
    [summary] = json.loads(ran.stdout)["researchers"]
    assert summary["measured"] == 1 and summary["rejected"] == 3
    assert summary["stopped_because"] == "3 consecutive failures (3 rejected proposals, 0 failed runs)"
    report = run_anchor(["--json", "research", "report"], env)
    assert report.returncode == ExitCode.OK, report.stdout + report.stderr
    mine = json.loads(report.stdout)["researchers"]["r0"]
    assert mine["attempts"] == 1 and mine["rejected"] == {"no change": 3}
    text = run_anchor(["research", "report"], env).stdout
    assert "r0: 3 proposals rejected, never measured: 3 no change" in text


def test_research_run_says_why_its_proposals_were_rejected_a_proposer_that_cannot_start_among_them(
    tmp_path: Path,
) -> None:
    """A mistyped `--propose` command (not found, exit 127) ended with "rejected 2 (proposals that changed
    nothing or repeated a scored commit: never run)": a fixed gloss, wrong here. The run's summary counts
    its rejections by reason, as the report does, and quotes the proposer's last failure."""
    from anchor.errors import ExitCode
    from tests.cli import run_anchor

    repo, spec, env = _cli_search(tmp_path)
    ran = run_anchor(
        [
            "research",
            "run",
            "--repo",
            str(repo),
            "--contract",
            str(spec),
            "--no-anchor",
            "--max-failures",
            "2",
            "--propose",
            "no-such-proposer --model x",
        ],
        env,
    )
    assert ran.returncode == ExitCode.OK, ran.stdout + ran.stderr
    first = ran.stdout.splitlines()[0]
    assert "rejected 2 (never run: 2 the proposer failed; the last: the proposer exited with status 127" in first, first
    assert "no-such-proposer" in first and "changed nothing or repeated" not in first, first
