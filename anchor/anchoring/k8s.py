"""The anchoring service on Kubernetes: a replicated Deployment of `anchor serve`.

What the rendered objects do:
- every replica is `anchor serve` with a data directory of its own (an emptyDir: no shared disk);
  they share the PostgreSQL journal named by ANCHOR_JOURNAL_URL and coordinate flushes through it (a
  lease with a fencing token, anchor/journal/pg.py), so any number of them sign with one key;
- the journal URL, the signing key and the API token hashes come from a Secret, never the manifest;
- the registry's deployment record comes from a ConfigMap, so every replica checks the same code
  hash; the readiness probe is `/ready` (the registry's code on chain and the journal answering), the
  liveness probe `/health` (the process answers; never the chain, so a slow RPC does not restart pods);
- a PodDisruptionBudget keeps one replica serving through voluntary disruptions.

The image is pinned by digest (`name@sha256:…`); a tag is refused, as for the researchers' Job.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from anchor.errors import BadInput
from anchor.record import Value

if TYPE_CHECKING:
    from anchor.settings.session import Settings

DIGEST_REF = re.compile(r"^[a-z0-9][a-z0-9._/:-]*@sha256:[0-9a-f]{64}$")
NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,40}[a-z0-9])?$")
QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")
HTTP_URL = re.compile(r"^https?://[^\s]+$")
UID = 10001
PORT = 8000
POD_SECURITY = {
    "runAsNonRoot": True,
    "runAsUser": UID,
    "runAsGroup": UID,
    "fsGroup": UID,
    "seccompProfile": {"type": "RuntimeDefault"},
}
CONTAINER_SECURITY = {
    "runAsNonRoot": True,
    "runAsUser": UID,
    "runAsGroup": UID,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
}


def check_image(image: str, field: str = "image") -> None:
    if not DIGEST_REF.match(image):
        raise BadInput(
            f"{field}: {image!r} is not pinned by digest (name@sha256:<64 hex>); a tag can move",
            detail={"field": field},
        )


def check_cidr(cidr: str) -> None:
    """An egress CIDR for a NetworkPolicy (IPv4 or IPv6, host bits clear)."""
    import ipaddress

    try:
        ipaddress.ip_network(cidr, strict=True)
    except ValueError as exc:
        raise BadInput(f"--egress-cidr {cidr!r}: not a CIDR ({exc})", detail={"field": "egress_cidr"}) from None


def check_name(field: str, value: str) -> None:
    if not NAME.match(value):
        raise BadInput(f"{field}: {value!r} is not a DNS-1123 label of at most 42 characters", detail={"field": field})


NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def check_render_targets(chain_rpc_url: str | None, namespace: str | None) -> None:
    """What every rendered workload (the service, researchers, a mission) takes alike: the chain's RPC URL
    as the pods reach it (`--chain-rpc-url`), and the namespace, a DNS-1123 label: a name the cluster
    would refuse (`Anchor Prod`) was rendered, to be refused at `kubectl apply`."""
    if chain_rpc_url is not None and not HTTP_URL.match(chain_rpc_url):
        raise BadInput(f"chain_rpc_url: {chain_rpc_url!r} is not an http(s) URL", detail={"field": "chain_rpc_url"})
    if namespace is not None and not NAMESPACE.match(namespace):
        raise BadInput(
            f"namespace: {namespace!r} is not a DNS-1123 label (lowercase letters, digits and '-', at most 63)",
            detail={"field": "namespace"},
        )


def check_service_url(url: str) -> None:
    """The anchoring service's URL as the pods reach it (http or https, no credentials in it)."""
    if not HTTP_URL.match(url) or "@" in url.split("//", 1)[-1].split("/", 1)[0]:
        raise BadInput(
            f"--service-url {url!r}: an http(s) URL without credentials (the token goes in its Secret)",
            detail={"field": "service_url"},
        )


def token_variable(secret: str) -> dict[str, Any]:
    """ANCHOR_SERVICE_TOKEN from one key (`token`) of one Secret: never `envFrom` a whole Secret, which
    would hand the pod whatever else was put in it (a funded key, a journal URL)."""
    return {"name": "ANCHOR_SERVICE_TOKEN", "valueFrom": {"secretKeyRef": {"name": secret, "key": "token"}}}


