"""Evidence bound to the metric: each attempt manifest binds its run dir, `research verify`
re-hashes it and re-reads the metric from the bound file, and every measured commit is found again."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from anchor.errors import Tampered
from anchor.fence.git import Repo
from anchor.manifest.filetree import hash_tree
from anchor.research.anchoring import attempt_of
from anchor.research.audit import audit
from anchor.research.evidence import run_dir_of
from anchor.research.ledger import Ledger
from anchor.research.loop import Search, SearchLimits
from tests.research.helpers import SCORE_IS_X, ScriptedProposer, contract, params_repo

pytestmark = pytest.mark.sandbox  # runs attempts, proposers or evaluators as processes (bubblewrap)


def _searched(tmp_path: Path, values: list[Any], command: str = SCORE_IS_X) -> tuple[Search, Ledger, Path]:
    repo = Repo(params_repo(tmp_path / "repo", 1))
    work = tmp_path / "work"
    terms = contract(command=command)
    work.mkdir(parents=True)
    (work / "contract.toml").write_text(
        f'task = "test"\ncommand = {json.dumps(command)}\neditable = ["params.json"]\nmetric = "score"\n'
        'mode = "max"\nattempt_timeout_minutes = 1\ngrace_seconds = 0.5\n'
    )
    ledger = Ledger(work / "ledger.jsonl")
    search = Search(
        repo,
        terms,
        "ab" * 32,
        ledger,
        work,
        ScriptedProposer(values),
        "r0",
        SearchLimits(max_attempts=len(values) + 1, budget_s=300, max_consecutive_failures=10),
    )
    search.run()
    return search, ledger, work


def test_every_attempt_manifest_binds_its_run_dir_and_how_it_ran(tmp_path: Path) -> None:
    _, ledger, work = _searched(tmp_path, [2, 0.5])
    for entry in ledger.entries():
        manifest = attempt_of(entry)
        assert manifest.version == 4 and manifest.sandbox == "none" and manifest.environment is not None
        run_dir = run_dir_of(work, "r0", entry["commit"])
        bound = hash_tree(run_dir, symlinks="record")
        assert manifest.evidence == bound.digest.hex()
        assert {f.path for f in bound.files} >= {"code.diff", "metrics.jsonl", "stdout.log", "stderr.log"}
    checked = audit(ledger.entries(), work, None)
    assert (checked.commits, checked.evidence, checked.legacy) == (3, 3, 0)


def test_an_edited_metric_file_is_named_with_its_seq(tmp_path: Path) -> None:
    _, ledger, work = _searched(tmp_path, [2, 0.5])
    loser = ledger.entries()[2]
    metrics = run_dir_of(work, "r0", loser["commit"]) / "metrics.jsonl"
    metrics.write_text(json.dumps({"score": 9}) + "\n")  # the operator "improves" a loser afterwards
    with pytest.raises(Tampered) as info:
        audit(ledger.entries(), work, None)
    assert info.value.detail["seq"] == loser["seq"] and info.value.detail["files"] == ["metrics.jsonl"]


def test_a_deleted_log_or_run_dir_is_named(tmp_path: Path) -> None:
    _, ledger, work = _searched(tmp_path, [2])
    baseline = ledger.entries()[0]
    first = run_dir_of(work, "r0", baseline["commit"])
    (first / "stderr.log").unlink()
    with pytest.raises(Tampered) as info:
        audit(ledger.entries(), work, None)
    assert info.value.detail == {"seq": baseline["seq"], "run_dir": str(first), "files": ["stderr.log"]}
    import shutil

    shutil.rmtree(first)
    with pytest.raises(Tampered, match=f"seq {baseline['seq']}: the evidence of this attempt .* is missing"):
        audit(ledger.entries(), work, None)


def test_a_rewritten_metric_with_a_rehashed_ledger_still_disagrees_with_the_bound_evidence(tmp_path: Path) -> None:
    """The metric the ledger says must be the one the bound file gives: re-read, never adopted."""
    from anchor.research.evidence import check

    _, ledger, work = _searched(tmp_path, [2])
    entry = dict(ledger.entries()[1])
    entry["metric"] = {**entry["metric"], "value": "7"}
    with pytest.raises(Tampered, match=f"seq {entry['seq']}: the bound metric file gives score=2, the ledger says 7"):
        check(entry, run_dir_of(work, "r0", entry["commit"]), "jsonl:metrics.jsonl")


def test_after_git_gc_verify_still_finds_every_measured_commit_and_its_diff(tmp_path: Path) -> None:
    search, ledger, work = _searched(tmp_path, [2, 0.5, 0.7, 3])
    repo = search.repo.path
    subprocess.run(["git", "-C", str(repo), "reflog", "expire", "--expire=now", "--all"], check=True)
    subprocess.run(["git", "-C", str(repo), "gc", "--prune=now", "--quiet"], check=True)
    assert audit(ledger.entries(), work, None).commits == 5
    # without the refs, the losers go at the next gc, and verify names the first one missing
    refs = subprocess.run(
        ["git", "-C", str(repo), "for-each-ref", "--format=%(refname)", "refs/anchor/"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    for ref in refs:
        subprocess.run(["git", "-C", str(repo), "update-ref", "-d", ref], check=True)
    subprocess.run(["git", "-C", str(repo), "gc", "--prune=now", "--quiet"], check=True)
    with pytest.raises(Tampered) as info:
        audit(ledger.entries(), work, None)
    assert info.value.detail["seq"] == ledger.entries()[2]["seq"]  # the first loser (0.5)


def test_a_hostile_run_dir_cannot_hang_the_harness_or_point_the_metric_elsewhere(tmp_path: Path) -> None:
    """A FIFO where the metric should be would block a naive reader forever; a link would make the
    harness read a file of the attacker's choosing. Neither is followed: the attempt fails, the FIFO is
    removed and named, the link is recorded as a link."""
    secret = tmp_path / "secret.jsonl"
    secret.write_text(json.dumps({"score": 1000}) + "\n")
    command = f"mkfifo {{run_dir}}/metrics.jsonl; ln -s {secret} {{run_dir}}/claims.json"
    _, ledger, work = _searched(tmp_path, [], command=command)
    [entry] = ledger.entries()
    assert entry["status"] == "failed" and "metric" not in entry
    assert entry["evidence_removed"] == ["metrics.jsonl"]
    run_dir = run_dir_of(work, "r0", entry["commit"])
    assert not os.path.lexists(run_dir / "metrics.jsonl") and (run_dir / "claims.json").is_symlink()
    assert json.loads(entry["claims"]) == {"unreadable": True}
    assert audit(ledger.entries(), work, None).evidence == 1


def test_the_metric_reader_refuses_links_fifos_and_oversized_files(tmp_path: Path) -> None:
    from anchor.research import metrics

    run = tmp_path / "run"
    run.mkdir()
    (tmp_path / "real.jsonl").write_text('{"score": 5}\n')
    (run / "sub").symlink_to(tmp_path)
    assert metrics.read_metric(run, "jsonl:sub/real.jsonl", "score") is None  # a linked directory
    (run / "m.jsonl").symlink_to(tmp_path / "real.jsonl")
    assert metrics.read_metric(run, "jsonl:m.jsonl", "score") is None
    os.mkfifo(run / "f.jsonl")
    assert metrics.read_metric(run, "jsonl:f.jsonl", "score") is None  # returns at once, does not block
    big = run / "big.jsonl"
    with open(big, "wb") as out:
        out.truncate(metrics.MAX_METRIC_FILE + 1)
    assert metrics.read_metric(run, "jsonl:big.jsonl", "score") is None
    (run / "ok.jsonl").write_text('{"score": 5}\n')
    assert metrics.read_metric(run, "jsonl:ok.jsonl", "score") == "5"
