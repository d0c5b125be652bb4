"""A library call never leaves a process behind unasked.

`anchor.stamp()` with default settings once started the embedded anvil and left it running after the
script ended, with a logging INFO record as its only notice: in a batch job, an orphan per job. Now a
library call refuses to start a chain, naming the setting (`start_chain=True`) and the command that
starts one to keep (`anchor chain up`); with `start_chain=True` the chain it started is stopped when
the interpreter exits (its state saved: the proof verifies once the chain is up again). The command
line keeps its documented behaviour, a chain left running for the next command, and says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from anchor.errors import ExitCode
from anchor.settings.session import start_ticks
from tests.cli import run_anchor
from tests.conftest import free_port


def _job(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A folder with a data dir of its own (found by walking up) and a result to stamp."""
    work = tmp_path / "job"
    (work / ".anchor").mkdir(parents=True)
    (work / "x").mkdir()
    (work / "x" / "metrics.json").write_text('{"accuracy": 0.9}\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    return work, {**env, "ANCHOR_LOCAL_PORT": str(free_port())}


def _python(code: str, work: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True, text=True, timeout=300)


def _recorded_pid(work: Path) -> int | None:
    record = work / ".anchor" / "chain" / "anvil.json"
    return json.loads(record.read_text()).get("pid") if record.is_file() else None


def _runs(pid: int, ticks: int | None) -> bool:
    return ticks is not None and start_ticks(pid) == ticks


def test_a_library_stamp_refuses_to_start_a_chain_unasked_and_names_the_setting(tmp_path: Path) -> None:
    work, env = _job(tmp_path)
    ran = _python("import anchor; anchor.stamp('x')", work, env)
    assert ran.returncode != 0
    last = ran.stderr.strip().splitlines()[-1]
    assert "anchor.errors.ChainUnreachable: the local chain of data dir" in last, ran.stderr
    assert "start_chain=True" in last and "`anchor chain up`" in last
    assert _recorded_pid(work) is None and not (work / "x.anchor.json").exists()  # nothing started, nothing written


@pytest.mark.chain
def test_a_chain_a_library_call_started_is_stopped_when_the_interpreter_exits_and_its_state_kept(
    tmp_path: Path,
) -> None:
    work, env = _job(tmp_path)
    script = (
        "import json, pathlib, anchor\n"
        "stamped = anchor.stamp('x', start_chain=True)\n"
        "record = json.loads(pathlib.Path('.anchor/chain/anvil.json').read_text())\n"
        "print(stamped.state, record['pid'], record['start_ticks'])\n"
    )
    ran = _python(script, work, env)
    assert ran.returncode == 0, ran.stderr
    state, pid, ticks = ran.stdout.split()
    assert state == "anchored" and _recorded_pid(work) is None  # the record says stopped
    assert not _runs(int(pid), int(ticks)), f"anvil {pid} still runs after the script ended"
    try:
        up = run_anchor(["chain", "up"], env, cwd=work)
        assert up.returncode == 0, up.stderr
        checked = run_anchor(["verify", "x"], env, cwd=work)
        assert checked.returncode == 0 and "OK: x (1 file) is anchored" in checked.stdout, checked.stderr
        # a chain running before the call is not the call's to stop
        (work / "y").mkdir()
        (work / "y" / "metrics.json").write_text('{"accuracy": 0.8}\n')
        again = _python(script.replace("'x'", "'y'"), work, env)
        assert again.returncode == 0, again.stderr
        kept = _recorded_pid(work)
        assert kept is not None and start_ticks(kept) is not None, "a chain the script did not start was stopped"
    finally:
        down = run_anchor(["chain", "down"], env, cwd=work)
        assert down.returncode == ExitCode.OK


@pytest.mark.chain
def test_the_command_line_leaves_its_chain_running_and_says_so_with_its_pid(tmp_path: Path) -> None:
    work, env = _job(tmp_path)
    try:
        stamped = run_anchor(["stamp", "x"], env, cwd=work)
        assert stamped.returncode == 0, stamped.stderr
        pid = _recorded_pid(work)
        assert pid is not None and start_ticks(pid) is not None
        said = [line for line in stamped.stderr.splitlines() if line.startswith("started the local chain")]
        assert said and f"(anvil pid {pid}, state in " in said[0] and "it keeps running after this command" in said[0]
        assert "stop it with `anchor chain down`" in said[0]
    finally:
        run_anchor(["chain", "down"], env, cwd=work)
