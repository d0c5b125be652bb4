"""`anchor hash PATH` runs without typer (anchor/cli/fast.py: it is compared with b3sum end to end) and
prints exactly what the typer command prints: the same bytes on stdout and stderr, the same exit code,
for files, folders, left-out paths, links and failures. The typer command is reached with the same
meaning by naming the default explicitly (`--symlinks refuse`), which the fast path never takes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import ANCHOR_BIN
from tests.conftest import Chain


def _tree(root: Path) -> dict[str, Path]:
    files = root / "results"
    (files / "sub").mkdir(parents=True)
    (files / "metrics.json").write_text('{"accuracy": 0.93}\n')
    (files / "sub" / "weights.bin").write_bytes(os.urandom(3 << 20))  # a mapped (large) file too
    (files / ".git").mkdir()
    (files / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (files / "old.anchor.json").write_text("{}")
    ignored = root / "ignoring"
    ignored.mkdir()
    (ignored / ".anchorignore").write_text("*.tmp\n")
    (ignored / "a.tmp").write_text("left out\n")
    (ignored / "b.txt").write_text("kept\n")
    linked = root / "with link"
    linked.mkdir()
    (linked / "target.txt").write_text("x\n")
    (linked / "link").symlink_to("target.txt")
    (root / "empty").mkdir()
    (root / "name with spaces.txt").write_text("0.5\n")
    (root / "link-to-file").symlink_to(root / "name with spaces.txt")
    return {"folder": files, "ignoring": ignored, "link inside": linked, "empty": root / "empty",
            "file": root / "name with spaces.txt", "link itself": root / "link-to-file",
            "missing": root / "nope"}  # fmt: skip


def _anchor(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ANCHOR_DATA_DIR": str(cwd / "data")}
    return subprocess.run([str(ANCHOR_BIN), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=120)


@pytest.mark.parametrize("json_where", ["none", "before", "after"])
def test_the_fast_path_prints_what_the_typer_command_prints(tmp_path: Path, json_where: str) -> None:
    targets = _tree(tmp_path)
    for name, target in targets.items():
        fast, typed = ["hash", str(target)], ["hash", "--symlinks", "refuse", str(target)]
        if json_where == "before":
            fast, typed = ["--json", *fast], ["--json", *typed]
        elif json_where == "after":
            fast, typed = [*fast, "--json"], [*typed, "--json"]
        ours, theirs = _anchor(fast, tmp_path), _anchor(typed, tmp_path)
        assert (ours.returncode, ours.stdout, ours.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr), name
        assert "Traceback" not in ours.stderr
    assert _anchor(["hash", str(targets["folder"])], tmp_path).stdout.count("left out") == 1  # the corpus bites
    assert _anchor(["hash", str(targets["link inside"])], tmp_path).returncode == 2


def test_hash_path_loads_no_typer_and_anything_else_goes_to_typer(tmp_path: Path) -> None:
    (tmp_path / "r.txt").write_text("1\n")

    def imported(args: list[str]) -> set[str]:
        env = {**os.environ, "ANCHOR_DATA_DIR": str(tmp_path / "d")}
        argv = [sys.executable, "-X", "importtime", "-m", "anchor", *args]
        done = subprocess.run(argv, capture_output=True, text=True, cwd=tmp_path, env=env)
        assert done.returncode == 0, done.stderr[-1000:]
        return {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}

    assert "typer" not in imported(["hash", "r.txt"]) and "typer" not in imported(["hash", "r.txt", "--json"])
    assert "typer" in imported(["hash", "--exclude", "*.tmp", "r.txt"])
    assert "typer" in imported(["--data-dir", str(tmp_path / "d"), "hash", "r.txt"])


@pytest.mark.chain
@pytest.mark.parametrize("json_where", ["none", "after"])
def test_verify_path_without_typer_prints_what_the_typer_command_prints(
    fresh_chain: Chain, tmp_path: Path, json_where: str
) -> None:
    """`anchor verify PATH` (typer was a third of its time) against `verify PATH --require any`,
    which means the same and goes through typer: the same bytes and exit code for a verified folder, a
    one-file proof, a changed file, a folder never stamped, a missing path and an intoto file."""
    fresh_chain.cli("deploy", check=True)
    targets = _tree(tmp_path / "work")
    for name in ("folder", "file"):
        fresh_chain.cli("stamp", str(targets[name]), check=True)
    fresh_chain.cli("prove", str(targets["folder"] / "metrics.json"), "--in", str(targets["folder"]), check=True)
    changed = tmp_path / "work" / "changed"
    changed.mkdir()
    (changed / "a.txt").write_text("1\n")
    fresh_chain.cli("stamp", str(changed), check=True)
    (changed / "a.txt").write_text("2\n")
    cases = {"folder": targets["folder"], "one file of it": targets["folder"] / "metrics.json", "file": targets["file"],
             "changed": changed, "never stamped": targets["empty"], "missing": targets["missing"]}  # fmt: skip
    env = fresh_chain.env()
    seen = {}
    for name, target in cases.items():
        fast, typed = ["verify", str(target)], ["verify", str(target), "--require", "any"]
        if json_where == "after":
            fast, typed = [*fast, "--json"], [*typed, "--json"]
        ours = subprocess.run([str(ANCHOR_BIN), *fast], capture_output=True, text=True, env=env, timeout=120)
        theirs = subprocess.run([str(ANCHOR_BIN), *typed], capture_output=True, text=True, env=env, timeout=120)
        assert (ours.returncode, ours.stdout, ours.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr), name
        seen[name] = ours.returncode
    assert seen == {"folder": 0, "one file of it": 0, "file": 0, "changed": 4, "never stamped": 3, "missing": 2}


def test_verify_path_loads_no_typer(tmp_path: Path) -> None:
    env = {**os.environ, "ANCHOR_DATA_DIR": str(tmp_path / "d")}
    (tmp_path / "r.txt").write_text("1\n")
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "anchor", "verify", "r.txt"], capture_output=True,
                          text=True, cwd=tmp_path, env=env)  # fmt: skip
    assert done.returncode == 3, done.stderr[-500:]  # not anchored: the verdict, without the framework
    assert "typer" not in {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "import time:" in line}


SEALED = Path(__file__).parents[1] / "vectors" / "sealed"
GOLDEN = "2:0x1723685d556beb264e849a1430f6f1b2f57e276cc37f15fd773b42d1b28b7294"


@pytest.mark.parametrize(
    "options",
    [
        ["--offline", "--trusted-blocks", "trusted-blocks.txt"],
        ["--offline", f"--trusted-block={GOLDEN}", "--json"],
        ["--json", "--offline", "--trusted-block", GOLDEN, "--trusted-block", "1:0x" + "ab" * 32],
        ["--offline"],
        ["--offline", "--trusted-block", "2:0x12"],
        ["--offline", "--trusted-block", GOLDEN[:-1] + "5"],
        ["--offline", "--trusted-blocks", "nowhere.txt"],
        ["--offline", "--trusted-blocks", "trusted-blocks.txt", "--trusted-blocks", "trusted-blocks.txt"],
        ["--trusted-block", GOLDEN],
        ["--offline", "--trusted-block"],
    ],
)
def test_offline_verify_without_typer_prints_what_the_typer_command_prints(tmp_path: Path, options: list[str]) -> None:
    """`anchor verify PATH --offline` with its trusted blocks, which the fast path runs, against the same
    line with `--require any`, which typer runs: the same bytes and exit code for a verdict and for
    each refusal (no trusted block, a malformed one, a wrong hash, a missing checkpoint file, a trusted
    block without --offline, an option without its value); and no typer import for the verdict."""
    import shutil

    shutil.copytree(SEALED, tmp_path / "v")
    ours = _anchor(["verify", "work", *options], tmp_path / "v")
    theirs = _anchor(["verify", "work", "--require", "any", *options], tmp_path / "v")
    assert (ours.returncode, ours.stdout, ours.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr)
    assert "Traceback" not in ours.stderr
    if options == ["--offline", "--trusted-blocks", "trusted-blocks.txt"]:
        assert ours.returncode == 0, ours.stderr
        env = {**os.environ, "ANCHOR_DATA_DIR": str(tmp_path / "d")}
        done = subprocess.run([sys.executable, "-X", "importtime", "-m", "anchor", "verify", "work", *options],
                              capture_output=True, text=True, cwd=tmp_path / "v", env=env)  # fmt: skip
        modules = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "import time:" in line}
        assert done.returncode == 0 and not modules & {"typer", "rlp", "trie"}, done.stderr[-500:]
