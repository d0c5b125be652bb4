"""Every attempt and champion record binds the environment it ran in: the interpreter the command
finds, its installed distributions (or a named lockfile), the host or image, and the digests of the
data the contract declares as inputs; a data file changed between two runs shows in the report."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from anchor.errors import ExitCode
from anchor.manifest.filetree import hash_tree
from anchor.research.environment import DISTRIBUTIONS, host_identity
from tests.conftest import Chain
from tests.research.helpers import make_repo

pytestmark = pytest.mark.sandbox  # runs attempts as processes (bubblewrap)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "research"


def _example_repo(tmp_path: Path) -> Path:
    files = {name: (EXAMPLE / name).read_text() for name in ("train.py", "params.json", "data.csv")}
    return make_repo(tmp_path / "repo", files)


def _attempts(chain: Chain) -> list[dict[str, object]]:
    rows = (chain.data_dir / "research" / "ledger.jsonl").read_text().splitlines()
    return [row for row in map(json.loads, rows) if "event" not in row]


def test_the_example_search_binds_its_interpreter_lock_host_and_data_and_a_data_change_shows(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    repo = _example_repo(tmp_path)
    contract = EXAMPLE / "contract.toml"
    run = ["research", "run", "--repo", str(repo), "--contract", str(contract), "--seed", "1"]
    fresh_chain.cli(*run, "--max-attempts", "3", check=True)
    first = _attempts(fresh_chain)
    data_digest = hash_tree(repo / "data.csv").digest.hex()
    for entry in first:
        env = entry["environment"]
        assert entry["version"] == 4 and env["interpreter"].startswith("CPython 3.")
        assert env["lock"]["source"] == DISTRIBUTIONS and len(env["lock"]["digest"]) == 64
        assert env["host"] == host_identity() and "image" not in env
        assert env["inputs"] == [{"path": "data.csv", "digest": data_digest}]
    # the champion record (replications and holdout) binds it too
    [record] = (fresh_chain.data_dir / "research" / "runs" / "r0").glob("champion-*-3.json")
    manifest = json.loads(record.read_text())["manifest"]
    assert manifest["version"] == 3 and manifest["environment"]["inputs"] == env["inputs"]
    audit = fresh_chain.cli("research", "verify")  # the audit rebuilds each v4 manifest, environment included
    assert audit.returncode == ExitCode.OK and "environment: bound by 3 attempts, 1 distinct one" in audit.stdout

    report = fresh_chain.cli("research", "report", check=True).stdout
    assert "environment: CPython 3." in report and f"inputs: data.csv {data_digest[:12]}…" in report


# reads its one number from a data file outside the repository (declared as an input, shown read-only)
READS_DATA = (
    "python3 -c \"import json,sys; x=json.load(open('params.json'))['x'];"
    " d=float(open(sys.argv[2]).read());"
    " open(sys.argv[1]+'/metrics.jsonl','a').write(json.dumps({'score': x+d})+chr(10))\""
    " {run_dir} DATA"
)


def test_a_data_file_changed_between_two_runs_shows_in_the_report(fresh_chain: Chain, tmp_path: Path) -> None:
    """An input outside the repository (a data path the command reads) is bound read-only in the
    sandbox and hashed before each attempt: changed between two runs of one search, the report names
    the attempt from which it differs and the two digests."""
    data = tmp_path / "shared" / "level.txt"
    data.parent.mkdir()
    data.write_text("0.5")
    repo = make_repo(tmp_path / "repo", {"params.json": json.dumps({"x": 1.0, "y": 3}), "README.md": "r\n"})
    contract = tmp_path / "contract.toml"
    command = READS_DATA.replace("DATA", str(data)).replace(chr(34), chr(92) + chr(34))
    contract.write_text(
        f'task = "t"\ncommand = "{command}"\neditable = ["params.json"]\nmetric = "score"\nmode = "max"\n'
        f'attempt_timeout_minutes = 1\ninputs = ["{data.parent}"]\n'
    )
    run = ["research", "run", "--repo", str(repo), "--contract", str(contract)]
    fresh_chain.cli(*run, "--max-attempts", "2", check=True)
    first = _attempts(fresh_chain)
    assert all(e["status"] == "completed" for e in first)  # the sandboxed command read the data
    before = hash_tree(data.parent).digest.hex()
    assert first[0]["environment"]["inputs"] == [{"path": str(data.parent), "digest": before}]
    data.write_text("0.75")  # the data changes between two runs of the same search
    fresh_chain.cli(*run, "--max-attempts", "4", check=True)
    later = _attempts(fresh_chain)[len(first) :]
    after = hash_tree(data.parent).digest.hex()
    assert later and all(e["environment"]["inputs"][0]["digest"] == after for e in later)
    report = fresh_chain.cli("research", "report", check=True).stdout
    assert (
        f"environment changed at attempt {len(first) + 1}: input {data.parent} {before[:12]}… -> {after[:12]}…"
        in report
    )


def test_a_missing_input_or_lockfile_is_refused_by_name_before_any_attempt(fresh_chain: Chain, tmp_path: Path) -> None:
    repo = _example_repo(tmp_path)
    contract = tmp_path / "contract.toml"
    text = (EXAMPLE / "contract.toml").read_text()
    contract.write_text(text.replace('inputs = ["data.csv"]', 'inputs = ["data.csv", "data/missing.parquet"]'))
    missing = fresh_chain.cli(
        "research", "run", "--repo", str(repo), "--contract", str(contract), "--max-attempts", "2"
    )
    assert missing.returncode == ExitCode.BAD_INPUT and "inputs: 'data/missing.parquet'" in missing.stderr
    assert not (fresh_chain.data_dir / "research" / "ledger.jsonl").exists() or not _attempts(fresh_chain)
    contract.write_text(text + 'lockfile = "requirements.lock"\n')
    shutil.rmtree(fresh_chain.data_dir / "research", ignore_errors=True)
    nolock = fresh_chain.cli("research", "run", "--repo", str(repo), "--contract", str(contract), "--max-attempts", "2")
    assert nolock.returncode == ExitCode.BAD_INPUT and "lockfile: 'requirements.lock'" in nolock.stderr
    (repo / "requirements.lock").write_text("numpy==2.1.0\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "commit", "-qm", "lock"], check=True)
    shutil.rmtree(fresh_chain.data_dir / "research", ignore_errors=True)
    fresh_chain.cli(
        "research", "run", "--repo", str(repo), "--contract", str(contract), "--max-attempts", "2", check=True
    )
    lock = _attempts(fresh_chain)[0]["environment"]["lock"]
    assert lock["source"] == "requirements.lock"
    import blake3

    assert lock["digest"] == blake3.blake3(b"numpy==2.1.0\n").hexdigest()


def test_an_input_that_would_show_the_data_dir_to_the_attempts_is_refused(fresh_chain: Chain, tmp_path: Path) -> None:
    """Inputs outside the repository are bound read-only into the sandbox after what it hides, so an
    input naming the data dir (the journal, the keys) would undo the fence: refused by name."""
    repo = _example_repo(tmp_path)
    contract = tmp_path / "contract.toml"
    text = (EXAMPLE / "contract.toml").read_text()
    contract.write_text(text.replace('inputs = ["data.csv"]', f'inputs = ["data.csv", "{fresh_chain.data_dir}"]'))
    refused = fresh_chain.cli(
        "research", "run", "--repo", str(repo), "--contract", str(contract), "--max-attempts", "2"
    )
    assert refused.returncode == ExitCode.BAD_INPUT, refused.stderr
    assert f"inputs: {fresh_chain.data_dir.resolve()} overlaps" in refused.stderr and "Traceback" not in refused.stderr


def test_a_version_3_bundle_never_claims_an_image_it_did_not_run_in() -> None:
    """A host-run bundle bound the image it was dispatched with (`ran_on: host` was an annotation that
    nothing showed). Version 3 binds where it ran; an image beside a host, or one that is not the one
    it ran in, is refused by any decoder."""
    from anchor.errors import BadInput
    from anchor.manifest.decode import validate_identity

    vectors = json.loads((Path(__file__).resolve().parents[1] / "vectors" / "bundle.json").read_text())
    host = next(c for c in vectors["cases"] if c["name"].startswith("version 3: ran on a host"))
    identity = json.loads(host["expected"]["identity_canonical"])
    assert validate_identity(identity)["environment"]["host"] == "40" * 32
    claimed = {**identity, "image": "ghcr.io/anchor/eval@sha256:" + "33" * 32}
    with pytest.raises(BadInput, match="a run on a host claims no image"):
        validate_identity(claimed)
    other = {**identity, "environment": {**identity["environment"], "image": "x/y@sha256:" + "55" * 32}}
    with pytest.raises(BadInput, match="exactly one of host and image"):
        validate_identity(other)


NVIDIA_SMI = """#!/bin/sh
# a stand-in for nvidia-smi that prints what a two-GPU host's driver prints (the parsing is what is tested)
case "$1" in
  --query-gpu=*) printf 'NVIDIA A100-SXM4-40GB, 40960, 535.104.05\\nNVIDIA A100-SXM4-40GB, 40960, 535.104.05\\n' ;;
  -q) printf '==============NVSMI LOG==============\\n\\nDriver Version      : 535.104.05\\n'
      printf 'CUDA Version        : 12.2\\n' ;;
  *) exit 9 ;;
