"""Honest final numbers: after the search stops, the harness re-measures the
champion `replications` times and runs the holdout once; attempts never see the holdout data (in the
sandbox), the holdout run does; the champion record binds all of it to the trials it was selected from."""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path

import pytest

from anchor.fence.git import Repo
from anchor.fence.sandbox import Sandbox
from anchor.manifest.champion import ChampionManifest, statistics
from anchor.manifest.decode import validate_identity
from anchor.research.contract import AttemptContract
from anchor.research.evidence import run_dir_of
from anchor.research.final import evaluate_champion, expected_max, latest_record, selection_adjusted
from anchor.research.ledger import Ledger
from anchor.research.loop import Search, SearchLimits
from tests.research.helpers import ScriptedProposer, make_repo

pytestmark = pytest.mark.sandbox  # runs attempts, proposers or evaluators as processes (bubblewrap)

# score = x, plus 0.1 x i on the i-th replication (re-runs differ, as real ones do); records whether the
# holdout file was readable from where the attempt ran
PROBE = r"""
import json, sys
run_dir, run_name, holdout = sys.argv[1:4]
x = json.load(open("params.json"))["x"]
if "replication" in run_name:
    x += 0.1 * int(run_name[-1])
try:
    seen = open(holdout).read()
except OSError:
    seen = ""
open(run_dir + "/saw.txt", "w").write(seen)
open(run_dir + "/metrics.jsonl", "a").write(json.dumps({"score": x}) + "\n")
"""
HOLDOUT = r"""
import json, sys
run_dir, holdout = sys.argv[1:3]
open(run_dir + "/metrics.jsonl", "w").write(json.dumps({"score": float(open(holdout).read())}) + "\n")
"""


def _search(tmp_path: Path, sandboxed: bool) -> tuple[Search, Sandbox | None]:
    holdout = tmp_path / "holdout" / "answer.txt"
    holdout.parent.mkdir()
    holdout.write_text("0.25")
    repo = make_repo(tmp_path / "repo", {"params.json": json.dumps({"x": 1}), "probe.py": PROBE, "holdout.py": HOLDOUT})
    terms = AttemptContract(
        task="t",
        command=f"python3 probe.py {{run_dir}} {{run_name}} {holdout}",
        editable=("params.json",),
        metric="score",
        mode="max",
        attempt_timeout_minutes=1,
        grace_seconds=0.5,
        replications=3,
        holdout_command=f"python3 holdout.py {{run_dir}} {holdout}",
        holdout_data=(str(holdout.parent),),
    )
    work = tmp_path / "work"
    box = Sandbox.find(repo, terms.editable, (work,), terms.hidden_data(repo)) if sandboxed else None
    search = Search(
        Repo(repo),
        terms,
        "ab" * 32,
        Ledger(work / "ledger.jsonl"),
        work,
        ScriptedProposer([2, 1.5, 3]),
        "r0",
        SearchLimits(4, 300, 5),
        sandbox=box,
    )
    return search, box


def test_the_holdout_is_hidden_from_attempts_and_the_champion_is_replicated_and_held_out(tmp_path: Path) -> None:
    search, box = _search(tmp_path, sandboxed=True)
    assert box is not None
    search.run()
    for entry in search.ledger.entries():  # no attempt could read the holdout data
        assert (run_dir_of(search.workdir, "r0", entry["commit"]) / "saw.txt").read_text() == ""
    record = evaluate_champion(search, box.revealing())
    assert record is not None
    assert record.metric.value == "3" and record.trials == 4
    assert record.ledger_length == len(search.ledger.rows()) == 8  # the head it names counts the traces too
    assert [r.metric.value for r in record.replications if r.metric] == ["3", "3.1", "3.2"]
    assert (record.mean, record.stdev) == ("3.1", "0.1")
    assert record.holdout is not None and record.holdout.metric is not None
    assert record.holdout.metric.value == "0.25"  # the holdout run saw what the attempts could not
    assert json.loads((search.repo.path / "params.json").read_text()) == {"x": 3}
    assert search.repo.dirty() == []
    # once per (champion, trials): evaluating again reuses the record, runs nothing
    path = latest_record(search.workdir, "r0", record.commit)
    assert path is not None and evaluate_champion(search, box.revealing()) == record
    assert validate_identity(json.loads(path.read_text())["manifest"]) == record.identity()


