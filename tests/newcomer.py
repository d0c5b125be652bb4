"""Running what the docs tell a newcomer to run: a code block of README.md or docs/, in a directory shaped
like a fresh clone, with an environment holding nothing of ours."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from tests.conftest import ROOT


def run_block(script: str, cwd: Path, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    """`script` in bash with -euo pipefail, as a reader pasting it would see it fail; the whole output on failure."""
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=cwd,
        env=env,
        input=stdin,
        text=True,
        capture_output=True,
        timeout=300,
    )
    assert result.returncode == 0, (
        f"exit {result.returncode}\n{script}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    )
    return result


def workspace(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A directory that looks like the checkout to a reader (`. .venv/bin/activate` works in it) and an
    environment with nothing of ours in it: no ANCHOR_* variable, its own HOME and data dir."""
    work = tmp_path / "work"
    work.mkdir()
    (work / ".venv").symlink_to(ROOT / ".venv")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANCHOR_", "XDG_DATA_HOME"))}
    env.update(HOME=str(tmp_path / "home"), PATH=f"{ROOT / 'node_modules' / '.bin'}:{env['PATH']}")
    return work, env


def block_after(doc: Path, heading: str) -> str:
    text = doc.read_text(encoding="utf-8")
    return re.search(r"```sh\n(.*?)```", text[text.index(heading) :], flags=re.S).group(1)  # type: ignore[union-attr]
