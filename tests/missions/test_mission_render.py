"""`anchor mission render k8s`: a dispatched mission as a Kubernetes Job, validated offline
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
from tests.missions.test_deploy_k8s import K8S, RECORD

IMAGE = "ghcr.io/example/runner@sha256:" + "ab" * 32
DOCUMENT = {
    "hypothesis": "Momentum predicts next-week returns.",
    "covers": {"symbol": "SPY"},
    "budget": {"minutes": 30, "attempts": 10},
    "evaluator_policy_sha256": "44" * 32,
    "command": "python3 run.py",
}


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
    submitted = _anchor(
        data,
        "mission",
        "submit",
        "--mission",
        str(mission),
        "--mission-digest",
        digest,
        "--snapshot",
        snapshot,
        "--snapshot-sha256",
        sha256,
        "--image",
        IMAGE,
        "--output",
        output,
        "--profile",
        "medium",
    )
    assert submitted.returncode == 0, submitted.stderr
    return data


def _documents(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


ANCHOR_IMAGE = "ghcr.io/example/anchor@sha256:" + "cd" * 32
RENDER = ["--service-url", "http://anchor:8000", "--anchor-image", ANCHOR_IMAGE]
KEYS = ("ANCHOR_SERVICE_TOKEN", "ANCHOR_PRIVATE_KEY", "ANCHOR_KEYSTORE", "ANCHOR_JOURNAL_URL", "ANCHOR_RESEARCHER_KEY")


def untrusted_holds_nothing(pod: dict[str, Any], untrusted: set[str]) -> None:
    """No container running `untrusted` images gets a Secret in any form (env, envFrom, a volume), a
    key's or the journal's variable, or the service account token; shared by the research render test."""
    secret_volumes = {v["name"] for v in pod["volumes"] if "secret" in v or "projected" in v}
    assert pod.get("automountServiceAccountToken") is False
    ran_untrusted = [c for c in pod.get("initContainers", []) + pod["containers"] if c["image"] in untrusted]
    assert ran_untrusted, "no container runs the submitter's image"
    for container in ran_untrusted:
        text = json.dumps(container)
        assert "secretKeyRef" not in text and "envFrom" not in container and "secretRef" not in text, container
        assert not any(key in text for key in KEYS), container
        assert not {m["name"] for m in container.get("volumeMounts", [])} & secret_volumes, container


def test_the_rendered_mission_job_validates_offline_and_binds_the_dispatched_mission(tmp_path: Path) -> None:
    data = _dispatched(tmp_path, "https://data.example/spy.parquet")
    rendered = _anchor(
        data,
        "mission",
        "render",
        "k8s",
        "spy-momentum",
        "--chain-rpc-url",
        "https://base.example/rpc",
        "--results-claim",
        "mission-results",
        *RENDER,
        "--egress-cidr",
        "203.0.113.0/24",
    )
    assert rendered.returncode == 0, rendered.stderr
    config, job, policy = _documents(rendered.stdout)
    for doc in (config, job, policy):
        kubernetes_validate.validate(doc, K8S, strict=True)
    assert (
        json.loads(config["data"]["mission.json"]) == Mission.model_validate(DOCUMENT).identity()
        and json.loads(config["data"]["8453.json"]) == RECORD
    )
    pod = job["spec"]["template"]["spec"]
    [prepare, command], [seal] = pod["initContainers"], pod["containers"]
    # the submitter's command runs alone in its image; the anchor image prepares and seals
    assert command["image"] == IMAGE and prepare["image"] == seal["image"] == ANCHOR_IMAGE
    assert command["command"] == ["sh", "-c", "python3 run.py"]
    assert "anchor mission submit" in prepare["command"][-1] and "--stage prepare" in prepare["command"][-1]
    assert seal["command"][-6:] == ["--stage", "seal", "--workspace", "/mission", "--service", "http://anchor:8000"]
    untrusted_holds_nothing(pod, {IMAGE})
    assert {
        "name": "ANCHOR_SERVICE_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "anchor-service-token", "key": "token"}},
    } in seal["env"]
    assert not any("secretKeyRef" in json.dumps(e) for e in prepare["env"])  # only the seal holds the token
    # the snapshot is read-only to the command; the result is read-only to the seal
    mounts = {m["mountPath"]: m for m in command["volumeMounts"]}
    assert mounts["/mission/snapshot"]["readOnly"] is True and "readOnly" not in mounts["/mission/result"]
    assert {m["mountPath"]: m.get("readOnly") for m in seal["volumeMounts"]}["/mission/result"] is True
    assert command["securityContext"]["readOnlyRootFilesystem"] is True and pod["enableServiceLinks"] is False
    assert mounts["/mission/result"]["subPath"] == job["metadata"]["name"]  # its own part of the claim
    assert command["resources"]["requests"] == command["resources"]["limits"] == {"cpu": "2", "memory": "8Gi"}
    assert "ANCHOR_PRIVATE_KEY" not in rendered.stdout and "envFrom" not in rendered.stdout
    assert job["spec"]["backoffLimit"] == 0 and job["spec"]["activeDeadlineSeconds"] == 30 * 60 + 600
    assert {"name": "result", "persistentVolumeClaim": {"claimName": "mission-results"}} in pod["volumes"]
    assert pod["securityContext"]["runAsNonRoot"] and command["securityContext"]["allowPrivilegeEscalation"] is False
    # the NetworkPolicy: nothing in; out only DNS, the anchoring service's pods and the CIDR given
    spec = policy["spec"]
    assert spec["podSelector"]["matchLabels"] == job["spec"]["template"]["metadata"]["labels"]
    assert spec["policyTypes"] == ["Ingress", "Egress"] and spec["ingress"] == []
    assert [rule["to"] for rule in spec["egress"]][1:] == [
        [{"podSelector": {"matchLabels": {"app.kubernetes.io/name": "anchor-serve"}}}],
        [{"ipBlock": {"cidr": "203.0.113.0/24"}}],
    ]


def test_a_mission_that_must_run_again_or_without_the_anchor_image_is_not_rendered_for_a_pod(tmp_path: Path) -> None:
    data = _dispatched(tmp_path, "https://data.example/spy.parquet")
    base = ["mission", "render", "k8s", "spy-momentum", "--chain-rpc-url", "https://base.example/rpc"]
    missing = _anchor(data, *base, "--service-url", "http://anchor:8000")
    assert missing.returncode == ExitCode.BAD_INPUT and "--anchor-image is required" in missing.stderr
    tagged = _anchor(data, *base, "--service-url", "http://anchor:8000", "--anchor-image", "anchor:latest")
    assert tagged.returncode == ExitCode.BAD_INPUT and "--anchor-image: 'anchor:latest' is not pinned" in tagged.stderr
    bad_cidr = _anchor(data, *base, *RENDER, "--egress-cidr", "10.0.0.1/8")
    assert bad_cidr.returncode == ExitCode.BAD_INPUT and "--egress-cidr '10.0.0.1/8'" in bad_cidr.stderr
    # a mission with stop rules and many attempts: a pod runs its command once, so it is refused by name
    other = tmp_path / "again"
    other.mkdir()
    document = {**DOCUMENT, "stop_rules": [{"metric": "sharpe", "mode": "max", "target": "1.5"}]}
    (other / "mission.json").write_text(json.dumps(document))
    again = other / "data"
    (again / "deployments").mkdir(parents=True)
    (again / "deployments" / "8453.json").write_text(json.dumps(RECORD))
    digest = "0x" + Mission.model_validate(document).digest.hex()
    _anchor(
        again,
        "mission",
        "submit",
        "--mission",
        str(other / "mission.json"),
        "--mission-digest",
        digest,
        "--snapshot",
        "https://data.example/spy.parquet",
        "--snapshot-sha256",
        "22" * 32,
        "--image",
        IMAGE,
        "--output",
        "again",
        "--profile",
        "medium",
    )
    refused = _anchor(again, "mission", "render", "k8s", "again", "--chain-rpc-url", "https://rpc.example", *RENDER)
    assert refused.returncode == ExitCode.BAD_INPUT
    assert "stop_rules: a Kubernetes Job runs the command once" in refused.stderr
    assert not refused.stdout


def test_a_mission_whose_snapshot_is_a_local_path_or_unknown_is_not_rendered(tmp_path: Path) -> None:
    local = tmp_path / "snap.parquet"
    local.write_bytes(b"x")
    data = _dispatched(tmp_path, str(local), hashlib.sha256(b"x").hexdigest(), "local-one")
    refused = _anchor(
        data, "mission", "render", "k8s", "local-one", "--chain-rpc-url", "https://base.example/rpc", *RENDER
    )
    assert refused.returncode == ExitCode.BAD_INPUT and "http(s) URL" in refused.stderr and not refused.stdout
    unknown = _anchor(
        data, "mission", "render", "k8s", "nobody", "--chain-rpc-url", "https://base.example/rpc", *RENDER
    )
    assert unknown.returncode == ExitCode.NOT_ANCHORED and "anchor mission submit" in unknown.stderr


def test_a_mission_is_not_rendered_with_a_funded_key_or_without_a_service(tmp_path: Path) -> None:
    data = _dispatched(tmp_path, "https://data.example/spy.parquet")
    base = ["mission", "render", "k8s", "spy-momentum", "--chain-rpc-url", "https://base.example/rpc"]
    old = _anchor(data, *base, "--keys-secret", "anchor-keys", "--service-url", "http://anchor:8000")
    assert old.returncode == 2 and "no longer gets the funded key" in old.stderr
    missing = _anchor(data, *base)
    assert missing.returncode == 2 and "--service-url is required" in missing.stderr
