"""Real git repositories and scripted proposers for the research tests."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from anchor.research.contract import AttemptContract

if TYPE_CHECKING:
    from tests.conftest import Chain

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
}

# the command reads x from params.json and reports it as the metric: the test controls every score
SCORE_IS_X = (
    "python3 -c \"import json,sys; x=json.load(open('params.json'))['x'];"
    " open(sys.argv[1]+'/metrics.jsonl','a').write(json.dumps({'score': x})+chr(10))\" {run_dir}"
)


def make_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for rel, content in files.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(content)
    env = {**GIT_ENV, "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "init", "-q", str(path)], check=True, env=env)
    subprocess.run(["git", "-C", str(path), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(path), "commit", "-qm", "start"], check=True, env=env)
    return path


def params_repo(path: Path, x: float) -> Path:
    return make_repo(path, {"params.json": json.dumps({"x": x}), "README.md": "a search\n"})


def contract(
    mode: str = "max", min_improvement: float = 0.0, command: str = SCORE_IS_X, timeout_min: float = 1.0
) -> AttemptContract:
    return AttemptContract(
        task="test",
        command=command,
        editable=("params.json",),
        metric="score",
        mode=mode,  # type: ignore[arg-type]
        attempt_timeout_minutes=timeout_min,
        min_improvement=min_improvement,
        grace_seconds=0.5,
    )


class ScriptedProposer:
    """Writes the next scripted x into params.json, or runs a callable for hostile proposals."""

    def __init__(self, values: list[object]) -> None:
        self.values = list(values)

    def propose(self, repo: Path, attempt: int) -> None:
        value = self.values.pop(0)
        if callable(value):
            value(repo)
        else:
            (repo / "params.json").write_text(json.dumps({"x": value}))


@dataclass(frozen=True)
class Exported:
    claim: Path
    report: str
    trusted: str
    """N:HASH of the claim's last block, read from the chain while it ran (as a reader reads an explorer)."""


def export_example_claim(
    chain: Chain, tmp_path: Path, name: str = "claim.anchor.tar", researchers: int = 1
) -> Exported:
    """examples/research searched for 4 attempts (each of `researchers`) on `chain` (deployed here), its
    report, and its claim exported to `tmp_path/name` with the block a reader trusts."""
    from anchor.chain.node import rpc_call
    from tests.conftest import ROOT

    chain.cli("deploy", check=True)
    example = ROOT / "examples" / "research"
    repo = make_repo(tmp_path / "repo", {n: (example / n).read_text() for n in ("train.py", "params.json", "data.csv")})
    chain.cli(
        "research",
        "run",
        "--repo",
        str(repo),
        "--contract",
        str(example / "contract.toml"),
        "--max-attempts",
        "4",
        "--researchers",
        str(researchers),
        check=True,
    )
    report = chain.cli("research", "report", check=True).stdout
    said = json.loads(chain.cli("--json", "research", "export", "-o", str(tmp_path / name), check=True).stdout)
    block = rpc_call(chain.node.rpc_url, "eth_getBlockByNumber", [hex(said["trust_block"]), False])
    assert isinstance(block, dict)
    return Exported(tmp_path / name, report, f"{said['trust_block']}:{block['hash']}")
