"""`keep = "noise"`: the baseline re-measured `noise_replications` times, a candidate
kept only past `noise_sigmas` x their spread; the figures in every record after the calibration, and
`research verify` recomputing them and replaying every keep decision."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from anchor.errors import BadInput, Tampered
from anchor.fence.git import Repo
from anchor.manifest.attempt import KeepRule
from anchor.research.contract import AttemptContract
from anchor.research.ledger import Ledger
from anchor.research.loop import Search, SearchLimits
from anchor.research.noise import NOISE, check_noise, keep_rule_of
from tests.research.helpers import ScriptedProposer, make_repo

# score = x; the i-th noise run of the baseline adds 0.01 x i (re-runs differ, as real ones do)
PROBE = r"""
import json, sys
run_dir, run_name = sys.argv[1:3]
x = json.load(open("params.json"))["x"]
if "noise" in run_name:
    x += 0.01 * int(run_name[-1])
open(run_dir + "/metrics.jsonl", "a").write(json.dumps({"score": x}) + "\n")
"""


def _terms(**given: object) -> AttemptContract:
    fields: dict[str, object] = {
        "task": "t",
        "command": "python3 probe.py {run_dir} {run_name}",
        "editable": ("params.json",),
        "metric": "score",
        "mode": "max",
        "attempt_timeout_minutes": 1,
        "grace_seconds": 0.5,
        "keep": "noise",
        "noise_replications": 3,
        "noise_sigmas": 2.0,
    }
    return AttemptContract.model_validate(fields | given)


def test_the_rule_is_the_spread_of_the_baseline_re_runs_times_sigmas_and_never_below_min_improvement() -> None:
    rule = keep_rule_of(["1", "1.01", "1.02"], _terms())
    assert rule == {"rule": "noise", "replications": 3, "spread": "0.01", "sigmas": "2", "threshold": "0.02"}
    assert keep_rule_of(["1", "1.01", "1.02"], _terms(min_improvement=0.05))["threshold"] == "0.05"
    KeepRule.model_validate(rule)
    with pytest.raises(ValueError, match="below sigmas x spread"):
        KeepRule.model_validate({**rule, "threshold": "0.01"})
    with pytest.raises(ValueError):
        _terms(noise_replications=1)  # one re-run has no spread


def test_a_noise_search_keeps_only_past_the_threshold_records_it_and_verify_replays_it(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"params.json": json.dumps({"x": 1}), "probe.py": PROBE})
    work = tmp_path / "work"
    ledger = Ledger(work / "ledger.jsonl")
    # 1.015 beats the baseline by 0.015: kept under the default rule, within the noise here (threshold 0.02)
    search = Search(
        Repo(repo),
        _terms(),
        "ab" * 32,
        ledger,
        work,
        ScriptedProposer([1.015, 1.5, 1.51]),
        "r0",
        SearchLimits(4, 300, 5),
    )
    search.run()
    rows = ledger.rows()
    (calibration,) = [r for r in rows if r.get("event") == NOISE]
    assert [r["metric"]["value"] for r in calibration["runs"]] == ["1", "1.01", "1.02"]
    assert (calibration["spread"], calibration["threshold"]) == ("0.01", "0.02")
    attempts = [r for r in rows if "event" not in r]
    assert [(a["metric"]["value"], a["kept"]) for a in attempts] == [
        ("1", True),
        ("1.015", False),
        ("1.5", True),
        ("1.51", False),
    ]
    assert attempts[0]["version"] == 4 and "keep_rule" not in attempts[0]  # the baseline, judged by nothing
    rule = {"rule": "noise", "replications": 3, "spread": "0.01", "sigmas": "2", "threshold": "0.02"}
    assert all(a["version"] == 5 and a["keep_rule"] == rule for a in attempts[1:])
    assert check_noise(work, rows, _terms()) == {"r0": rule}

    # a lowered threshold (the chain rewritten to match) is recomputed from the bound runs and named
    lowered = [{**r, "threshold": "0.001"} if r.get("event") == NOISE else r for r in rows]
    with pytest.raises(Tampered, match="its bound runs give spread 0.01, threshold 0.02"):
        check_noise(work, lowered, _terms())
    # an attempt kept within the noise (its record edited to match) is caught by the replay
    kept_anyway = [{**r, "kept": True} if r.get("seq") == attempts[1]["seq"] else r for r in rows]
    with pytest.raises(Tampered, match="kept is True, but against champion 1 and threshold 0.02"):
        check_noise(work, kept_anyway, _terms())
    # a noise run's metrics edited after the fact: its run dir no longer hashes to the bound evidence
    run = work / "runs" / "r0" / f"{attempts[0]['commit']}.noise" / "noise-2" / "metrics.jsonl"
    run.write_text(run.read_text().replace("1.02", "1.001"))
    with pytest.raises(Tampered, match="noise run 2"):
        check_noise(work, rows, _terms())


def test_a_resumed_noise_search_keeps_its_first_calibration(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"params.json": json.dumps({"x": 1}), "probe.py": PROBE})
    work = tmp_path / "work"
    ledger = Ledger(work / "ledger.jsonl")
    Search(Repo(repo), _terms(), "ab" * 32, ledger, work, ScriptedProposer([1.5]), "r0", SearchLimits(2, 300, 5)).run()
    Search(Repo(repo), _terms(), "ab" * 32, ledger, work, ScriptedProposer([1.6]), "r0", SearchLimits(3, 300, 5)).run()
    assert sum(1 for r in ledger.rows() if r.get("event") == NOISE) == 1
    assert [a["kept"] for a in ledger.entries()] == [True, True, True]


def test_a_contract_asking_an_unknown_keep_rule_is_refused_by_name(tmp_path: Path) -> None:
    from anchor.research.contract import load_contract

    path = tmp_path / "contract.toml"
    path.write_text(
        'task = "t"\ncommand = "x"\neditable = ["p.json"]\nmetric = "m"\nmode = "max"\n'
        'attempt_timeout_minutes = 1\nkeep = "lucky"\n'
    )
    with pytest.raises(BadInput, match="keep"):
        load_contract(path)
