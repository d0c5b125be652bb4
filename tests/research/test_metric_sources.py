"""Metric sources: an evaluator apart from the edited code, a regex over stdout, plug-ins
through an entry point, and the last number of a timed-out attempt recorded as partial, never kept."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import blake3
import pytest

from anchor.errors import BadInput, Tampered
from anchor.fence.git import Repo
from anchor.fence.sandbox import Sandbox
from anchor.manifest.attempt import AttemptManifest
from anchor.manifest.decode import validate_identity
from anchor.manifest.validation import validated
from anchor.research.contract import AttemptContract
from anchor.research.evidence import check, run_dir_of
from anchor.research.ledger import Ledger
from anchor.research.loop import Search, SearchLimits
from tests import reference_impl as ref
from tests.research.helpers import ScriptedProposer, make_repo

pytestmark = pytest.mark.sandbox  # runs attempts, proposers or evaluators as processes (bubblewrap)

# the edited code writes predictions and, in its own metrics file, a number it would like to have
ATTEMPT = (
    "python3 -c \"import json,sys; x=json.load(open('params.json'))['x'];"
    " json.dump({'predicted': x}, open(sys.argv[1]+'/predictions.json','w'));"
    " open(sys.argv[1]+'/metrics.jsonl','a').write(json.dumps({'score': 0.99})+chr(10))\" {run_dir}"
)
# the evaluator scores the predictions itself and, told to probe, tries to rewrite what it was shown
EVALUATOR = """import json, sys
run_dir, own = sys.argv[1], sys.argv[2]
tried = {}
for target in (run_dir + "/predictions.json", "params.json") if sys.argv[3:] == ["probe"] else ():
    try:
        open(target, "a").write("tampered")
        tried[target] = True
    except OSError:
        tried[target] = False
