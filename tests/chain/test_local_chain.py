"""The local chain belongs to its data directory: found again without being told its port,
never started or stopped by a read, and never a signal to a process that is not ours."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from anchor.chain.node import LocalChain
from anchor.errors import ExitCode
from tests.conftest import ANCHOR_BIN, Chain, free_port
from tests.first_thread import first_thread_ended


def _without_port(chain: Chain) -> dict[str, str]:
    return {k: v for k, v in chain.env().items() if k != "ANCHOR_LOCAL_PORT"}


def _anchor(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ANCHOR_BIN), *args], env=env, capture_output=True, text=True, timeout=120)


def test_a_command_without_the_port_finds_the_running_chain_and_leaves_it_alone(
    fresh_chain: Chain, bundle: Path
) -> None:
    fresh_chain.cli("deploy", check=True)
    fresh_chain.cli("anchor", str(bundle), check=True)
    pid = fresh_chain.node.status().pid
    found = LocalChain(fresh_chain.data_dir)
    assert found.port == fresh_chain.port and found.status().running
    env = _without_port(fresh_chain)
    verified = _anchor(env, "verify", str(bundle))
    assert verified.returncode == 0, verified.stderr
    assert "local development chain: only this machine can check it" in verified.stdout
    status = json.loads(_anchor(env, "chain", "status", "--json").stdout)["chain"]
    assert status["running"] and status["pid"] == pid and status["rpc_url"].endswith(f":{fresh_chain.port}")


def test_read_only_commands_never_start_a_chain(fresh_chain: Chain, bundle: Path) -> None:
    fresh_chain.cli("deploy", check=True)
    fresh_chain.cli("anchor", str(bundle), check=True)
    fresh_chain.node.down()
    for args in (["verify", str(bundle)], ["lookup", str(bundle)]):
        result = fresh_chain.cli(*args)
        assert result.returncode == ExitCode.CHAIN_UNREACHABLE, (args, result.stderr)
        assert "anchor chain up" in result.stderr
        assert not fresh_chain.node.status().running
    status = fresh_chain.cli("journal", "status")  # a local file: answered from it, no chain needed
    assert status.returncode == 0 and "confirmed 1" in status.stdout, status.stdout + status.stderr
    assert not fresh_chain.node.status().running
    fresh_chain.cli("chain", "up", check=True)  # the port was kept: the same chain, found again
    assert fresh_chain.cli("verify", str(bundle)).returncode == 0


def test_a_recorded_pid_that_is_not_our_anvil_is_never_signalled(fresh_chain: Chain) -> None:
    fresh_chain.node.down()
    stranger = subprocess.Popen(["sleep", "60"])
    try:
        record = json.loads(fresh_chain.node.record_file.read_text())
        record.update(pid=stranger.pid, start_ticks=1)  # a pid reused by another process since
        fresh_chain.node.record_file.write_text(json.dumps(record))
        assert LocalChain(fresh_chain.data_dir).status().pid is None
        fresh_chain.cli("chain", "down", check=True)
        fresh_chain.cli("chain", "up", check=True)
        assert stranger.poll() is None  # still running: nobody signalled it
    finally:
        stranger.kill()
        stranger.wait()


@pytest.mark.chain  # an anvil of its own, as a "real" chain (84532)
def test_status_on_a_real_chain_reads_without_a_signing_key(tmp_path: Path) -> None:
    """`anchor --rpc-url … status` demanded ANCHOR_PRIVATE_KEY although it only reads the journal; it
    now reads the journal alone (no key, no network): the chain it shows is the one the journal holds."""
    from tests.conftest import anvil

    with anvil(84532, 1) as url:
        env = {"PATH": "/usr/bin:/bin", "ANCHOR_DATA_DIR": str(tmp_path / "data"), "HOME": str(tmp_path)}
        result = _anchor(env, "--rpc-url", url, "status")
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"no journal yet in data dir {tmp_path / 'data'}"), result.stdout
        (tmp_path / "data").mkdir()
        result = _anchor(env, "--rpc-url", url, "status")
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("chain: none yet (the journal holds nothing)") and "pending 0" in result.stdout


@pytest.mark.chain  # starts a local chain of its own
def test_anchoring_on_a_fresh_data_dir_deploys_the_embedded_registry_first(tmp_path: Path) -> None:
    """`anchor anchor PATH` on a fresh data dir used to stop with "run `anchor deploy`": on the embedded
    local chain the registry is deployed on first use (never on a real chain)."""
    import shutil

    from tests.conftest import ROOT, _start

    chain = _start(tmp_path / "data")
    try:
        bundle = tmp_path / "b"
        shutil.copytree(ROOT / "examples" / "bundle", bundle)
        first = chain.cli("anchor", str(bundle))
        assert first.returncode == 0, first.stderr
        assert (chain.data_dir / "deployments" / "31337.json").is_file()
        assert "no registry on the local chain yet: deploying one" in first.stderr  # said, not silent
        assert chain.cli("verify", str(bundle)).returncode == 0
    finally:
        chain.node.down()


@pytest.mark.chain  # starts a local chain of its own
def test_a_fresh_data_dir_is_private_whatever_the_umask_and_status_names_one_that_is_not(tmp_path: Path) -> None:
    """Under umask 022 `research report` made the data dir 0755 (its subdirectories were 0700): its file
    names were readable by every local user. A read makes nothing; every command that makes the data
    dir makes it 0700; `journal status` names one that was opened up (and makes it private again)."""
    data = tmp_path / "home" / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env.update(ANCHOR_DATA_DIR=str(data), ANCHOR_LOCAL_PORT=str(free_port()))

    def anchor(*args: str) -> subprocess.CompletedProcess[str]:
        line = " ".join(shlex.quote(a) for a in (str(ANCHOR_BIN), *args))
        return subprocess.run(["bash", "-c", f"umask 022; {line}"], env=env, capture_output=True, text=True)

    assert anchor("research", "report").returncode == ExitCode.NOT_ANCHORED  # a read: nothing made
    assert not data.parent.exists()
    for args in (("snapshot", "list"), ("chain", "up")):
        anchor(*args)
        assert stat.S_IMODE(data.stat().st_mode) == 0o700, (args, oct(data.stat().st_mode))
        assert stat.S_IMODE(data.parent.stat().st_mode) == 0o700  # a parent it had to make, too
        if args != ("chain", "up"):
            shutil.rmtree(data.parent)
    try:
        assert "warning" not in anchor("journal", "status").stdout
        data.chmod(0o755)
        said = anchor("journal", "status")
        assert said.returncode == 0, said.stderr
        assert f"warning: the data dir {data} was 755" in said.stdout and "it is 700 now" in said.stdout
        assert stat.S_IMODE(data.stat().st_mode) == 0o700
    finally:
        anchor("chain", "down")


WRAPPER = """
import signal, subprocess, sys, os
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]])
def forward(signum, frame):  # as @foundry-rs/anvil's bin.mjs: pass the signal on, then exit at once
    child.send_signal(signum)
    os._exit(0)
