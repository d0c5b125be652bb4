"""Researchers on Kubernetes: an Indexed Job whose completion index is the researcher id.

What the rendered manifests do, per pod (researcher r<JOB_COMPLETION_INDEX>):
1. `wait-ready` (init): waits until every URL in READY_URLS answers (the chain's RPC, the API's
   health route) with a status below 500, so no researcher starts against a chain that is not up;
2. `clone` (init): clones the repository and checks out the baseline commit, detached;
3. `researcher`: `anchor research run --service URL` on that clone, every attempt in bubblewrap
   (the pod holds keys, so `--no-sandbox` is never rendered; `sandbox_runtime` says how the pod lets
   bubblewrap run), with the contract from a ConfigMap
   mounted read-only, every measured commit pushed to the shared remote (`--push`). No funded key is
   in the pod (docs/calendar.md): the anchoring service holds it; the pod holds a submit+relay token
   and the researcher's own signing key, each one key of a Secret (`secretKeyRef`, never `envFrom`
   a whole Secret). The ledger is shared through a ReadWriteMany volume (`ledger_claim`) or a
   PostgreSQL URL of its own (`ledger_secret`, key `url`: a database for the ledger, never the
   service's journal); with neither, it stays in the pod (and is lost with it; the CLI says so).

The image is pinned by digest (`name@sha256:…`); a tag is refused: a tag can move, and the manifest
would then run code nobody reviewed. Resource requests equal limits (a Guaranteed pod: attempts are
measured under identical bounds).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anchor.anchoring.k8s import (
    UID,
    check_cidr,
    check_image,
    check_name,
    check_quantity,
    check_render_targets,
    check_service_url,
    network_policy,
    to_yaml,
    token_variable,
)
from anchor.errors import BadInput, did_you_mean
from anchor.record import Value

COMMIT = re.compile(r"^([0-9a-f]{40}|[0-9a-f]{64})$")
__all__ = ["JobSpec", "render_job", "render_researchers", "to_yaml"]

WAIT_READY = """import os, sys, time, urllib.request
urls = os.environ.get("READY_URLS", "").split()
for url in urls:
    while True:
        try:
            status = urllib.request.urlopen(url, timeout=5).status
        except urllib.error.HTTPError as exc:
            status = exc.code
        except OSError as exc:
            status = None
            print(f"waiting for {url}: {exc}", file=sys.stderr)
        if status is not None and status < 500:
            print(f"ready: {url} ({status})")
            break
        time.sleep(2)