def check_pods_anchor_through(
    target: str, usage: str, keys_secret: str | None, service_url: str | None, *, pod: str, instead: str
) -> str:
    """What every rendered workload (researchers, a mission) is refused alike: a target other than k8s,
    the funded key in a pod (`--keys-secret`, gone: `instead` says what replaced it), and no anchoring
    service to anchor through. Returns the service URL. `pod` names the pods in words, `usage` the
    command as it should be typed."""
    if target != "k8s":
        raise BadInput(f"render: unknown target {target!r} (hint: {usage})", detail={"field": "target"})
    if keys_secret is not None:
        raise BadInput(
            f"--keys-secret: {pod} no longer gets the funded key; give {instead}", detail={"field": "keys_secret"}
        )
    if service_url is None:
        raise BadInput(
            f"--service-url is required: {pod} anchors through the service that holds the funded key"
            " (hint: --service-url http://anchor:8000)",
            detail={"field": "service_url"},
        )
    return service_url


def check_quantity(field: str, value: str) -> None:
    if not QUANTITY.match(value):
        raise BadInput(f"{field}: {value!r} is not a Kubernetes quantity", detail={"field": field})


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ServiceSpec(Value):
    image: str
    rpc_url: str
    deployment: dict[str, Any]
    """The registry's deployment record (deployments/<chain id>.json), mounted into every replica."""
    public_url: str
    replicas: int = 3
    name: str = "anchor"
    keys_secret: str = "anchor-keys"  # noqa: S105 - the name of a Secret object, not a secret
    cpu: str = "500m"
    memory: str = "512Mi"
    namespace: str | None = None

    def check(self) -> ServiceSpec:
        """Refuse what would render a Deployment that cannot serve as asked, naming the field."""
        check_image(self.image)
        check_name("name", self.name)
        check_name("keys_secret", self.keys_secret)
        if not 1 <= self.replicas <= 32:
            raise BadInput("replicas: between 1 and 32", detail={"field": "replicas"})
        for field, value in (("cpu", self.cpu), ("memory", self.memory)):
            check_quantity(field, value)
        check_render_targets(self.rpc_url, self.namespace)
        if not HTTP_URL.match(self.public_url):
            raise BadInput(f"public_url: {self.public_url!r} is not an http(s) URL", detail={"field": "public_url"})
        chain_id = self.deployment.get("chain_id")
        if not isinstance(chain_id, int) or not str(self.deployment.get("code_hash", "")).startswith("0x"):
            raise BadInput(
                "deployment: not a deployment record (no chain_id or code_hash)", detail={"field": "deployment"}
            )
        return self


def render_service_for(
    settings: Settings,
    target: str,
    *,
    image: str | None,
    replicas: int,
    rpc_url: str | None,
    public_url: str | None,
    keys_secret: str,
    namespace: str | None,
) -> tuple[str, str]:
    """`anchor render TARGET`: (the YAML, what it holds in words) for this data dir's one
    deployment record, or `BadInput` naming the first option missing. `settings.rpc_url` stands in for
    `rpc_url` (the chain as the pods reach it) when that is not given."""
    from anchor.chain.deployment import only_deployment

    if target != "k8s":
        raise BadInput(f"render: unknown target {target!r} (hint: anchor render k8s ...)", detail={"field": "target"})
    rpc_url = rpc_url or settings.rpc_url
    missing = [
        name
        for name, value in (("--image", image), ("--chain-rpc-url", rpc_url), ("--public-url", public_url))
        if not value
    ]
    if missing:
        raise BadInput(f"render k8s needs {', '.join(missing)}", detail={"field": missing[0].lstrip("-")})
    record = only_deployment(settings.data_dir)  # a record every replica will accept
    spec = ServiceSpec(
        image=str(image),
        rpc_url=str(rpc_url),
        deployment=record.model_dump(mode="json"),
        public_url=str(public_url),
        replicas=replicas,
        keys_secret=keys_secret,
        namespace=namespace,
    )
    return to_yaml(render_service(spec)), (
        f"a ConfigMap (the deployment record), a Deployment of {replicas} replica(s) with /ready as readiness probe,"
        f" a Service and a PodDisruptionBudget; create Secret {keys_secret!r} first (docs/deploy.md)"
    )