signal.signal(signal.SIGTERM, forward)
child.wait()
"""
SLOW_TO_SAVE = """
import signal, sys, time
def save(signum, frame):  # as anvil on SIGTERM: write the state file, then exit
    time.sleep(0.8)
    open(sys.argv[1], "w").write("saved")
    sys.exit(0)
signal.signal(signal.SIGTERM, save)
while True:
    time.sleep(0.05)
"""


def test_chain_down_returns_only_once_anvil_itself_has_saved_its_state_not_when_npms_wrapper_exits(
    tmp_path: Path,
) -> None:
    """The anvil npm installs is a Node wrapper: on SIGTERM it forwards the signal to the real anvil and
    exits at once, while anvil is still writing its state file. `anchor chain down` waited for the
    wrapper alone and said "state is saved" before it was; the soak's cleanup then found files appearing
    in a directory it was deleting. `down` now waits for every process of the group it started."""
    import sys
    import time

    saved = tmp_path / "state.json"
    started = subprocess.Popen([sys.executable, "-c", WRAPPER, SLOW_TO_SAVE, str(saved)], start_new_session=True)
    time.sleep(0.5)  # both running, the handlers installed
    LocalChain(tmp_path / "data", free_port())._stop(started.pid)
    assert saved.read_text() == "saved"


def test_a_chain_too_busy_to_answer_the_probe_is_waited_for_never_called_stopped_or_restarted(
    fresh_chain: Chain, bundle: Path
) -> None:
    """A loaded machine can keep this data dir's anvil from answering the two-second probe. A read then
    said "not running, and the port is used by the local chain of another data dir", naming this very
    data dir, and a write stopped the chain and started another. Our recorded, still-running anvil is
    now given the read's own timeout and retries, and is neither restarted nor called another's."""
    fresh_chain.cli("deploy", check=True)
    pid = fresh_chain.node.status().pid
    assert pid is not None
    with _paused(pid, 3.0):
        anchored = fresh_chain.cli("anchor", str(bundle))  # a write: it may start a chain, must not restart ours
    assert anchored.returncode == ExitCode.OK, anchored.stdout + anchored.stderr
    assert "another data dir" not in anchored.stderr
    assert fresh_chain.node.status().pid == pid
    with _paused(pid, 3.0):
        verified = fresh_chain.cli("verify", str(bundle))  # a read
    assert verified.returncode == ExitCode.OK, verified.stdout + verified.stderr
    assert fresh_chain.node.status().pid == pid


@contextmanager
def _paused(group: int, seconds: float) -> Iterator[None]:
    """The process group `group` stopped, and continued `seconds` later, while the block runs."""
    import signal
    import threading

    os.killpg(group, signal.SIGSTOP)  # the whole group: npm's wrapper and the anvil it runs
    resumed = threading.Timer(seconds, os.killpg, (group, signal.SIGCONT))
    resumed.start()
    try:
        yield
    finally:
        resumed.join()
        os.killpg(group, signal.SIGCONT)


def test_an_anvil_of_this_data_dir_its_record_lost_is_named_by_pid_not_as_another_data_dirs(
    fresh_chain: Chain, bundle: Path
) -> None:
    fresh_chain.cli("deploy", check=True)
    fresh_chain.cli("anchor", str(bundle), check=True)
    pid = fresh_chain.node.status().pid
    fresh_chain.node.record_file.unlink()
    try:
        verified = fresh_chain.cli("verify", str(bundle))
        assert verified.returncode == ExitCode.CHAIN_UNREACHABLE, verified.stdout + verified.stderr
        assert "used by an anvil of this data dir (pid " in verified.stderr  # the listener: npm's wrapper runs it
        assert "another data dir" not in verified.stderr
    finally:
        fresh_chain.node._write_record(pid)  # noqa: SLF001 - so the fixture stops the anvil it started


def test_a_chain_that_listens_and_never_answers_is_waited_for_once_a_call_and_named(
    fresh_chain: Chain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Waiting for a busy chain has a bound: past it, the read says the chain listens and does not
    answer, and how to restart it. A verify of many waits once, not once a path (with the client's own
    retries a path took 54 s against a stopped anvil, and every path of a list again)."""
    from anchor.chain.node import BUSY_WAIT_S

    fresh_chain.cli("deploy", check=True)
    paths = []
    for n in range(3):
        (tmp_path / f"r{n}.txt").write_text(f"result {n}\n")
        fresh_chain.cli("stamp", str(tmp_path / f"r{n}.txt"), check=True)
        paths.append(str(tmp_path / f"r{n}.txt"))
    (tmp_path / "all.txt").write_text("\n".join(paths) + "\n")
    pid = fresh_chain.node.status().pid
    assert pid is not None
    waits: list[float] = []
    real = LocalChain.answer_within
    monkeypatch.setattr(LocalChain, "answer_within", lambda self, t: (waits.append(t), real(self, t))[1])
    with _paused(pid, BUSY_WAIT_S + 4):
        listed = fresh_chain.cli("verify", "--from", str(tmp_path / "all.txt"))
    assert listed.returncode == ExitCode.CHAIN_UNREACHABLE, listed.stdout + listed.stderr
    said = f"listens at {fresh_chain.node.rpc_url} but did not answer within {BUSY_WAIT_S:.0f} s"
    assert listed.stdout.count(said) == 3 and "anchor chain down" in listed.stdout, listed.stdout
    assert waits == [BUSY_WAIT_S], waits  # once for the call, its silence then said for every path
    assert fresh_chain.node.status().pid == pid  # a read never restarts it