json.dump(tried, open(own + "/tried.json", "w"))
print("evaluating...")
print(json.dumps({"score": json.load(open(run_dir + "/predictions.json"))["predicted"] / 2}))
"""


def _terms(**fields: Any) -> AttemptContract:
    base: dict[str, Any] = {
        "task": "t",
        "command": ATTEMPT,
        "editable": ["params.json"],
        "metric": "score",
        "mode": "max",
        "attempt_timeout_minutes": 1,
        "grace_seconds": 0.5,
    }
    return validated(AttemptContract, {**base, **fields}, "contract.toml")


def _run(tmp_path: Path, terms: AttemptContract, values: list[Any], sandboxed: bool = False) -> Ledger:
    repo = make_repo(tmp_path / "repo", {"params.json": json.dumps({"x": 0.5}), "eval/score.py": EVALUATOR})
    ledger = Ledger(tmp_path / "work" / "ledger.jsonl")
    box = Sandbox.find(repo, terms.editable, (tmp_path / "work",)) if sandboxed else None
    search = Search(
        Repo(repo),
        terms,
        "ab" * 32,
        ledger,
        tmp_path / "work",
        ScriptedProposer(values),
        "r0",
        SearchLimits(max_attempts=len(values) + 1, budget_s=300, max_consecutive_failures=10),
        sandbox=box,
    )
    search.run()
    return ledger


@pytest.mark.parametrize("sandboxed", [True, False], ids=["bubblewrap", "unconfined"])
def test_the_evaluators_number_is_the_record_and_the_attempts_own_number_a_flagged_claim(
    tmp_path: Path, sandboxed: bool
) -> None:
    # sandboxed, the evaluator also probes whether it can write what it reads (it must not)
    source = "evaluator:python3 eval/score.py {run_dir} {eval_dir}" + (" probe" if sandboxed else "")
    terms = _terms(metric_source=source, evaluator_files=["eval/score.py"])
    ledger = _run(tmp_path, terms, [0.8], sandboxed)
    baseline, attempt = ledger.entries()
    assert (baseline["metric"]["value"], attempt["metric"]["value"]) == ("0.25", "0.4")  # x / 2, not 0.99
    assert attempt["kept"] is True and attempt["claims_differ"] is True
    assert json.loads(attempt["claims"]) == {"score": 0.99, "from": "metrics.jsonl"}
    # which evaluator, exactly: the digest of its definition (docs/manifest.md "Evaluator digest")
    evaluator = blake3.blake3(EVALUATOR.encode()).hexdigest()
    definition = {"files": [{"blake3": evaluator, "path": "eval/score.py"}], "source": source}
    expected = blake3.blake3(ref.canonical(definition), derive_key_context="anchor.manifest.v1 metric-source")
    assert attempt["measured_by"] == {"source": "evaluator", "digest": expected.hexdigest()}
    assert (
        AttemptManifest.model_validate(validate_identity(_identity(attempt))).digest.hex() == attempt["attempt_digest"]
    )
    run_dir = run_dir_of(tmp_path / "work", "r0", attempt["commit"])
    tried = json.loads((run_dir.with_name(run_dir.name + ".evaluator") / "tried.json").read_text())
    if sandboxed:  # apart: it read the outputs and could change neither them nor the edited code
        assert list(tried.values()) == [False, False]
        assert json.loads((run_dir / "predictions.json").read_text()) == {"predicted": 0.8}
    check(attempt, run_dir, terms.metric_source)  # re-read from the bound evaluator.out
    (run_dir / "evaluator.out").write_text('{"score": 0.9}\n')
    with pytest.raises(Tampered, match=f"seq {attempt['seq']}: .*evaluator.out changed"):
        check(attempt, run_dir, terms.metric_source)


def _identity(entry: dict[str, Any]) -> dict[str, Any]:
    fields = AttemptManifest.model_fields
    return {k: v for k, v in entry.items() if k in fields}


def test_evaluator_files_the_search_may_edit_are_refused() -> None:
    with pytest.raises(BadInput, match="evaluator_files.*editable"):
        _terms(metric_source="evaluator:python3 params.json", evaluator_files=["params.json"])
    with pytest.raises(BadInput, match="unknown metric source 'stdin'"):
        _terms(metric_source="stdin:x")
    with pytest.raises(BadInput, match="at most one group"):
        _terms(metric_source="regex:(a)(b)")


def test_a_missing_evaluator_file_stops_the_search_before_its_first_attempt(tmp_path: Path) -> None:
    terms = _terms(metric_source="evaluator:python3 eval/gone.py {run_dir}", evaluator_files=["eval/gone.py"])
    with pytest.raises(BadInput, match="evaluator_files: eval/gone.py cannot be read"):
        _run(tmp_path, terms, [0.8])
    assert Ledger(tmp_path / "work" / "ledger.jsonl").entries() == []


def test_the_last_match_of_a_regex_over_stdout_is_the_metric(tmp_path: Path) -> None:
    command = "python3 -c \"import json; x=json.load(open('params.json'))['x']; print('score=0'); print(f'score={x}')\""
    ledger = _run(tmp_path, _terms(command=command, metric_source=r"regex:^score=([0-9.]+)$"), [0.75])
    assert [e["metric"]["value"] for e in ledger.entries()] == ["0.5", "0.75"]
    assert ledger.entries()[1]["measured_by"]["source"] == "regex"


def test_a_plug_in_metric_source_is_found_through_its_entry_point_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    (site / "anchor_plugin_demo.dist-info").mkdir(parents=True)
    (site / "anchor_plugin_demo.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: anchor-plugin-demo\nVersion: 1.2\n"
    )
    (site / "anchor_plugin_demo.dist-info" / "entry_points.txt").write_text(
        "[anchor.metric_sources]\ncsvlast = anchor_plugin_demo:read\n"
    )
    (site / "anchor_plugin_demo.py").write_text(
        "def read(run_dir, argument, name):\n"
        "    rows = (run_dir / argument).read_text().split()\n"
        "    return rows[-1].split(',')[1] if rows else None\n"
    )
    monkeypatch.syspath_prepend(str(site))
    command = (
        "python3 -c \"import json,sys; x=json.load(open('params.json'))['x'];"
        " open(sys.argv[1]+'/m.csv','w').write(f'score,{x}')\" {run_dir}"
    )
    ledger = _run(tmp_path, _terms(command=command, metric_source="csvlast:m.csv"), [0.9])
    assert [e["metric"]["value"] for e in ledger.entries()] == ["0.5", "0.9"]
    assert ledger.entries()[1]["measured_by"]["source"] == "csvlast"


def test_a_timed_out_attempt_records_its_last_number_as_partial_and_is_never_kept(tmp_path: Path) -> None:
    command = (
        "python3 -c \"import json,sys,time; x=json.load(open('params.json'))['x'];"
        " open(sys.argv[1]+'/metrics.jsonl','a').write(json.dumps({'score': x})+chr(10));"
        ' x > 0.6 and time.sleep(60)" {run_dir}'
    )
    ledger = _run(tmp_path, _terms(command=command, attempt_timeout_minutes=2 / 60), [0.9])
    baseline, timed_out = ledger.entries()
    assert baseline["status"] == "completed" and baseline["kept"] is True and "partial" not in baseline
    assert (timed_out["status"], timed_out["exit_code"], timed_out["kept"]) == ("timed_out", 124, False)
    assert timed_out["partial"] == {"name": "score", "mode": "max", "value": "0.9"} and "metric" not in timed_out
    assert timed_out["metric_hash"] == "00" * 32  # on chain it is no metric: better, but never a champion
    assert AttemptManifest.model_validate(_identity(timed_out)).digest.hex() == timed_out["attempt_digest"]
    assert os.path.exists(run_dir_of(tmp_path / "work", "r0", timed_out["commit"]) / "metrics.jsonl")