def render_service(spec: ServiceSpec) -> list[dict[str, Any]]:
    """The ConfigMap with the deployment record, the Deployment, its Service and PodDisruptionBudget."""
    spec.check()
    labels = {**SERVICE_PODS, "app.kubernetes.io/instance": spec.name}
    meta: dict[str, Any] = {"name": spec.name, "labels": labels}
    if spec.namespace:
        meta["namespace"] = spec.namespace
    record_file = f"{spec.deployment['chain_id']}.json"
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {**meta, "name": f"{spec.name}-deployment"},
        "data": {record_file: json.dumps(spec.deployment, indent=2, sort_keys=True)},
    }
    probe = {
        "httpGet": {"path": "/ready", "port": PORT},
        "periodSeconds": 10,
        "timeoutSeconds": 5,
        "failureThreshold": 3,
    }
    container = {
        "name": "serve",
        "image": spec.image,
        "command": ["anchor", "serve", "--host", "0.0.0.0", "--port", str(PORT), "--public-url", spec.public_url],  # noqa: S104
        "ports": [{"name": "http", "containerPort": PORT}],
        "env": [
            {"name": "ANCHOR_DATA_DIR", "value": "/data"},
            {"name": "ANCHOR_RPC_URL", "value": spec.rpc_url},
            {"name": "HOME", "value": "/data/home"},
        ],
        "envFrom": [{"secretRef": {"name": spec.keys_secret}}],  # ANCHOR_JOURNAL_URL, the key, token hashes
        "readinessProbe": probe,
        "livenessProbe": {"httpGet": {"path": "/health", "port": PORT}, "periodSeconds": 20, "timeoutSeconds": 5},
        "startupProbe": {"httpGet": {"path": "/health", "port": PORT}, "periodSeconds": 2, "failureThreshold": 60},
        "volumeMounts": [
            {"name": "data", "mountPath": "/data"},
            {
                "name": "deployment",
                "mountPath": f"/data/deployments/{record_file}",
                "subPath": record_file,
                "readOnly": True,
            },
        ],
        "securityContext": CONTAINER_SECURITY,
        "resources": {
            "requests": {"cpu": spec.cpu, "memory": spec.memory},
            "limits": {"cpu": spec.cpu, "memory": spec.memory},
        },
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": meta,
        "spec": {
            "replicas": spec.replicas,
            "selector": {"matchLabels": labels},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "securityContext": POD_SECURITY,
                    "terminationGracePeriodSeconds": 60,  # a flush under way finishes (or its lease lapses)
                    "containers": [container],
                    "volumes": [
                        {"name": "data", "emptyDir": {}},
                        {"name": "deployment", "configMap": {"name": f"{spec.name}-deployment", "defaultMode": 0o444}},
                    ],
                },
            },
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta,
        "spec": {"selector": labels, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]},
    }
    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": meta,
        "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}},
    }
    return [config, deployment, service, budget]


SERVICE_PODS = {"app.kubernetes.io/name": "anchor-serve"}
"""How `render_service` labels the anchoring service's pods: what a Job's NetworkPolicy lets its pods reach."""


def network_policy(meta: dict[str, Any], pods: dict[str, str], egress_cidrs: tuple[str, ...]) -> dict[str, Any]:
    """Nothing in; out only DNS, the anchoring service's pods and `egress_cidrs` (as the pod's trusted
    steps need: the snapshot's host, the RPC). Shared by the mission Job and the researchers' Job."""
    egress: list[dict[str, Any]] = [
        {
            "to": [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
            "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
        },
        {"to": [{"podSelector": {"matchLabels": SERVICE_PODS}}]},
    ]
    if egress_cidrs:
        egress.append({"to": [{"ipBlock": {"cidr": cidr}} for cidr in egress_cidrs]})
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": meta,
        "spec": {
            "podSelector": {"matchLabels": pods},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [],
            "egress": egress,
        },
    }


def to_yaml(documents: list[dict[str, Any]]) -> str:
    """Multi-document YAML, every value written out (no anchors or aliases: what a reviewer reads is
    what runs)."""
    import yaml

    class Plain(yaml.SafeDumper):  # type: ignore[misc]  # PyYAML ships no types
        def ignore_aliases(self, data: Any) -> bool:
            return True

    return "".join("---\n" + yaml.dump(doc, Dumper=Plain, sort_keys=False, width=200) for doc in documents)
