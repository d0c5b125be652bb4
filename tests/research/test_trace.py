"""Every attempt leaves a trace: a `started` row before its command runs, its outcome after;
an attempt whose harness died in between is closed as `interrupted` when the search starts again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from anchor.fence.git import Repo
from anchor.manifest.attempt import AttemptManifest
from anchor.research import loop
from anchor.research.evidence import check, evidence_dir_of
from anchor.research.ledger import Ledger
from anchor.research.loop import Search, SearchLimits
from tests.research.helpers import ScriptedProposer, contract, params_repo

pytestmark = pytest.mark.sandbox  # runs attempts, proposers or evaluators as processes (bubblewrap)


class HarnessDied(BaseException):
    """What the harness's death looks like from inside: nothing after this point runs."""


def _search(tmp_path: Path, values: list[Any], attempts: int) -> Search:
    repo = Repo(tmp_path / "repo") if (tmp_path / "repo").exists() else Repo(params_repo(tmp_path / "repo", 0.5))
    return Search(
        repo,
        contract(),
        "ab" * 32,
        Ledger(tmp_path / "work" / "ledger.jsonl"),
        tmp_path / "work",
        ScriptedProposer(values),
        "r0",
        SearchLimits(max_attempts=attempts, budget_s=300, max_consecutive_failures=10),
    )


def _die_when(monkeypatch: pytest.MonkeyPatch, x: float) -> None:
    """The harness dies while the attempt with params x is running (its trace written, no outcome)."""
    real = loop.run_command

    def run_command(command: str, cwd: Path, *args: Any, **kwargs: Any) -> Any:
        if json.loads((cwd / "params.json").read_text())["x"] == x:
            monkeypatch.setattr(loop, "run_command", real)  # dies once
            raise HarnessDied
        return real(command, cwd, *args, **kwargs)

    monkeypatch.setattr(loop, "run_command", run_command)


def test_an_attempt_whose_harness_died_mid_run_is_closed_as_interrupted_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _die_when(monkeypatch, 0.7)
    with pytest.raises(HarnessDied):
        _search(tmp_path, [0.6, 0.7], attempts=5).run()
    ledger = Ledger(tmp_path / "work" / "ledger.jsonl")
    rows = ledger.rows()
    assert [r.get("event", r.get("status")) for r in rows] == [
        "started",
        "completed",
        "started",
        "completed",
        "started",
    ]
    assert rows[-1]["started_at"].endswith("+00:00") and [e["metric"]["value"] for e in ledger.entries()] == [
        "0.5",
        "0.6",
    ]

    summary = _search(tmp_path, [0.8, 0.9], attempts=5).run()
    assert summary.interrupted == 1
    entries = ledger.entries()
    assert [e["status"] for e in entries] == ["completed", "completed", "interrupted", "completed", "completed"]
    closed = entries[2]
    assert closed["started_seq"] == rows[-1]["seq"] and closed["commit"] == rows[-1]["commit"]
    assert closed["kept"] is False and "metric" not in closed and closed["metric_hash"] == "00" * 32
    manifest = AttemptManifest.model_validate({k: closed[k] for k in AttemptManifest.model_fields if k in closed})
    assert manifest.status == "interrupted" and manifest.digest.hex() == closed["attempt_digest"]
    # the champion never moved to the interrupted attempt, and the search went on from the last one
    assert [e["kept"] for e in entries] == [True, True, False, True, True]
    assert entries[3]["parent"] == entries[1]["commit"]
    # its run dir, as far as it got, is bound and re-checkable
    run_dir = evidence_dir_of(tmp_path / "work", closed)
    assert (run_dir / "code.diff").is_file()
    check(closed, run_dir, "jsonl:metrics.jsonl")
    ledger.verify()
    # a third start finds nothing left open
    assert _search(tmp_path, [], attempts=5).close_interrupted() == 0


def test_a_baseline_whose_harness_died_is_measured_again_and_both_stay_on_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _die_when(monkeypatch, 0.5)
    with pytest.raises(HarnessDied):
        _search(tmp_path, [], attempts=3).run()
    summary = _search(tmp_path, [0.6], attempts=3).run()
    entries = Ledger(tmp_path / "work" / "ledger.jsonl").entries()
    assert [(e["status"], e.get("metric", {}).get("value")) for e in entries] == [
        ("interrupted", None),
        ("completed", "0.5"),
        ("completed", "0.6"),
    ]
    assert entries[0]["commit"] == entries[1]["commit"] and summary.champion == entries[2]["commit"]
    for entry in entries:  # two run dirs for one commit: the interrupted one kept aside
        check(entry, evidence_dir_of(tmp_path / "work", entry), "jsonl:metrics.jsonl")
