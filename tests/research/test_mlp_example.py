"""The second example (examples/mlp): a numpy MLP on scikit-learn's bundled digits data, searched in
the sandbox and scored by an evaluator that is not the training code."""

from __future__ import annotations

import json
import shutil
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

from tests.conftest import ANCHOR_BIN, ROOT

pytestmark = pytest.mark.sandbox  # runs attempts, proposers or evaluators as processes (bubblewrap)


@pytest.mark.chain  # research run anchors on the embedded chain, as the README runs it
def test_the_mlp_example_is_searched_in_the_sandbox_and_scored_by_its_evaluator(tmp_path: Path) -> None:
    """README.md's block for this example, run as written (it once ran `git commit` with no identity, which
    fails on a machine without git's user.name, as CI's root is)."""
    from tests.conftest import free_port
    from tests.newcomer import block_after, run_block, workspace

    block = block_after(ROOT / "README.md", "### A second research example")
    work, env = workspace(tmp_path)
    shutil.copytree(ROOT / "examples", work / "examples")
    env.update(ANCHOR_LOCAL_PORT=str(free_port()), GIT_CONFIG_GLOBAL="/dev/null")  # no identity of ours
    try:
        ran = run_block(block, work, env)
    finally:
        subprocess.run([str(ANCHOR_BIN), "chain", "down"], cwd=work, env=env, capture_output=True, check=False)
    assert "evaluator" in ran.stdout
    # a holdout and no replications: the holdout comes with its n (declared) and a bootstrap interval over the
    # evaluator's per-example results on the 300 rows no attempt was scored on; nothing is adjusted
    held = [line for line in ran.stdout.splitlines() if "holdout " in line]
    assert held and "n=300 examples (declared in the contract; one example = 0.003333); 95% interval [" in held[-1]
    assert "(percentile bootstrap over 300 per-example results, 2,000 resamples, seed " in held[-1]
    # its evaluator prints each row's result: the champion's figure comes with n and a bootstrap interval
    assert "n=400 examples (counted by the evaluator; one example = 0.0025); 95% interval [" in ran.stdout
    assert "(percentile bootstrap over 400 per-example results, 2,000 resamples, seed " in ran.stdout
    ledger = work / ".anchor" / "mlp-search" / "ledger.jsonl"
    attempts = [e for e in map(json.loads, ledger.read_text().splitlines()) if "event" not in e]
    assert [e["status"] for e in attempts] == ["completed"] * 3, [e.get("evidence_removed") for e in attempts]
    from anchor.fence.sandbox import default_runtime

    runtime = default_runtime()  # the runtime a search asks for by default: gVisor where it runs here
    assert all(e["sandbox"] == runtime and e["measured_by"]["source"] == "evaluator" for e in attempts)
    assert all(0.5 < float(e["metric"]["value"]) <= 1 for e in attempts)
    # the training code's own number is a claim beside the evaluator's; honest code agrees with it
    assert all(json.loads(e["claims"])["from"] == "metrics.jsonl" and e["claims_differ"] is False for e in attempts)
    runs = work / ".anchor" / "mlp-search" / "runs" / "r0"
    for entry in attempts:
        out = json.loads((runs / entry["commit"][:12] / "evaluator.out").read_text())
        assert Decimal(str(out["val_accuracy"])) == Decimal(entry["metric"]["value"])
