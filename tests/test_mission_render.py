"""`anchor mission render k8s` (issue 11): a dispatched mission as a Kubernetes Job, validated offline
against the Kubernetes schemas (kubernetes-validate, strict), and what would make a Job that cannot run."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import yaml

from anchor.errors import ExitCode
from anchor.manifest.mission import Mission
from tests.cli import run_anchor
from tests.test_deploy_k8s import K8S, RECORD

IMAGE = "ghcr.io/example/runner@sha256:" + "ab" * 32
DOCUMENT = {
    "hypothesis": "Momentum predicts next-week returns.", "covers": {"symbol": "SPY"},
    "budget": {"minutes": 30, "attempts": 10}, "evaluator_policy_sha256": "44" * 32, "command": "python3 run.py",
}  # fmt: skip


def _anchor(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    return run_anchor(args, {**env, "ANCHOR_DATA_DIR": str(data)})


def _dispatched(tmp_path: Path, snapshot: str, sha256: str = "22" * 32, output: str = "spy-momentum") -> Path:
    data = tmp_path / "data"
    (data / "deployments").mkdir(parents=True, exist_ok=True)
    (data / "deployments" / "8453.json").write_text(json.dumps(RECORD))
    mission = tmp_path / "mission.json"
    mission.write_text(json.dumps(DOCUMENT))
    digest = "0x" + Mission.model_validate(DOCUMENT).digest.hex()
    submitted = _anchor(data, "mission", "submit", "--mission", str(mission), "--mission-digest", digest,
                        "--snapshot", snapshot, "--snapshot-sha256", sha256, "--image", IMAGE,
                        "--output", output, "--profile", "medium")  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    return data


def _documents(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def test_the_rendered_mission_job_validates_offline_and_binds_the_dispatched_mission(tmp_path: Path) -> None:
    data = _dispatched(tmp_path, "https://data.example/spy.parquet")
    rendered = _anchor(data, "mission", "render", "k8s", "spy-momentum", "--chain-rpc-url",
                       "https://base.example/rpc", "--results-claim", "mission-results",
                       "--service-url", "http://anchor:8000")  # fmt: skip
    assert rendered.returncode == 0, rendered.stderr
    config, job = _documents(rendered.stdout)
    for doc in (config, job):
        kubernetes_validate.validate(doc, K8S, strict=True)
    assert (
        json.loads(config["data"]["mission.json"]) == Mission.model_validate(DOCUMENT).identity()
        and json.loads(config["data"]["8453.json"]) == RECORD
    )
    pod = job["spec"]["template"]["spec"]
    [fetch], [main] = pod["initContainers"], pod["containers"]
    assert fetch["command"] == ["anchor", "snapshot", "fetch", "sha256:" + "22" * 32, "--from",
                                "https://data.example/spy.parquet"]  # fmt: skip
    assert all(c["image"] == IMAGE for c in (fetch, main))  # by digest, as dispatched
    assert {"name": "ANCHOR_IMAGE", "value": IMAGE} in main["env"]  # so its bundle binds the image it ran in
    assert main["resources"]["requests"] == main["resources"]["limits"] == {"cpu": "2", "memory": "8Gi"}
    assert "exec anchor mission run spy-momentum --no-sandbox --service http://anchor:8000" in main["command"][-1]
    # issue 25: the container that runs the submitter's command holds a submit token, never a funded key
    assert "ANCHOR_PRIVATE_KEY" not in rendered.stdout and "ANCHOR_KEYSTORE" not in rendered.stdout
    assert "envFrom" not in rendered.stdout and "ANCHOR_JOURNAL_URL" not in rendered.stdout
    assert {"name": "ANCHOR_SERVICE_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": "anchor-service-token", "key": "token"}}} in main["env"]  # fmt: skip
    assert job["spec"]["backoffLimit"] == 0 and job["spec"]["activeDeadlineSeconds"] == 30 * 60 + 600
    assert {"name": "results", "persistentVolumeClaim": {"claimName": "mission-results"}} in pod["volumes"]
    assert pod["securityContext"]["runAsNonRoot"] and main["securityContext"]["allowPrivilegeEscalation"] is False


def test_a_mission_whose_snapshot_is_a_local_path_or_unknown_is_not_rendered(tmp_path: Path) -> None:
    local = tmp_path / "snap.parquet"
    local.write_bytes(b"x")
    data = _dispatched(tmp_path, str(local), hashlib.sha256(b"x").hexdigest(), "local-one")
    refused = _anchor(data, "mission", "render", "k8s", "local-one", "--chain-rpc-url", "https://base.example/rpc",
                      "--service-url", "http://anchor:8000")  # fmt: skip
    assert refused.returncode == ExitCode.BAD_INPUT and "http(s) URL" in refused.stderr and not refused.stdout
    unknown = _anchor(data, "mission", "render", "k8s", "nobody", "--chain-rpc-url", "https://base.example/rpc",
                      "--service-url", "http://anchor:8000")  # fmt: skip
    assert unknown.returncode == ExitCode.NOT_ANCHORED and "anchor mission submit" in unknown.stderr


def test_a_mission_is_not_rendered_with_a_funded_key_or_without_a_service(tmp_path: Path) -> None:
    data = _dispatched(tmp_path, "https://data.example/spy.parquet")
    base = ["mission", "render", "k8s", "spy-momentum", "--chain-rpc-url", "https://base.example/rpc"]
    old = _anchor(data, *base, "--keys-secret", "anchor-keys", "--service-url", "http://anchor:8000")
    assert old.returncode == 2 and "no longer gets the funded key" in old.stderr
    missing = _anchor(data, *base)
    assert missing.returncode == 2 and "--service-url is required" in missing.stderr