def test_the_holdout_gets_its_n_its_interval_and_its_datas_digest_in_a_version_3_record(tmp_path: Path) -> None:
    """The holdout is reported as the selection metric is. Its n is the contract's
    `holdout_examples` (else the evaluator's count), its 95% interval a Wilson one for a share, and the
    record binds the file-tree digest of the holdout data it ran on; research verify recomputes both."""
    from anchor.manifest.filetree import hash_tree
    from anchor.research.final import final_line, summary
    from anchor.research.verdict import champion_records_hold
    from tests.reference_impl import wilson_bounds

    search, _ = _search(tmp_path, sandboxed=False)
    search.contract = search.contract.model_copy(update={"holdout_examples": 400, "metric_kind": "proportion"})
    search.run()
    record = evaluate_champion(search, None)
    assert record is not None and record.version == 3
    assert (record.holdout_examples, record.holdout_examples_source) == (400, "contract")
    assert record.holdout_interval is not None and record.holdout_interval.method == "wilson"
    bounds = wilson_bounds("0.25", 400)  # docs/manifest.md's formula, implemented apart (tests/reference_impl.py)
    assert (record.holdout_interval.low, record.holdout_interval.high) == bounds
    data = tmp_path / "holdout"
    digest = hash_tree(data).digest.hex()
    assert [d.model_dump() for d in record.holdout_data] == [{"path": str(data), "digest": digest}]
    said = final_line(summary(record))
    assert "holdout 0.25 (n=400 examples (declared in the contract" in said and f"[{bounds[0]}, {bounds[1]}]" in said
    assert "replicated 3x: mean 3.1 ± 0.1 (sample stdev), 95% interval [3, 3.2] (percentile bootstrap over 3" in said
    # research verify recomputes the holdout's figures from its bound run dir: a record that lies is named
    (search.workdir / "contract.toml").write_text(
        'task = "t"\ncommand = "x"\neditable = ["params.json"]\n'
        'metric = "score"\nmode = "max"\nattempt_timeout_minutes = 1\n'
        'holdout_examples = 400\nmetric_kind = "proportion"\n'
    )
    entries = search.ledger.entries()
    assert champion_records_hold(search.workdir, entries, entries) == 4
    path = latest_record(search.workdir, "r0", record.commit)
    assert path is not None
    lying = record.model_copy(update={"holdout_examples": 4000, "holdout_interval": None}).identity()
    path.write_text(json.dumps({"manifest": lying}))  # no proof beside it: the record as written is checked
    from anchor.errors import Tampered

    with pytest.raises(Tampered, match="holdout_examples is 4000, but recomputed from the holdout's run dir"):
        champion_records_hold(search.workdir, entries, entries)


def test_a_version_3_records_holdout_fields_are_checked_on_decoding() -> None:
    from anchor.errors import BadInput
    from tests.reference_impl import wilson_bounds

    run = {"status": "completed", "evidence": "20" * 32, "metric": {"name": "acc", "mode": "max", "value": "0.25"}}
    low, high = wilson_bounds("0.25", 400)
    v3 = {
        "kind": "champion",
        "version": 3,
        "researcher": "r0",
        "contract_digest": "55" * 32,
        "commit": "a1" * 20,
        "attempt_digest": "88" * 32,
        "metric": {"name": "acc", "mode": "max", "value": "0.3"},
        "trials": 6,
        "team_trials": 6,
        "ledger_head": "99" * 32,
        "ledger_length": 40,
        "replications": [],
        "holdout": run,
        "holdout_examples": 400,
        "holdout_examples_source": "contract",
        "holdout_interval": {"method": "wilson", "level": "0.95", "low": low, "high": high},
        "holdout_data": [{"path": "holdout", "digest": "66" * 32}],
        "environment": {
            "interpreter": "CPython 3.11.7",
            "lock": {"source": "requirements.lock", "digest": "4c" * 32},
            "host": "40" * 32,
            "inputs": [],
        },
    }
    assert ChampionManifest.model_validate(validate_identity(v3)).holdout_examples == 400
    moved = {**v3, "holdout_interval": {**v3["holdout_interval"], "low": "0.2"}}  # type: ignore[dict-item]
    for bad, why in (
        (moved, "holdout_interval: the Wilson bounds"),
        ({**v3, "holdout_examples_source": None}, "come together"),
        ({**v3, "version": 2}, "version 3"),
        ({**v3, "holdout": {**run, "status": "failed", "metric": None}}, "completed holdout only"),
    ):
        with pytest.raises(BadInput, match=why):
            validate_identity({k: v for k, v in bad.items() if v is not None})


