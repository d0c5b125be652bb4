"""`anchor render k8s`: the replicated service for a cluster, validated offline against the
Kubernetes schemas (kubernetes-validate, strict), with the refusals that keep it honest."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from anchor.errors import ExitCode
from tests.cli import run_anchor

IMAGE = "registry.example/anchor@sha256:" + "cd" * 32
K8S = "1.30"
RECORD = {
    "chain_id": 8453,
    "address": "0x" + "11" * 20,
    "code_hash": "0x" + "22" * 32,
    "tx_hash": "0x" + "33" * 32,
    "block_number": 123,
    "deployer": "0x" + "44" * 20,
    "registry_version": "2",
    "compiler": {"solc": "0.8.26"},
}


def _render(tmp_path: Path, *extra: str, record: bool = True, target: str = "k8s") -> subprocess.CompletedProcess[str]:
    data = tmp_path / "data"
    if record and not (data / "deployments" / "8453.json").exists():
        (data / "deployments").mkdir(parents=True)
        (data / "deployments" / "8453.json").write_text(json.dumps(RECORD))
        (data / "deployments" / "8453.source.json").write_text("{}")  # the source record is not a deployment
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    return run_anchor(
        [
            "render",
            target,
            "--image",
            IMAGE,
            "--chain-rpc-url",
            "https://base.example/rpc",
            "--public-url",
            "https://anchor.example.org",
            *extra,
        ],
        {**env, "ANCHOR_DATA_DIR": str(data)},
    )


def _documents(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def test_the_rendered_service_validates_offline_with_replicas_and_the_readiness_probe(tmp_path: Path) -> None:
    rendered = _render(tmp_path, "--replicas", "3", "--namespace", "research")
    assert rendered.returncode == 0, rendered.stderr
    docs = _documents(rendered.stdout)
    assert [d["kind"] for d in docs] == ["ConfigMap", "Deployment", "Service", "PodDisruptionBudget"]
    for doc in docs:
        kubernetes_validate.validate(doc, K8S, strict=True)  # raises on any schema violation
    config, deployment, _, _ = docs
    assert json.loads(config["data"]["8453.json"]) == RECORD  # every replica checks the same code hash
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    [serve] = pod["containers"]
    assert spec["replicas"] == 3 and serve["image"] == IMAGE
    assert serve["readinessProbe"]["httpGet"] == {"path": "/ready", "port": 8000}
    assert serve["livenessProbe"]["httpGet"]["path"] == "/health"
    assert serve["envFrom"] == [{"secretRef": {"name": "anchor-keys"}}]
    env = {e["name"]: e["value"] for e in serve["env"]}
    assert env["ANCHOR_RPC_URL"] == "https://base.example/rpc" and "ANCHOR_JOURNAL_URL" not in env
    assert {v["name"]: next(iter(set(v) - {"name"})) for v in pod["volumes"]}["data"] == "emptyDir"  # no shared disk
    assert pod["securityContext"]["runAsNonRoot"] and serve["securityContext"]["allowPrivilegeEscalation"] is False


def test_a_broken_deployment_is_caught_by_the_offline_validation(tmp_path: Path) -> None:
    deployment = _documents(_render(tmp_path).stdout)[1]
    deployment["spec"]["replicas"] = "three"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, K8S, strict=True)


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (("--image", "registry.example/anchor:latest"), "image"),
        (("--keys-secret", "Not_A_Name"), "keys_secret"),
        (("--chain-rpc-url", "base:8545"), "chain_rpc_url"),  # was said as --rpc-url, another option
        (("--namespace", "Anchor Prod"), "namespace"),  # was rendered, for the cluster to refuse
    ],
)
def test_what_would_render_a_service_that_cannot_run_as_asked_is_refused(
    tmp_path: Path, extra: tuple[str, ...], field: str
) -> None:
    refused = _render(tmp_path, *extra)
    assert refused.returncode == ExitCode.BAD_INPUT and "Traceback" not in refused.stderr
    assert field.replace("_", "") in refused.stderr.replace("_", "").replace("-", "")
    assert refused.stderr.startswith(f"error[bad_input]: {extra[0]}"), refused.stderr  # said as the option given


def test_a_target_other_than_k8s_is_refused_naming_the_one_there_is(tmp_path: Path) -> None:
    refused = _render(tmp_path, target="helm")
    assert refused.returncode == ExitCode.BAD_INPUT and not refused.stdout
    assert refused.stderr.startswith("error[bad_input]: render: unknown target 'helm' (hint: anchor render k8s ...)")


def test_without_a_deployment_record_nothing_is_rendered_and_the_hint_says_deploy(tmp_path: Path) -> None:
    refused = _render(tmp_path, record=False)
    assert refused.returncode == ExitCode.BAD_INPUT and "anchor deploy" in refused.stderr and not refused.stdout


def test_an_existing_output_file_is_never_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "service.yaml"
    out.write_text("mine")
    refused = _render(tmp_path, "--out", str(out))
    assert refused.returncode == ExitCode.BAD_INPUT and out.read_text() == "mine"


def test_the_image_runs_as_the_manifests_uid_and_its_base_can_only_be_pinned_by_digest() -> None:
    from anchor.anchoring.k8s import UID
    from tests.conftest import ROOT

    lines = [line.split("#")[0].strip() for line in (ROOT / "Dockerfile").read_text().splitlines()]
    lines = [line for line in lines if line]
    assert "ARG BASE_IMAGE" in lines and "FROM ${BASE_IMAGE}" in lines  # no default, so no tag to fall back on
    assert f"USER {UID}:{UID}" in lines
    refused = subprocess.run(
        ["make", "--no-print-directory", "image", "BASE_IMAGE=python:3.11-slim"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode != 0 and "not pinned by digest" in refused.stderr
