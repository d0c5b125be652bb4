"""The timing record: a bundle's milestones are anchored beside it, so an edited milestone
in a proof file is tampered, naming it, while the same result computed faster keeps its identity."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from anchor.errors import ExitCode
from tests.conftest import ROOT, Chain


@pytest.fixture
def anchored(fresh_chain: Chain, tmp_path: Path) -> Path:
    target = tmp_path / "result-bundle"
    shutil.copytree(ROOT / "examples" / "result-bundle", target)
    fresh_chain.cli("deploy", check=True)
    fresh_chain.cli("bundle", str(target / "bundle.toml"), "--anchor", check=True)
    return target


def test_the_milestones_are_anchored_and_an_edited_one_is_named(fresh_chain: Chain, anchored: Path) -> None:
    outputs, proof = anchored / "outputs", anchored / "outputs.anchor.json"
    assert (anchored / "outputs.timing.anchor.json").is_file()
    ok = fresh_chain.cli("--json", "verify", str(outputs))
    assert ok.returncode == ExitCode.OK, ok.stdout
    verdict = json.loads(ok.stdout)
    assert verdict["milestones_anchored"] is True and set(verdict["milestones"]) == {"submitted", "completed"}
    text = fresh_chain.cli("verify", str(outputs)).stdout
    assert "milestones  anchored: its timing record, checked on chain" in text

    original = proof.read_text()
    edited = json.loads(original)
    edited["annotations"]["milestones"]["completed"] = "2026-11-30T09:00:01+00:00"  # "it ran in one second"
    proof.write_text(json.dumps(edited))
    tampered = fresh_chain.cli("--json", "verify", str(outputs))
    assert tampered.returncode == ExitCode.TAMPERED
    error = json.loads(tampered.stdout)["error"]
    assert error["detail"]["milestones"] == ["completed"] and "completed (proof says" in error["message"]

    # a proof whose link to its timing record was removed still verifies the result, and says plainly
    # that its milestones are not anchored
    del edited["annotations"]["timing"]
    proof.write_text(json.dumps(edited))
    unlinked = fresh_chain.cli("verify", str(outputs))
    assert unlinked.returncode == ExitCode.OK and "NOT anchored (no timing record)" in unlinked.stdout
    proof.write_text(original)
    assert fresh_chain.cli("verify", str(outputs)).returncode == ExitCode.OK


def test_the_same_result_computed_faster_is_the_same_bundle(fresh_chain: Chain, anchored: Path) -> None:
    spec = anchored / "bundle.toml"
    before = json.loads(fresh_chain.cli("--json", "bundle", str(spec), check=True).stdout)["manifest_digest"]
    spec.write_text(
        spec.read_text().replace('completed = "2026-11-30T09:04:12Z"', 'completed = "2026-11-30T09:01:00Z"')
    )
    after = json.loads(fresh_chain.cli("--json", "bundle", str(spec), check=True).stdout)["manifest_digest"]
    assert before == after


def test_verify_and_the_explorer_show_what_ran_and_the_milestone_timeline(fresh_chain: Chain, anchored: Path) -> None:
    from fastapi.testclient import TestClient

    from api.app import create_app
    from api.config import ApiConfig

    text = fresh_chain.cli("verify", str(anchored / "outputs"), check=True).stdout
    proof = json.loads((anchored / "outputs.anchor.json").read_text())
    manifest = proof["manifest"]
    assert f"mission     sha256 {manifest['mission_sha256']}" in text and f"image       {manifest['image']}" in text
    with TestClient(create_app(fresh_chain.settings, ApiConfig(token_hashes=frozenset()))) as client:
        page = client.get(
            f"/explorer/bundle/{json.loads((anchored / 'outputs.anchor.json').read_text())['manifest_digest']}"
        )
    assert page.status_code == 200
    html = page.text
    assert manifest["data_snapshot_sha256"] in html and manifest["evaluator_policy_sha256"] in html
    assert "anchored (timing record checked on chain)" in html
    assert html.count("<circle ") == 2 and "completed +252 s" in html  # 09:00:00 -> 09:04:12
