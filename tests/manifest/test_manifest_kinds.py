"""Result-bundle and attempt manifests: what is refused, what is computed here, what is compared."""

from __future__ import annotations

import hashlib
import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

from anchor.errors import BadInput
from anchor.manifest.attempt import AttemptManifest, Metric, canonical_decimal
from anchor.manifest.bundle import load_bundle_spec
from tests.conftest import ROOT

IMAGE = "ghcr.io/anchor/eval@sha256:" + "ab" * 32


def _spec(tmp_path: Path, body: str) -> Path:
    (tmp_path / "outputs").mkdir(exist_ok=True)
    (tmp_path / "outputs" / "metrics.json").write_text('{"acc": 0.9}')
    (tmp_path / "mission.md").write_text("Find a better learning rate.")
    (tmp_path / "policy.toml").write_text("metric = 'acc'")
    spec = tmp_path / "bundle.toml"
    spec.write_text(body)
    return spec


BASE = f"""
mission = "mission.md"
data_snapshot_sha256 = "{"cd" * 32}"
evaluator_policy = "policy.toml"
output = "outputs"
"""


def test_bundle_digests_are_computed_from_the_files(tmp_path: Path) -> None:
    manifest, tree, _ = load_bundle_spec(_spec(tmp_path, BASE + f'image = "{IMAGE}"\n'))
    assert manifest.mission_sha256 == hashlib.sha256(b"Find a better learning rate.").hexdigest()
    assert manifest.evaluator_policy_sha256 == hashlib.sha256(b"metric = 'acc'").hexdigest()
    assert manifest.output.files_root == tree.root.hex()


def test_bundle_with_an_image_tag_is_refused_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(BadInput) as info:
        load_bundle_spec(_spec(tmp_path, BASE + 'image = "python:3.11"\n'))
    assert "field 'image'" in info.value.message and "tag is not an execution identity" in info.value.message
    assert info.value.detail["field"] == "image"


def test_resume_without_its_digest_is_refused_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(BadInput) as info:
        load_bundle_spec(_spec(tmp_path, BASE + f'image = "{IMAGE}"\n[resume]\nbundle = "run-41"\n'))
    assert info.value.detail["field"] == "resume.digest" and "resume.digest" in info.value.message


def test_resume_digest_without_its_bundle_is_refused_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(BadInput) as info:
        load_bundle_spec(_spec(tmp_path, BASE + f'image = "{IMAGE}"\n[resume]\ndigest = "{"ef" * 32}"\n'))
    assert info.value.detail["field"] == "resume.bundle"


def test_a_claimed_digest_that_differs_from_the_file_is_reported_not_adopted(tmp_path: Path) -> None:
    body = BASE + f'image = "{IMAGE}"\nmission_sha256 = "{"00" * 32}"\n'
    with pytest.raises(BadInput) as info:
        load_bundle_spec(_spec(tmp_path, body))
    assert info.value.detail["field"] == "mission_sha256"
    assert info.value.detail["computed"] == hashlib.sha256(b"Find a better learning rate.").hexdigest()


def test_unknown_spec_field_and_out_of_order_milestones_are_refused(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="unknown field 'imagee'"):
        load_bundle_spec(_spec(tmp_path, BASE + f'imagee = "{IMAGE}"\n'))
    late = (
        BASE + f'image = "{IMAGE}"\n[milestones]\nsubmitted = 2026-11-30T03:00:00Z\nscheduled = 2026-11-30T02:00:00Z\n'
    )
    with pytest.raises(BadInput, match="milestone scheduled is before submitted"):
        load_bundle_spec(_spec(tmp_path, late))


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.1, "0.1"),
        (0.9375, "0.9375"),
        (-1.5, "-1.5"),
        (12, "12"),
        ("1e-19", "0"),
        ("-1e-19", "0"),
        ("2.5e-18", "0.000000000000000002"),  # half to even
        ("3.5e-18", "0.000000000000000004"),
        ("1E+3", "1000"),
        (1796011992082998643, "1796011992082998643"),  # more digits than Decimal's default precision
        ("-12345678901234567890.123456789012345678", "-12345678901234567890.123456789012345678"),
    ],
)
def test_metric_values_are_rounded_to_18_decimals_half_to_even(value: object, text: str) -> None:
    assert canonical_decimal(value) == text


@pytest.mark.parametrize(
    "value", [float("nan"), float("inf"), float("-inf"), "NaN", "Infinity", True, None, "abc", 10**60]
)
def test_non_finite_and_non_numeric_metric_values_are_refused(value: object) -> None:
    with pytest.raises(BadInput, match="metric.value"):
        canonical_decimal(value)


@pytest.mark.parametrize(("name", "mode", "value"), [("val_accuracy", "max", "0.9375"), ("loss", "min", "-2.25")])
def test_metric_hash_equals_what_cast_computes(name: str, mode: str, value: str) -> None:
    metric = Metric.of(name, mode, value)
    cast = str(ROOT / "node_modules" / ".bin" / "cast")
    scaled = str(int(Decimal(value) * 10**18))
    encoded = subprocess.run(
        [cast, "abi-encode", "f(string,uint8,int256)", name, "1" if mode == "max" else "0", scaled],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    digest = subprocess.run([cast, "keccak", encoded], capture_output=True, text=True, check=True).stdout.strip()
    assert "0x" + metric.hash().hex() == digest


ATTEMPT = {
    "commit": "a1" * 20,
    "parent": "b2" * 20,
    "diff_blake3": "c3" * 32,
    "researcher": "r0",
    "contract_digest": "d4" * 32,
}


def test_attempt_refuses_a_claimed_metric_hash_that_is_not_the_metric_s() -> None:
    good = AttemptManifest.build(**ATTEMPT, metric=Metric.of("acc", "max", 0.5), kept=True, status="completed")
    forged = {**good.identity(), "metric_hash": "ff" * 32}
    with pytest.raises(ValueError, match="metric_hash"):
        AttemptManifest.model_validate(forged)


def test_attempt_rules_kept_needs_completed_and_completed_needs_a_metric() -> None:
    with pytest.raises(BadInput, match="only a completed attempt can be kept"):
        AttemptManifest.build(**ATTEMPT, metric=None, kept=True, status="failed")
    with pytest.raises(BadInput, match="a completed attempt has a metric"):
        AttemptManifest.build(**ATTEMPT, metric=None, kept=False, status="completed")
    with pytest.raises(BadInput, match="field 'commit'"):
        AttemptManifest.build(**{**ATTEMPT, "commit": "abc"}, metric=None, kept=False, status="failed")