"""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class JobSpec(Value):
    name: str
    researchers: int
    image: str
    repo_url: str
    baseline: str
    contract: bytes
    push: str
    ready_urls: tuple[str, ...] = ()
    rpc_url: str | None = None
    service_url: str = ""
    token_secret: str = "anchor-service-token"  # noqa: S105 - the name of a Secret object, not a secret
    researcher_secret: str = "anchor-researcher"  # noqa: S105 - the name of a Secret object
    ledger_secret: str | None = None
    max_attempts: int = 20
    budget_minutes: float = 60.0
    cpu: str = "1"
    memory: str = "2Gi"
    namespace: str | None = None
    ledger_claim: str | None = None
    sandbox_runtime: str = "gvisor"
    """How the pod lets bubblewrap make its namespaces (the runtime default seccomp profile refuses
    them): `gvisor` (the pod runs under `runtime_class`, gVisor's runsc) or `seccomp` (the researcher
    container under deploy/k8s/anchor-bwrap.seccomp.json, installed on the nodes, in a user-namespaced
    pod with an unmasked /proc). Attempts never run unconfined in a pod: it holds keys."""
    runtime_class: str = "gvisor"
    egress_cidrs: tuple[str, ...] = ()

    def check(self) -> JobSpec:
        """Refuse what would render a Job that cannot run as asked, naming the field."""
        check_image(self.image)
        check_name("name", self.name)
        check_name("token_secret", self.token_secret)
        check_name("researcher_secret", self.researcher_secret)
        if self.ledger_secret is not None:
            check_name("ledger_secret", self.ledger_secret)
        check_service_url(self.service_url)
        if self.ledger_claim is not None:
            check_name("ledger_claim", self.ledger_claim)
        if self.sandbox_runtime not in ("gvisor", "seccomp"):
            hint = did_you_mean(self.sandbox_runtime, ("gvisor", "seccomp"))
            raise BadInput(
                f"--sandbox-runtime: {self.sandbox_runtime!r} is neither gvisor nor seccomp{hint}",
                detail={"field": "sandbox_runtime"},
            )
        check_name("runtime_class", self.runtime_class)
        for cidr in self.egress_cidrs:
            check_cidr(cidr)
        if not COMMIT.match(self.baseline):
            raise BadInput(f"baseline: {self.baseline!r} is not a full commit id", detail={"field": "baseline"})
        if not 1 <= self.researchers <= 64:
            raise BadInput("researchers: between 1 and 64", detail={"field": "researchers"})
        for field, value in (("cpu", self.cpu), ("memory", self.memory)):
            check_quantity(field, value)
        for url in self.ready_urls:
            if not re.match(r"^https?://[^\s]+$", url):
                raise BadInput(f"ready_urls: {url!r} is not an http(s) URL", detail={"field": "ready_urls"})
        check_render_targets(self.rpc_url, self.namespace)
        return self


def render_researchers(
    target: str, contract: Path, *, keys_secret: str | None = None, no_sandbox: bool = False, **fields: Any
) -> tuple[str, str]:
    """`anchor research render TARGET`: (the YAML, what it holds in words) for a `JobSpec` of `fields`
    (`push` defaults to `repo_url`), the contract read from `contract` and refused here if the
    researchers would refuse it. A researcher pod holds the service token and its own key: it anchors
    through `service_url` (the funded key's `keys_secret` is refused) and never runs attempts unconfined."""
    from anchor.anchoring.k8s import check_pods_anchor_through
    from anchor.research.contract import load_contract

    fields["service_url"] = check_pods_anchor_through(
        target,
        "anchor research render k8s ...",
        keys_secret,
        fields.get("service_url"),
        pod="a researcher pod",
        instead="--service-url URL, --token-secret NAME and --researcher-secret NAME",
    )
    if no_sandbox:
        raise BadInput(
            "--no-sandbox: a researcher pod holds the service token and the researcher's key, so its"
            " attempts run in bubblewrap (hint: --sandbox-runtime gvisor|seccomp, docs/research.md)",
            detail={"field": "no_sandbox"},
        )
    load_contract(contract)
    spec = JobSpec(
        **{
            **fields,
            "contract": contract.read_bytes(),
            "baseline": str(fields["baseline"]).lower(),
            "push": fields.get("push") or fields["repo_url"],
        }
    )
    shared = (
        ""
        if spec.ledger_claim or spec.ledger_secret
        else ("; the pods share a ledger only through --ledger-secret (PostgreSQL) or --ledger-claim")
    )
    return to_yaml(render_job(spec)), (
        f"a ConfigMap, an Indexed Job of {spec.researchers} researcher(s) and its NetworkPolicy{shared}"
    )


def render_job(spec: JobSpec) -> list[dict[str, Any]]:
    """The ConfigMap with the contract and the Indexed Job, as Kubernetes objects."""
    spec.check()
    labels = {"app.kubernetes.io/name": "anchor-research", "app.kubernetes.io/instance": spec.name}
    meta: dict[str, Any] = {"name": spec.name, "labels": labels}
    if spec.namespace:
        meta["namespace"] = spec.namespace
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {**meta, "name": f"{spec.name}-contract"},
        "data": {"contract.toml": spec.contract.decode("utf-8")},
    }
    workdir = "/shared/search" if spec.ledger_claim else "/work/search"
    run = [
        "anchor",
        "research",
        "run",
        "--repo",
        "/work/repo",
        "--contract",
        "/contract/contract.toml",
        "--workdir",
        workdir,
        "--push",
        spec.push,
        "--max-attempts",
        str(spec.max_attempts),
        "--budget-minutes",
        f"{spec.budget_minutes:g}",
        "--service",
        spec.service_url,
    ]
    command = " ".join(shlex.quote(a) for a in run) + ' --researcher "r${JOB_COMPLETION_INDEX}"'
    clone = (
        f"git clone --quiet --no-checkout {shlex.quote(spec.repo_url)} /work/repo"
        f" && git -C /work/repo checkout --quiet --detach {spec.baseline}"
    )
    security = {
        "runAsNonRoot": True,
        "runAsUser": UID,
        "runAsGroup": UID,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }
    resources = {
        "requests": {"cpu": spec.cpu, "memory": spec.memory},
        "limits": {"cpu": spec.cpu, "memory": spec.memory},
    }
    small = {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"cpu": "100m", "memory": "128Mi"}}
    mounts = [{"name": "work", "mountPath": "/work"}]
    env = [
        {"name": "ANCHOR_DATA_DIR", "value": "/shared/data" if spec.ledger_claim else "/work/data"},
        {"name": "HOME", "value": "/work/home"},
        {"name": "GIT_TERMINAL_PROMPT", "value": "0"},
    ]
    if spec.rpc_url:
        env.append({"name": "ANCHOR_RPC_URL", "value": spec.rpc_url})
    env.append({"name": "ANCHOR_IMAGE", "value": spec.image})  # every record binds the image it ran in
    keys = [
        token_variable(spec.token_secret),
        {
            "name": "ANCHOR_RESEARCHER_KEY",
            "valueFrom": {"secretKeyRef": {"name": spec.researcher_secret, "key": "key"}},
        },
    ]
    if spec.ledger_secret:
        keys.append(
            {"name": "ANCHOR_JOURNAL_URL", "valueFrom": {"secretKeyRef": {"name": spec.ledger_secret, "key": "url"}}}
        )
    volumes: list[dict[str, Any]] = [
        {"name": "work", "emptyDir": {}},
        {"name": "contract", "configMap": {"name": f"{spec.name}-contract"}},
    ]
    main_mounts = [*mounts, {"name": "contract", "mountPath": "/contract", "readOnly": True}]
    if spec.ledger_claim:
        volumes.append({"name": "shared", "persistentVolumeClaim": {"claimName": spec.ledger_claim}})
        main_mounts.append({"name": "shared", "mountPath": "/shared"})
    researcher_security: dict[str, Any] = dict(security)
    runtime: dict[str, Any] = {}
    if spec.sandbox_runtime == "gvisor":
        runtime["runtimeClassName"] = spec.runtime_class
    else:
        researcher_security.update(
            seccompProfile={"type": "Localhost", "localhostProfile": "profiles/anchor-bwrap.json"},
            appArmorProfile={"type": "Unconfined"},  # the runtime default AppArmor profile refuses mount
            procMount="Unmasked",  # bubblewrap mounts a /proc of its own: a masked one may not be covered
        )
        runtime["hostUsers"] = False  # an unmasked /proc only in a user-namespaced pod
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": {
            "completionMode": "Indexed",
            "completions": spec.researchers,
            "parallelism": spec.researchers,
            "backoffLimitPerIndex": 1,
            "maxFailedIndexes": spec.researchers,
            "activeDeadlineSeconds": int(spec.budget_minutes * 60) + 1800,
            "template": {
                "metadata": {"labels": meta["labels"]},
                "spec": {
                    "restartPolicy": "Never",
                    **runtime,
                    "automountServiceAccountToken": False,  # attempts run here: no way to the cluster's API
                    "enableServiceLinks": False,
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": UID,
                        "fsGroup": UID,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "initContainers": [
                        {
                            "name": "wait-ready",
                            "image": spec.image,
                            "command": ["python3", "-c", WAIT_READY],
                            "env": [{"name": "READY_URLS", "value": " ".join(spec.ready_urls)}],
                            "securityContext": security,
                            "resources": small,
                        },
                        {
                            "name": "clone",
                            "image": spec.image,
                            "command": ["sh", "-c", clone],
                            "env": env,
                            "volumeMounts": mounts,
                            "securityContext": security,
                            "resources": small,
                        },
                    ],
                    "containers": [
                        {
                            "name": "researcher",
                            "image": spec.image,
                            "command": ["sh", "-c", command],
                            "env": [*env, *keys],
                            "volumeMounts": main_mounts,
                            "securityContext": researcher_security,
                            "resources": resources,
                        },
                    ],
                    "volumes": volumes,
                },
            },
        },
    }
    return [config, job, network_policy(meta, labels, spec.egress_cidrs)]
