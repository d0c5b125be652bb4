"""A dispatched mission on Kubernetes (`anchor mission render k8s`): the same runner, in a Job."""

from __future__ import annotations

import hashlib
import json
import shlex
from typing import Any


def render_job(
    record: dict[str, Any],
    deployment: dict[str, Any],
    rpc_url: str,
    service_url: str,
    token_secret: str = "anchor-service-token",  # noqa: S107 - the name of a Secret object
    results_claim: str | None = None,
    namespace: str | None = None,
) -> list[dict[str, Any]]:
    """A dispatched mission as a Kubernetes Job: the same runner, in a pod of the mission's image
    (by digest), on its resource profile (requests = limits), within its budget (activeDeadlineSeconds).

    - init `fetch-snapshot`: `anchor snapshot fetch` puts the snapshot in the pod's cache, verified
      against its SHA-256 while it arrives (a corrupt source fails the pod before anything runs);
    - `mission`: `anchor mission submit` (the dispatcher's checks again, in the pod) then
      `anchor mission run --no-sandbox` (the pod is the confinement: non-root, no privilege escalation,
      no capabilities), which re-verifies the cached snapshot, measures the milestones and stamps the
      bundle through the anchoring service at `service_url` (docs/calendar.md) with the submit-only
      token of `token_secret` (key `token`): no funded key, no journal URL is in the pod, and the
      runner makes its environment unreadable to the mission's command before it starts it;
    - the result directory is on `results_claim` (a PersistentVolumeClaim) when one is named, else it
      leaves with the pod (the anchored proof stays in the shared journal)."""
    from anchor.anchoring.k8s import (
        CONTAINER_SECURITY,
        POD_SECURITY,
        check_image,
        check_name,
        check_service_url,
        token_env,
    )

    check_image(record["image"])
    check_name("token_secret", token_secret)
    check_service_url(service_url)
    if results_claim is not None:
        check_name("results_claim", results_claim)
    name = "mission-" + hashlib.sha256(record["output"].encode()).hexdigest()[:12]
    labels = {"app.kubernetes.io/name": "anchor-mission", "anchor.invalid/output-sha256": name[8:]}
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if namespace:
        meta["namespace"] = namespace
    record_file = f"{deployment['chain_id']}.json"
    config = {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {**meta, "name": f"{name}-mission"},
        "data": {"mission.json": json.dumps(record["mission"]["document"], sort_keys=True),
                 record_file: json.dumps(deployment, sort_keys=True)},
    }  # fmt: skip
    snapshot = record["snapshot"]
    submit = [
        "anchor", "mission", "submit", "--mission", "/mission/mission.json",
        "--mission-digest", record["mission"]["digest"], "--snapshot", snapshot["ref"],
        "--snapshot-sha256", snapshot["sha256"], "--image", record["image"], "--output", record["output"],
        "--profile", record["profile"]["name"],
    ]  # fmt: skip
    if record.get("resume"):
        submit += ["--resume-bundle", record["resume"]["bundle"], "--resume-digest", record["resume"]["digest"]]
    run = ["anchor", "mission", "run", record["output"], "--no-sandbox", "--service", service_url]
    # exec: the runner replaces the shell, so no process of ours that holds the token stays readable
    script = " ".join(shlex.quote(a) for a in submit) + " && exec " + " ".join(shlex.quote(a) for a in run)
    env = [{"name": "ANCHOR_DATA_DIR", "value": "/data"}, {"name": "ANCHOR_RPC_URL", "value": rpc_url},
           {"name": "HOME", "value": "/data/home"}]  # fmt: skip
    mounts = [
        {"name": "data", "mountPath": "/data"},
        {"name": "mission", "mountPath": f"/data/deployments/{record_file}", "subPath": record_file, "readOnly": True},
    ]  # fmt: skip
    main_mounts = [*mounts, {"name": "mission", "mountPath": "/mission", "readOnly": True}]
    volumes: list[dict[str, Any]] = [
        {"name": "data", "emptyDir": {}},
        {"name": "mission", "configMap": {"name": f"{name}-mission", "defaultMode": 0o444}},
    ]
    if results_claim:
        volumes.append({"name": "results", "persistentVolumeClaim": {"claimName": results_claim}})
        main_mounts.append({"name": "results", "mountPath": "/data/missions"})
    profile = record["profile"]
    bounds = {"cpu": profile["cpu"], "memory": profile["memory"]}
    small = {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}}
    minutes = int(record["mission"]["document"]["budget"]["minutes"])
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {
            "backoffLimit": 0,  # a mission runs once per output identity; a retry is a new submission
            "activeDeadlineSeconds": minutes * 60 + 600,  # the runner stops the command at the budget
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "securityContext": POD_SECURITY,
                    "initContainers": [
                        {"name": "fetch-snapshot", "image": record["image"],
                         "command": ["anchor", "snapshot", "fetch", f"sha256:{snapshot['sha256']}", "--from",
                                     snapshot["ref"]],
                         "env": env, "volumeMounts": mounts, "securityContext": CONTAINER_SECURITY,
                         "resources": small},
                    ],
                    "containers": [
                        {"name": "mission", "image": record["image"], "command": ["sh", "-c", script],
                         # this container is that image, by digest: the bundle binds it as where it ran
                         "env": [*env, {"name": "ANCHOR_IMAGE", "value": record["image"]}, token_env(token_secret)],
                         "volumeMounts": main_mounts,
                         "securityContext": CONTAINER_SECURITY,
                         "resources": {"requests": bounds, "limits": bounds}},
                    ],
                    "volumes": volumes,
                },
            },
        },
    }  # fmt: skip
    return [config, job]
