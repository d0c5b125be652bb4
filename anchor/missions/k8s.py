"""A dispatched mission on Kubernetes (`anchor mission render k8s`): the runner's trusted steps and
the submitter's command in separate containers of one pod, in turn.

Why three containers: the submitter's image is untrusted code. If it shares a container (or a
process table, or a writable snapshot) with whatever holds the service token, it can read the token
from /proc, or change the snapshot under the runner. So the pod runs, one after another:
1. `prepare` (init, the anchor image): `anchor mission submit` (the dispatcher's checks again), then
   `anchor mission run --stage prepare`: the snapshot fetched and verified against its SHA-256 into a
   volume of its own, the milestones so far kept in the anchor data volume;
2. `command` (init, the dispatched image by digest): the mission's command alone, with the snapshot
   volume read-only, its result volume writable, and nothing else: no Secret, no environment from one,
   no service account token (`automountServiceAccountToken: false`), no service links, on the
   mission's resource profile (requests = limits). A command that fails fails the pod: nothing is
   anchored, as on a host;
3. `seal` (the anchor image): `anchor mission run --stage seal` hashes the result volume (mounted
   read-only; links refused) and stamps the bundle through the anchoring service with the submit-only
   token of `token_secret` (key `token`), the only container that has it.

The rendered NetworkPolicy denies the pod all ingress and all egress but DNS, the anchoring service's
pods (`app.kubernetes.io/name: anchor-serve`, as `anchor deploy render k8s` labels them) and the CIDRs
given with `--egress-cidr` (the snapshot's host, the chain's RPC). A policy is per pod, so the command
can reach those too, but without a token the service only answers public reads.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from anchor.missions.dispatch import MissionRecord
    from anchor.settings.session import Settings

POD_TMP = "/tmp"  # noqa: S108 - the command container's own emptyDir (1 GiB), not a shared host /tmp


def render_mission(
    settings: Settings,
    target: str,
    output: str,
    *,
    rpc_url: str | None,
    service_url: str | None,
    anchor_image: str | None,
    keys_secret: str | None = None,
    token_secret: str = "anchor-service-token",  # noqa: S107
    results_claim: str | None = None,
    namespace: str | None = None,
    egress_cidrs: tuple[str, ...] = (),
) -> tuple[str, str]:
    """`anchor mission render TARGET OUTPUT`: (the YAML, what it holds in words) for the dispatched mission
    of `output`, or the first thing missing or wrong as `BadInput` (`NotAnchored` for an unknown output).
    `settings.rpc_url` stands in for `rpc_url` (the chain as the pod reaches it) when that is not given;
    a pod holds no funded key (`keys_secret` is refused): it anchors through `service_url`."""
    from anchor.anchoring.k8s import check_pods_anchor_through, to_yaml
    from anchor.chain.deployment import only_deployment
    from anchor.errors import BadInput, NotAnchored
    from anchor.missions.dispatch import dispatched

    service_url = check_pods_anchor_through(
        target,
        "anchor mission render k8s OUTPUT ...",
        keys_secret,
        service_url,
        pod="a mission pod",
        instead="--service-url URL and --token-secret NAME (a Secret whose key `token` is a submit-only service token)",
    )
    if anchor_image is None:
        raise BadInput(
            "--anchor-image is required: the anchor image (name@sha256:…) that prepares and seals the"
            " mission, apart from the submitter's image",
            detail={"field": "anchor_image"},
        )
    rpc_url = rpc_url or settings.rpc_url
    if not rpc_url:
        raise BadInput("chain_rpc_url: required (the chain as the pod reaches it)", detail={"field": "chain_rpc_url"})
    record = dispatched(settings.data_dir, output)
    if record is None:
        raise NotAnchored(
            f"output: no dispatched mission has output {output!r} (hint: anchor mission submit)",
            detail={"field": "output"},
        )
    if not record["snapshot"]["ref"].startswith(("https://", "http://")):
        raise BadInput(
            f"snapshot: {record['snapshot']['ref']!r} is a path on this machine; a pod fetches an http(s) URL"
            " (submit the mission with --snapshot URL)",
            detail={"field": "snapshot"},
        )
    deployment = only_deployment(settings.data_dir).model_dump(mode="json")
    documents = render_job(
        record, deployment, rpc_url, service_url, anchor_image, token_secret, results_claim, namespace, egress_cidrs
    )
    return to_yaml(documents), f"a ConfigMap, a Job and its NetworkPolicy for mission output {output!r}"


def render_job(
    record: MissionRecord,
    deployment: dict[str, Any],
    rpc_url: str,
    service_url: str,
    anchor_image: str,
    token_secret: str = "anchor-service-token",  # noqa: S107 - the name of a Secret object
    results_claim: str | None = None,
    namespace: str | None = None,
    egress_cidrs: tuple[str, ...] = (),
) -> list[dict[str, Any]]:
    """The ConfigMap (the mission and the deployment record), the Job and its NetworkPolicy (see the
    module's steps). The result volume is `results_claim` (a PersistentVolumeClaim, this mission's own
    sub-path of it) when one is named, else an emptyDir that leaves with the pod (the anchored proof
    stays in the service's journal)."""
    from anchor.anchoring.k8s import (
        CONTAINER_SECURITY,
        POD_SECURITY,
        check_cidr,
        check_image,
        check_name,
        check_render_targets,
        check_service_url,
        network_policy,
        token_variable,
    )
    from anchor.missions.runner import command_line, one_attempt_only

    check_image(record["image"])
    check_image(anchor_image, "anchor_image")
    check_name("token_secret", token_secret)
    check_render_targets(rpc_url, namespace)
    check_service_url(service_url)
    for cidr in egress_cidrs:
        check_cidr(cidr)
    one_attempt_only(record["mission"]["document"])
    if record.get("resume"):
        from anchor.errors import BadInput

        raise BadInput(
            "resume: a pod has no earlier result directory to start from; run a resumed mission on the"
            " host that ran the pinned bundle",
            detail={"field": "resume"},
        )
    if results_claim is not None:
        check_name("results_claim", results_claim)
    name = "mission-" + hashlib.sha256(record["output"].encode()).hexdigest()[:12]
    labels = {"app.kubernetes.io/name": "anchor-mission", "anchor.invalid/output-sha256": name[8:]}
    meta: dict[str, Any] = {"name": name, "labels": labels}
    if namespace:
        meta["namespace"] = namespace
    record_file = f"{deployment['chain_id']}.json"
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {**meta, "name": f"{name}-mission"},
        "data": {
            "mission.json": json.dumps(record["mission"]["document"], sort_keys=True),
            record_file: json.dumps(deployment, sort_keys=True),
        },
    }
    snapshot = record["snapshot"]
    submit = [
        "anchor",
        "mission",
        "submit",
        "--mission",
        "/mission-file/mission.json",
        "--mission-digest",
        record["mission"]["digest"],
        "--snapshot",
        snapshot["ref"],
        "--snapshot-sha256",
        snapshot["sha256"],
        "--image",
        record["image"],
        "--output",
        record["output"],
        "--profile",
        record["profile"]["name"],
    ]
    prepare = ["anchor", "mission", "run", record["output"], "--stage", "prepare", "--workspace", "/mission"]
    seal = [
        "anchor",
        "mission",
        "run",
        record["output"],
        "--stage",
        "seal",
        "--workspace",
        "/mission",
        "--service",
        service_url,
    ]
    quoted = " ".join(shlex.quote(a) for a in submit) + " && exec " + " ".join(shlex.quote(a) for a in prepare)
    anchor_env = [
        {"name": "ANCHOR_DATA_DIR", "value": "/data"},
        {"name": "ANCHOR_RPC_URL", "value": rpc_url},
        {"name": "HOME", "value": "/data/home"},
    ]
    data_mounts = [
        {"name": "data", "mountPath": "/data"},
        {"name": "mission", "mountPath": f"/data/deployments/{record_file}", "subPath": record_file, "readOnly": True},
    ]
    result_mount: dict[str, Any] = {"name": "result", "mountPath": "/mission/result"}
    if results_claim:
        result_mount["subPath"] = name  # this mission's own part of the claim, never another's
    volumes: list[dict[str, Any]] = [
        {"name": "data", "emptyDir": {}},
        {"name": "snapshot", "emptyDir": {}},
        {"name": "tmp", "emptyDir": {"sizeLimit": "1Gi"}},  # the command's only writable place besides its result
        {
            "name": "result",
            **({"persistentVolumeClaim": {"claimName": results_claim}} if results_claim else {"emptyDir": {}}),
        },
        {"name": "mission", "configMap": {"name": f"{name}-mission", "defaultMode": 0o444}},
    ]
    profile = record["profile"]
    bounds = {"cpu": profile["cpu"], "memory": profile["memory"]}
    small = {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}}
    minutes = int(record["mission"]["document"]["budget"]["minutes"])
    command, filled = command_line(record, "/mission/result", "/mission/snapshot/data", attempt=1)
    mission_env = [*({"name": k, "value": v} for k, v in filled.items()), {"name": "HOME", "value": POD_TMP}]
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {
            "backoffLimit": 0,  # a mission runs once per output identity; a retry is a new submission
            "activeDeadlineSeconds": minutes * 60 + 600,  # the budget, plus the trusted steps
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "automountServiceAccountToken": False,  # no container here talks to the cluster's API
                    "enableServiceLinks": False,  # nor learns its services from its environment
                    "securityContext": POD_SECURITY,
                    "initContainers": [
                        {
                            "name": "prepare",
                            "image": anchor_image,
                            "command": ["sh", "-c", quoted],
                            "env": anchor_env,
                            "volumeMounts": [
                                *data_mounts,
                                {"name": "mission", "mountPath": "/mission-file", "readOnly": True},
                                {"name": "snapshot", "mountPath": "/mission/snapshot"},
                                result_mount,
                            ],
                            "securityContext": CONTAINER_SECURITY,
                            "resources": small,
                        },
                        # the submitter's code: its own container, nothing of ours in it (see the module)
                        {
                            "name": "command",
                            "image": record["image"],
                            "command": ["sh", "-c", command],
                            "workingDir": "/mission/result",
                            "env": mission_env,
                            "volumeMounts": [
                                {"name": "snapshot", "mountPath": "/mission/snapshot", "readOnly": True},
                                result_mount,
                                {"name": "tmp", "mountPath": POD_TMP},
                            ],
                            "securityContext": {**CONTAINER_SECURITY, "readOnlyRootFilesystem": True},
                            "resources": {"requests": bounds, "limits": bounds},
                        },
                    ],
                    "containers": [
                        {
                            "name": "seal",
                            "image": anchor_image,
                            "command": seal,
                            "env": [*anchor_env, token_variable(token_secret)],
                            "volumeMounts": [*data_mounts, {**result_mount, "readOnly": True}],
                            "securityContext": CONTAINER_SECURITY,
                            "resources": small,
                        },
                    ],
                    "volumes": volumes,
                },
            },
        },
    }
    return [config, job, network_policy(meta, labels, egress_cidrs)]