esac
"""


def test_a_gpu_host_binds_its_accelerators_and_a_host_without_one_binds_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """results on a GPU are platform-specific and no record said which GPU, driver or CUDA ran
    them. With nvidia-smi present each record binds them; without, the field is absent, not faked, and
    a record without it keeps the digest it had."""
    from anchor.manifest.environment import Accelerator, describe
    from anchor.research.environment import accelerators, current

    assert accelerators() is None  # this machine has no GPU: nothing is made up
    without = current()
    assert "accelerators" not in without.model_dump(mode="json", exclude_none=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "nvidia-smi").write_text(NVIDIA_SMI)
    (bin_dir / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    gpus = accelerators()
    a100 = Accelerator(model="NVIDIA A100-SXM4-40GB", memory_mib=40960, driver="535.104.05", cuda="12.2")
    assert gpus == (a100, a100)
    assert describe(gpus) == "2 x NVIDIA A100-SXM4-40GB (40960 MiB, driver 535.104.05, CUDA 12.2)"
    withgpu = current()
    assert withgpu.accelerators == gpus
    assert withgpu.changes(without) == [f"accelerators none -> {describe(gpus)}"]
    (bin_dir / "nvidia-smi").write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed'; exit 9\n")
    assert accelerators() is None  # a failing driver is no GPU, never a guess
