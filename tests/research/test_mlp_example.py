"""The second example (examples/mlp): a numpy MLP on scikit-learn's bundled digits data, searched in
the sandbox and scored by an evaluator that is not the training code (issue 15)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from tests.conftest import ANCHOR_BIN, ROOT
from tests.research.helpers import make_repo

pytestmark = pytest.mark.sandbox  # runs attempts, proposers or evaluators as processes (bubblewrap)


def test_the_mlp_example_is_searched_in_the_sandbox_and_scored_by_its_evaluator(tmp_path: Path) -> None:
    example = ROOT / "examples" / "mlp"
    files = {str(p.relative_to(example)): p.read_text() for p in example.rglob("*") if p.is_file()}
    repo = make_repo(tmp_path / "repo", {k: v for k, v in files.items() if k != "contract.toml"})
    contract = tmp_path / "contract.toml"
    shutil.copy(example / "contract.toml", contract)
    # the project's Python (numpy, scikit-learn) first on PATH, as after `. .venv/bin/activate`
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env.update(ANCHOR_DATA_DIR=str(tmp_path / "data"), PATH=f"{Path(sys.executable).parent}:{env['PATH']}")
    run = subprocess.run(
        [str(ANCHOR_BIN), "research", "run", "--repo", str(repo), "--contract", str(contract), "--no-anchor",
         "--max-attempts", "3", "--seed", "1"],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    ledger = tmp_path / "data" / "research" / "ledger.jsonl"
    attempts = [e for e in map(json.loads, ledger.read_text().splitlines()) if "event" not in e]
    assert [e["status"] for e in attempts] == ["completed"] * 3, [e.get("evidence_removed") for e in attempts]
    assert all(e["sandbox"] == "bubblewrap" and e["measured_by"]["source"] == "evaluator" for e in attempts)
    assert all(0.5 < float(e["metric"]["value"]) <= 1 for e in attempts)
    # the training code's own number is a claim beside the evaluator's; honest code agrees with it
    assert all(json.loads(e["claims"])["from"] == "metrics.jsonl" and e["claims_differ"] is False for e in attempts)
    runs = tmp_path / "data" / "research" / "runs" / "r0"
    for entry in attempts:
        out = json.loads((runs / entry["commit"][:12] / "evaluator.out").read_text())
        assert Decimal(str(out["val_accuracy"])) == Decimal(entry["metric"]["value"])