def test_a_process_whose_first_thread_has_exited_still_runs_while_another_holds_its_port() -> None:
    """anvil's threads end one by one: its first thread can show as exited (Z) while another still
    holds the listening socket. `chain down` took the group for gone at that moment, and the `chain up`
    straight after it found the port "used by another process". A process runs while any thread runs."""
    from anchor.chain.node import _group_runs, _port_taken

    port = free_port()
    with first_thread_ended(str(port)) as child:
        assert _port_taken(port)
        assert _group_runs(child.pid)
    assert not _group_runs(child.pid)


@pytest.mark.parametrize(
    "stranger",
    [
        ["bash", "-c", "exec -a anvil sleep 60"],  # someone's process named anvil (a pid reused after a reboot)
        [sys.executable, "-c", "import time; time.sleep(60)", "anvil", "--state", "/elsewhere/chain/state.json"],
    ],
    ids=["named-anvil", "another-state-file"],
)
def test_an_earlier_versions_pid_file_naming_a_process_that_is_not_this_data_dirs_anvil_is_never_signalled(
    tmp_path: Path, stranger: list[str]
) -> None:
    """An earlier version recorded the pid alone (chain/anvil.pid), with no start time. A pid named
    there that any process named "anvil" now holds was taken for the chain: `chain up` and `chain down`
    signalled it, and SIGKILLed its whole group past the grace. Only an anvil given this data dir's
    state file is taken for it."""
    chain = LocalChain(tmp_path / "data", free_port())
    chain.dir.mkdir(parents=True)
    _never_signalled(chain, stranger)


