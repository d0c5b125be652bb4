"""`anchor research render k8s`: an Indexed Job per search, validated offline against the Kubernetes
schemas (kubernetes-validate, strict), and the refusals that keep a rendered Job honest."""

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

IMAGE = "registry.example/anchor@sha256:" + "ab" * 32
BASELINE = "c0" * 20
K8S = "1.30"


def _render(tmp_path: Path, *extra: str, as_json: bool = False) -> subprocess.CompletedProcess[str]:
    contract = tmp_path / "contract.toml"
    if not contract.exists():
        contract.write_text(
            'task = "t"\ncommand = "python3 train.py {run_dir}"\neditable = ["params.json"]\nmetric = "score"\n'
            'mode = "max"\nattempt_timeout_minutes = 1\n'
        )
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    return run_anchor(
        [
            *(["--json"] if as_json else []),
            "research",
            "render",
            "k8s",
            "--image",
            IMAGE,
            "--repo-url",
            "https://git.example/r.git",
            "--baseline",
            BASELINE,
            "--contract",
            str(contract),
            "--service-url",
            "http://anchor:8000",
            *extra,
        ],
        {**env, "ANCHOR_DATA_DIR": str(tmp_path / "data")},
    )


def _documents(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def test_the_rendered_indexed_job_validates_offline_and_runs_one_researcher_per_index(tmp_path: Path) -> None:
    rendered = _render(
        tmp_path,
        "--researchers",
        "4",
        "--ready-url",
        "http://chain:8545",
        "--ready-url",
        "http://api:8000/healthz",
        "--chain-rpc-url",
        "http://chain:8545",
        "--ledger-claim",
        "research-shared",
        "--push",
        "https://git.example/s.git",
    )
    assert rendered.returncode == 0, rendered.stderr
    config, job, policy = _documents(rendered.stdout)
    for doc in (config, job, policy):
        kubernetes_validate.validate(doc, K8S, strict=True)  # raises on any schema violation
    spec = job["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 4, 4)
    pod = spec["template"]["spec"]
    init = {c["name"]: c for c in pod["initContainers"]}
    assert [c["name"] for c in pod["initContainers"]] == ["wait-ready", "clone"]
    assert init["wait-ready"]["env"] == [{"name": "READY_URLS", "value": "http://chain:8545 http://api:8000/healthz"}]
    assert f"checkout --quiet --detach {BASELINE}" in init["clone"]["command"][-1]
    [main] = pod["containers"]
    assert all(c["image"] == IMAGE for c in [*pod["initContainers"], main])
    assert '--researcher "r${JOB_COMPLETION_INDEX}"' in main["command"][-1]
    assert "--push https://git.example/s.git" in main["command"][-1]
    assert {"name": "contract", "mountPath": "/contract", "readOnly": True} in main["volumeMounts"]
    assert config["data"]["contract.toml"] == (tmp_path / "contract.toml").read_text()
    assert main["resources"]["requests"] == main["resources"]["limits"] == {"cpu": "1", "memory": "2Gi"}
    assert main["securityContext"]["runAsNonRoot"] is True and "envFrom" not in main
    assert "--service http://anchor:8000" in main["command"][-1]
    secrets = {e["name"]: e["valueFrom"]["secretKeyRef"] for e in main["env"] if "valueFrom" in e}
    assert secrets == {
        "ANCHOR_SERVICE_TOKEN": {"name": "anchor-service-token", "key": "token"},
        "ANCHOR_RESEARCHER_KEY": {"name": "anchor-researcher", "key": "key"},
    }
    # no container of the Job refers to a funded key, by name or through a whole Secret
    assert "ANCHOR_PRIVATE_KEY" not in rendered.stdout and "ANCHOR_KEYSTORE" not in rendered.stdout
    assert "envFrom" not in rendered.stdout and "anchor-keys" not in rendered.stdout
    assert "&id" not in rendered.stdout and "*id" not in rendered.stdout  # every value written out
    # attempts run in bubblewrap inside this container, never unconfined beside its keys; the
    # pod runs under gVisor (which lets bubblewrap make namespaces), without a service account token
    assert "--no-sandbox" not in main["command"][-1] and pod["runtimeClassName"] == "gvisor"
    assert pod["automountServiceAccountToken"] is False and pod["enableServiceLinks"] is False
    assert policy["kind"] == "NetworkPolicy" and policy["spec"]["ingress"] == []
    assert policy["spec"]["podSelector"]["matchLabels"] == spec["template"]["metadata"]["labels"]


def test_under_the_seccomp_runtime_the_researcher_gets_the_shipped_profile_that_lets_bubblewrap_run(
    tmp_path: Path,
) -> None:
    import json

    rendered = _render(tmp_path, "--sandbox-runtime", "seccomp", "--egress-cidr", "192.0.2.0/24")
    assert rendered.returncode == 0, rendered.stderr
    _, job, policy = _documents(rendered.stdout)
    kubernetes_validate.validate(job, K8S, strict=True)
    pod = job["spec"]["template"]["spec"]
    [main] = pod["containers"]
    profile = {"type": "Localhost", "localhostProfile": "profiles/anchor-bwrap.json"}
    assert main["securityContext"]["seccompProfile"] == profile
    assert main["securityContext"]["procMount"] == "Unmasked" and pod["hostUsers"] is False
    assert "runtimeClassName" not in pod
    assert {"to": [{"ipBlock": {"cidr": "192.0.2.0/24"}}]} in policy["spec"]["egress"]
    shipped = json.loads((Path(__file__).parents[2] / "deploy" / "k8s" / "anchor-bwrap.seccomp.json").read_text())
    denied = {name for rule in shipped["syscalls"] for name in rule["names"]}
    assert {"unshare", "clone", "mount", "pivot_root", "umount2"}.isdisjoint(denied)  # what bubblewrap needs
    assert {"kexec_load", "bpf", "ptrace", "init_module", "open_by_handle_at"} <= denied


def test_a_researcher_pod_without_the_sandbox_is_refused(tmp_path: Path) -> None:
    rendered = _render(tmp_path, "--no-sandbox")
    assert rendered.returncode == ExitCode.BAD_INPUT and "holds the service token" in rendered.stderr
    assert not rendered.stdout


def test_the_wait_ready_script_is_valid_python() -> None:
    from anchor.research.k8s import WAIT_READY

    compile(WAIT_READY, "wait-ready", "exec")


def test_a_broken_job_is_caught_by_the_offline_validation(tmp_path: Path) -> None:
    """The validation can fail: a misspelt field is refused under the strict schema."""
    rendered = _render(tmp_path)
    _, job, _ = _documents(rendered.stdout)
    job["spec"]["completionsMode"] = job["spec"].pop("completionMode")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(job, K8S, strict=True)


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--image", "registry.example/anchor:latest"], "image"),
        (["--baseline", "main"], "baseline"),
        (["--memory", "lots"], "memory"),
        (["--name", "Anchor_Research"], "name"),
        (["--ready-url", "chain:8545"], "ready_urls"),
        (["--keys-secret", "anchor-keys"], "keys_secret"),
        (["--service-url", "anchor:8000"], "service_url"),
        (["--service-url", "https://user:pw@anchor.example"], "service_url"),
        (["--sandbox-runtime", "none"], "sandbox_runtime"),
        (["--egress-cidr", "example.com"], "egress_cidr"),
        (["--chain-rpc-url", "chain:8545"], "chain_rpc_url"),  # was refused as one of the ready_urls
        (["--namespace", "Research_Team\nkind: Secret"], "namespace"),  # was rendered, for the cluster to refuse
    ],
)
def test_what_would_render_a_job_that_cannot_run_as_asked_is_refused(
    tmp_path: Path, args: list[str], field: str
) -> None:
    rendered = _render(tmp_path, *args, as_json=True)
    assert rendered.returncode == ExitCode.BAD_INPUT and "Traceback" not in rendered.stderr
    error = json.loads(rendered.stdout)["error"]
    assert error["code"] == "bad_input" and error["detail"]["field"] == field, error
    assert error["message"].startswith(args[0]), error  # said as the option given


def test_an_existing_output_file_is_never_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "job.yaml"
    out.write_text("mine\n")
    rendered = _render(tmp_path, "--out", str(out))
    assert rendered.returncode == ExitCode.BAD_INPUT and out.read_text() == "mine\n"
    fresh = _render(tmp_path, "--out", str(tmp_path / "new.yaml"))
    assert fresh.returncode == 0 and len(_documents((tmp_path / "new.yaml").read_text())) == 3