def test_the_selection_adjusted_figure_is_the_metric_less_the_expected_maximum_of_the_noise(tmp_path: Path) -> None:
    search, _ = _search(tmp_path, sandboxed=False)
    search.run()
    record = evaluate_champion(search, None)
    assert record is not None
    # E[max of N standard normals], exact: 1.0294 (4), 2.5076 (100), 3.2414 (1000); the approximation
    # closes in as N grows (docs/research.md)
    assert expected_max(4) == pytest.approx(1.0294, rel=0.03) and expected_max(1) == 0
    assert expected_max(100) == pytest.approx(2.5076, rel=0.01)
    assert expected_max(1000) == pytest.approx(3.2414, rel=0.005)
    assert selection_adjusted(record) == pytest.approx(3 - 0.1 * expected_max(4))
    assert record.holdout is not None and record.holdout.metric is not None  # unconfined: read, as documented


def test_a_record_whose_statistics_do_not_follow_from_its_values_is_refused(tmp_path: Path) -> None:
    search, _ = _search(tmp_path, sandboxed=False)
    search.run()
    record = evaluate_champion(search, None)
    assert record is not None
    forged = {**record.identity(), "mean": "3.5"}
    with pytest.raises(Exception, match="mean and stdev must be"):
        validate_identity(forged)
    more_trials = {**record.identity(), "trials": 99}
    with pytest.raises(Exception, match="exceed the ledger"):
        ChampionManifest.model_validate(more_trials)


def test_statistics_are_exact_decimals() -> None:
    assert statistics([]) == (None, None)
    assert statistics(["0.1"]) == ("0.1", None)
    mean, stdev = statistics(["0.1", "0.2", "0.4"])
    assert mean == "0.233333333333333333"
    assert stdev is not None and float(stdev) == pytest.approx(
        math.sqrt(((0.1 - 7 / 30) ** 2 + (0.2 - 7 / 30) ** 2 + (0.4 - 7 / 30) ** 2) / 2)
    )


def test_a_figure_with_no_spread_says_no_adjustment_is_possible_instead_of_plus_or_minus_zero() -> None:
    """Three identical replications printed "± 0" and a "selection-adjusted" figure equal to the raw
    one, which reads more certain than it is; now the report says in words that no adjustment can be
    made, and the record gives none."""
    from anchor.research.final import final_line

    base = {"commit": "ab" * 20, "metric_name": "score", "metric": "0.82", "trials": 12, "holdout": None}
    flat = final_line(
        {
            **base,
            "replications": ["0.82"] * 3,
            "mean": "0.82",
            "stdev": "0",
            "selection_adjusted": None,
            "replication_interval": None,
        }
    )
    assert "± 0" not in flat and "no variance observed in 3 runs" in flat and "no selection adjustment possible" in flat
    assert "[" not in flat.split("no variance observed")[1].split(";")[0]  # no [x, x] beside it
    spread = final_line(
        {**base, "replications": ["0.8", "0.82", "0.84"], "mean": "0.82", "stdev": "0.02", "selection_adjusted": 0.79}
    )
    assert "± 0.02" in spread and "selection-adjusted 0.79" in spread and "no selection" not in spread


def test_the_selection_adjustment_of_a_record_without_spread_is_none(tmp_path: Path) -> None:
    search, _ = _search(tmp_path, sandboxed=False)
    search.run()
    record = evaluate_champion(search, None)
    assert record is not None and selection_adjusted(record) is not None  # 3, 3.1, 3.2: a spread
    flat = record.model_copy(update={"stdev": "0"})
    assert selection_adjusted(flat) is None