def _never_signalled(chain: LocalChain, stranger: list[str], cwd: Path | None = None) -> None:
    """Start `stranger`, name its pid in the chain's pid file (as an earlier version wrote it): the
    chain's status does not take it for the chain, and `down` leaves it running."""
    process = subprocess.Popen(stranger, cwd=cwd, start_new_session=True)
    try:
        time.sleep(0.2)  # exec'd
        chain.pid_file.write_text(f"{process.pid}\n")
        assert chain.status().pid is None
        chain.down()
        assert process.poll() is None  # not signalled
    finally:
        process.kill()  # the process this test started, by its pid
        process.wait()


def test_an_earlier_versions_pid_file_naming_this_data_dirs_anvil_is_still_its_chain(tmp_path: Path) -> None:
    """The other side of the rule: a chain an earlier version started (its pid alone recorded) is found
    and stopped by `chain down`, bound by the state file it was given."""
    chain = LocalChain(tmp_path / "data", free_port())
    chain.dir.mkdir(parents=True)
    argv = [sys.executable, "-c", "import time; time.sleep(60)", "--state", str(chain.state_file)]
    process = subprocess.Popen(argv, start_new_session=True)
    try:
        chain.pid_file.write_text(f"{process.pid}\n")
        deadline = time.monotonic() + 10
        while chain.status().pid != process.pid:  # once its command line is the one above
            assert time.monotonic() < deadline, "the earlier version's chain was not found"
            time.sleep(0.05)
        chain.down()  # SIGTERM, and it reaps what it stopped (here the test's own child: no status left)
        assert not Path(f"/proc/{process.pid}").exists() and chain.status().pid is None
    finally:
        if process.poll() is None:
            process.kill()  # the process this test started, by its pid
            process.wait()


def test_a_chain_ended_but_not_yet_reaped_by_its_parent_is_not_waited_for() -> None:
    """`chain down` is another process than the one that started anvil: the ended anvil stays a zombie
    until its parent reaps it, and a container's first process may never. Counted as alive, every
    `chain down` waited its whole 15 s grace there, then SIGKILLed a group already gone."""
    import signal

    from anchor.chain.node import _alive

    keeper = "import subprocess, sys, time; print(subprocess.Popen(['sleep', '60']).pid, flush=True); time.sleep(60)"
    parent = subprocess.Popen([sys.executable, "-c", keeper], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert parent.stdout is not None
        pid = int(parent.stdout.readline())
        assert _alive(pid)
        os.kill(pid, signal.SIGTERM)  # the sleep this test had started, by its pid
        deadline = time.monotonic() + 10
        while Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline, "it did not end"
            time.sleep(0.05)
        assert not _alive(pid)
    finally:
        parent.kill()  # the process this test started, by its pid
        parent.wait()


def test_a_relative_state_file_is_read_where_its_process_runs_not_where_the_command_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An anvil started by hand in another data dir with `--state chain/state.json` is that data dir's:
    read from inside this data dir, the relative path named this one's state file, and `chain down`
    signalled the other's chain."""
    chain = LocalChain(tmp_path / "data", free_port())
    chain.dir.mkdir(parents=True)
    chain.state_file.write_text("{}")
    other = tmp_path / "other"
    (other / "chain").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "data")  # where chain/state.json is this data dir's
    _never_signalled(chain, [sys.executable, "-c", "import time; time.sleep(60)", "--state", "chain/state.json"], other)


@pytest.mark.parametrize(
    "record",
    ['{"pid": "abc"}', '{"pid": [1]}', '{"pid": {"a": 1}}', '{"port": "x"}', '{"port": 1e400}', '{"pid": true}', "[1]"],
)
def test_a_chain_record_edited_into_nonsense_is_no_record_never_an_internal_error(tmp_path: Path, record: str) -> None:
    """`chain/anvil.json` is ours, but an operator can edit it: a pid or port that is no number read
    as exit 1 (ValueError, TypeError, OverflowError). What is not a number it can be is no record."""
    data = tmp_path / "data"
    (data / "chain").mkdir(parents=True)
    (data / "chain" / "anvil.json").write_text(record)
    env = {**os.environ, "ANCHOR_DATA_DIR": str(data), "ANCHOR_LOCAL_PORT": str(free_port())}
    result = _anchor(env, "chain", "status")
    assert result.returncode == ExitCode.OK and "local chain stopped" in result.stdout, (result.stdout, result.stderr)
