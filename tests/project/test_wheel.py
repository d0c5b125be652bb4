"""An installable tool: the wheel, installed into a fresh virtualenv outside the checkout,
starts a chain, deploys, anchors and verifies, with anvil found on PATH and nothing read from the
source tree (the registry it deploys is the committed build, tested identical to a fresh compile)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, free_port


@pytest.mark.chain  # starts a local chain of its own
def test_the_wheel_installed_outside_the_checkout_anchors_and_verifies(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(dist),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    [wheel] = dist.glob("anchor_provenance-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [
            str(venv / "bin" / "pip"),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--no-compile",
            "-c",
            str(ROOT / "requirements.lock"),
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    [anvil] = ROOT.glob("node_modules/@foundry-rs/anvil-*/bin/anvil")  # the binary itself: "Foundry on PATH"
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "results").mkdir(parents=True)
    (elsewhere / "results" / "metrics.json").write_text('{"accuracy": 0.93}')
    env = {
        "PATH": f"{venv / 'bin'}:{anvil.parent}:/usr/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "ANCHOR_LOCAL_PORT": str(free_port()),
    }
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import anchor; print(anchor.__file__)"],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.startswith(str(venv)), where.stdout  # the installed package, not the checkout

    def anchor(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["anchor", *args], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120)

    try:
        for step in (["chain", "up"], ["deploy"], ["anchor", "results"], ["verify", "results"]):
            result = anchor(*step)
            assert result.returncode == 0, (step, result.stdout, result.stderr)
        assert "OK: results (1 file) is anchored" in result.stdout
        # no .anchor/ above it: the per-user data dir, $HOME/.local/share/anchor
        assert (tmp_path / "home" / ".local" / "share" / "anchor" / "deployments" / "31337.json").is_file()
        assert not (elsewhere / ".anchor").exists()
    finally:
        anchor("chain", "down")