def test_the_adjustment_is_over_the_teams_trials_with_its_own_interval_or_says_why_there_is_none(
    tmp_path: Path,
) -> None:
    """The selection-adjusted figure once used one researcher's trial count, not the team's
    (`team_trials`), had no interval, and was silently absent with fewer than two replications."""
    from anchor.manifest.champion import Interval
    from anchor.research.final import adjusted_interval, no_adjustment, selected_from, summary

    search, _ = _search(tmp_path, sandboxed=False)
    search.run()
    record = evaluate_champion(search, None)
    assert record is not None and record.team_trials is not None
    alone = record.model_copy(update={"team_trials": record.trials})
    team = record.model_copy(update={"team_trials": record.trials * 25})  # the other researchers' trials too
    assert selected_from(team) == record.trials * 25 and selected_from(alone) == record.trials
    assert selection_adjusted(team) == pytest.approx(3 - 0.1 * expected_max(record.trials * 25))
    assert selection_adjusted(team) < selection_adjusted(alone)  # more trials behind it: a larger correction
    interval = Interval(method="wilson", low="2.9", high="3.1")
    within = adjusted_interval(team.model_copy(update={"interval": interval}))
    shift = selection_adjusted(team) - 3
    assert within is not None and float(within["low"]) == pytest.approx(2.9 + shift, abs=1e-6)
    assert float(within["high"]) == pytest.approx(3.1 + shift, abs=1e-6) and "shifted" in within["method"]
    one = record.model_copy(update={"replications": record.replications[:1], "mean": None, "stdev": None})
    assert no_adjustment(one) == (
        "no selection adjustment: it needs two or more completed replications to measure"
        " the noise, and this record has 1"
    )
    assert summary(team)["adjusted_over"] == record.trials * 25 and summary(one)["no_adjustment"] is not None


def test_identical_replications_get_no_interval_and_say_no_variance_was_observed(tmp_path: Path) -> None:
    """Three equal replications printed `[x, x]` beside "(no spread)": a zero-width interval reads as
    certainty where three runs only failed to show any variance. Now: no interval, in words, at every door."""
    from anchor.research.final import final_line, replication_interval, summary
    from anchor.research.tables import rows

    search, _ = _search(tmp_path, sandboxed=False)
    search.run()
    record = evaluate_champion(search, None)
    assert record is not None
    same = record.replications[0]
    flat = record.model_copy(update={"replications": (same, same, same), "mean": same.metric.value, "stdev": "0"})
    assert replication_interval(flat) is None
    said = final_line(summary(flat))
    assert "no variance observed in 3 runs" in said and "(no spread)" not in said and "[3, 3]" not in said
    table = dict(rows({"champion_metric": {"name": "score", "value": "3"}, "final": summary(flat)}))
    assert "no variance observed in 3 runs" in table["replications (3)"] and "CI" not in table["replications (3)"]


def test_the_replications_interval_is_a_seeded_bootstrap_that_names_its_method_resamples_and_seed(
    tmp_path: Path,
) -> None:
    from anchor.research.final import replication_interval

    search, _ = _search(tmp_path, sandboxed=False)
    search.run()
    record = evaluate_champion(search, None)
    assert record is not None
    within = replication_interval(record)
    assert within is not None and within == replication_interval(record)  # seeded: the same bounds every time
    assert (within["low"], within["high"]) == ("3", "3.2")  # resampled means of 3, 3.1, 3.2
    seed = record.digest.hex()
    assert within["method"] == f"percentile bootstrap over 3 replications, 2,000 resamples, seed {seed}"


MACRO_F1 = r"""
import json, sys
run_dir, run_name = sys.argv[1:3]
x = json.load(open("params.json"))["x"]
if "replication" in run_name:
    x += 0.01 * int(run_name[-1])
open(run_dir + "/metrics.jsonl", "a").write(json.dumps({"macro_f1": x / 10}) + "\n")
"""


