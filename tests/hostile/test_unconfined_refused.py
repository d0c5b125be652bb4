"""`--no-sandbox` with a key in reach: unconfined code runs as the harness's user, so a key in
the harness's environment is one read of /proc/<pid>/environ away. Such a run is refused before
anything is written, naming the variables."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from anchor.errors import ExitCode
from tests.cli import run_anchor


def _env(tmp_path: Path, **secrets: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    return {**clean, "ANCHOR_DATA_DIR": str(tmp_path / "data"), **secrets}


@pytest.mark.parametrize("variable", ["ANCHOR_RESEARCHER_KEY", "ANCHOR_SERVICE_TOKEN", "ANCHOR_PRIVATE_KEY"])
def test_a_research_run_without_the_sandbox_is_refused_while_a_key_is_in_its_environment(
    tmp_path: Path, variable: str
) -> None:
    contract = tmp_path / "contract.toml"
    contract.write_text('task = "t"\ncommand = "true"\neditable = ["p.json"]\nmetric = "m"\nmode = "max"\n')
    argv = [
        "research",
        "run",
        "--repo",
        str(tmp_path),
        "--contract",
        str(contract),
        "--no-sandbox",
        "--workdir",
        str(tmp_path / "work"),
        "--no-anchor",
    ]
    ran = run_anchor(argv, _env(tmp_path, **{variable: "00" * 32}))
    assert ran.returncode == ExitCode.BAD_INPUT, ran.stdout + ran.stderr
    assert f"--no-sandbox: refused while {variable} is set" in ran.stderr and "Traceback" not in ran.stderr
    assert "00" * 32 not in ran.stdout + ran.stderr  # named, never shown
    assert not (tmp_path / "work").exists() and not (tmp_path / "data").exists()


def test_a_mission_run_without_the_sandbox_is_refused_while_a_token_is_in_its_environment(tmp_path: Path) -> None:
    env = _env(tmp_path, ANCHOR_SERVICE_TOKEN="t0ken", ANCHOR_KEYSTORE=str(tmp_path / "key.json"))
    ran = run_anchor(["mission", "run", "some-output", "--no-sandbox"], env)
    assert ran.returncode == ExitCode.BAD_INPUT, ran.stdout + ran.stderr
    assert "refused while ANCHOR_SERVICE_TOKEN, ANCHOR_KEYSTORE are set" in ran.stderr
    assert not (tmp_path / "data" / "missions.sqlite").exists()
    # without a key in reach, --no-sandbox goes on (here to the unknown output, exit 3)
    ran = run_anchor(["mission", "run", "some-output", "--no-sandbox"], _env(tmp_path))
    assert ran.returncode == ExitCode.NOT_ANCHORED, ran.stdout + ran.stderr