def test_a_macro_f1_search_reports_a_bootstrap_over_replications_and_no_wilson(tmp_path: Path) -> None:
    """The figure is in [0, 1] and n is declared, which used to be enough for a Wilson interval; a
    macro-F1 is no share of rows right, and per-item scores are not kept here, so the report's
    interval is the bootstrap over the champion's replications, named with its resamples and seed."""
    from anchor.research.report import report_search
    from anchor.settings.session import Settings

    repo = make_repo(tmp_path / "repo", {"params.json": json.dumps({"x": 1}), "f1.py": MACRO_F1})
    terms = AttemptContract(
        task="t",
        command="python3 f1.py {run_dir} {run_name}",
        editable=("params.json",),
        metric="macro_f1",
        mode="max",
        attempt_timeout_minutes=1,
        grace_seconds=0.5,
        replications=3,
        eval_examples=150,
        holdout_command="python3 f1.py {run_dir} holdout",
        holdout_examples=400,
    )
    work = tmp_path / "work"
    (work).mkdir()
    (work / "contract.toml").write_text(
        'task = "t"\ncommand = "python3 f1.py {run_dir} {run_name}"\neditable = ["params.json"]\n'
        'metric = "macro_f1"\nmode = "max"\nattempt_timeout_minutes = 1\nreplications = 3\neval_examples = 150\n'
        'holdout_command = "python3 f1.py {run_dir} holdout"\nholdout_examples = 400\n'
    )
    search = Search(
        Repo(repo),
        terms,
        "ab" * 32,
        Ledger(work / "ledger.jsonl"),
        work,
        ScriptedProposer([2, 1.5, 3]),
        "r0",
        SearchLimits(4, 300, 5),
        sandbox=None,
    )
    search.run()
    record = evaluate_champion(search, None)
    assert record is not None and record.interval is None  # no Wilson in the record either
    settings = Settings(data_dir=tmp_path / "data", local_port=1)  # no chain: the report says so, in words
    report = report_search(settings, work)
    text = "\n".join(report.lines)
    assert "Wilson" not in text and "wilson" not in json.dumps(report.data)
    assert "percentile bootstrap over 3 replications, 2,000 resamples, seed " + record.digest.hex() in text
    assert "not a proportion" in text
    holdout = text.split("holdout ", 1)[1]  # the holdout too: n, and no binomial interval around a macro-F1
    assert "n=400 examples" in holdout and "no interval over items: the metric is not a proportion" in holdout


ITEMS_F1 = r"""
import json, sys
run_dir, run_name = sys.argv[1:3]
x = json.load(open("params.json"))["x"]
right = min(int(40 * x), 150)  # items 0..right-1 predicted right, the rest as class 2
pairs = [[i % 3, i % 3 if i < right else (i + 1) % 3] for i in range(150)]
def f1(pairs):
    out = []
    for c in sorted({v for p in pairs for v in p}):
        tp = sum(1 for y, p in pairs if y == c == p)
        fp = sum(1 for y, p in pairs if p == c != y)
        fn = sum(1 for y, p in pairs if y == c != p)
        out.append(2 * tp / (2 * tp + fp + fn))
    return sum(out) / len(out)
open(run_dir + "/metrics.jsonl", "a").write(json.dumps({"macro_f1": f1(pairs), "per_example": pairs}) + "\n")
"""


def test_a_macro_f1_search_with_per_item_pairs_reports_a_bootstrap_over_items(tmp_path: Path) -> None:
    from anchor.research.report import report_search
    from anchor.settings.session import Settings

    repo = make_repo(tmp_path / "repo", {"params.json": json.dumps({"x": 1}), "f1.py": ITEMS_F1})
    text = (
        'task = "t"\ncommand = "python3 f1.py {run_dir} {run_name}"\neditable = ["params.json"]\n'
        'metric = "macro_f1"\nmetric_kind = "macro_f1"\nmode = "max"\nattempt_timeout_minutes = 1\n'
        "eval_examples = 150\n"
    )
    work = tmp_path / "work"
    work.mkdir()
    (work / "contract.toml").write_text(text)
    terms = AttemptContract.model_validate(tomllib.loads(text))
    search = Search(
        Repo(repo),
        terms,
        "ab" * 32,
        Ledger(work / "ledger.jsonl"),
        work,
        ScriptedProposer([2, 1.5, 3]),
        "r0",
        SearchLimits(4, 300, 5),
        sandbox=None,
    )
    search.run()
    report = report_search(Settings(data_dir=tmp_path / "data", local_port=1), work)
    text = "\n".join(report.lines)
    said = report.data["researchers"]["r0"]["uncertainty"]
    assert said["interval"]["method"] == "bootstrap" and "Wilson" not in text
    assert (
        "percentile bootstrap over 150 items (label, prediction), macro-F1 recomputed on each of 2,000 resamples"
        in text
    )
    assert float(said["interval"]["low"]) <= float(report.data["researchers"]["r0"]["champion_metric"]["value"])
    from anchor.research.tables import render  # the paper's table names the resamples and the seed too

    assert f"(bootstrap, 2,000 resamples, seed {said['seed']})" in render(report.data, report.contract, "markdown")
