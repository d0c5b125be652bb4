"""The embedded default chain: one anvil on 127.0.0.1 whose state survives restarts.

Why a daemon and not a per-command node: proofs point at blocks, so the chain must outlive a command;
its state file in the data directory makes it outlive a stop too (anvil dumps on SIGTERM and every
second). Only the standard library is used here so that `chain status` stays fast.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from anchor.errors import BadInput, ChainUnreachable
from anchor.layout import DataDir
from anchor.record import Value
from anchor.settings.session import runs, start_ticks, stat_fields

LOCAL_CHAIN_ID = 31337
DEFAULT_PORT = 18545
BUSY_WAIT_S = 10.0
"""How long a read waits for this data dir's running anvil when it listens but missed the status probe."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ChainStatus(Value):
    running: bool
    rpc_url: str
    pid: int | None
    state_file: str
    block_number: int | None

    def to_json(self) -> dict[str, object]:
        return {
            "running": self.running,
            "rpc_url": self.rpc_url,
            "pid": self.pid,
            "state_file": self.state_file,
            "block_number": self.block_number,
            "chain_id": LOCAL_CHAIN_ID,
        }


def rpc_call(url: str, method: str, params: list[object] | None = None, timeout: float = 2.0) -> object:
    """One JSON-RPC call, no retry (is the local chain up? a probe answers at once or not at all), through
    the one HTTP transport every RPC and service call uses (anchor.chain.rpc.KeptAlive: a deadline for
    the whole exchange); raises `ChainUnreachable` on any transport failure or error answer."""
    from urllib.parse import urlsplit

    from anchor.chain.rpc import KeptAlive

    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params or []}).encode()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ChainUnreachable(f"{url}: only http(s) RPC URLs are supported")
    transport = KeptAlive(parts.hostname, parts.port, parts.scheme == "https", timeout)
    try:
        status, _, content = transport.exchange("POST", parts.path or "/", body, {"Content-Type": "application/json"})
        if status >= 300:
            raise ChainUnreachable(f"{url}: HTTP {status} for {method}")
        answer = json.loads(content)
    except (OSError, ValueError) as exc:
        raise ChainUnreachable(f"{url}: no answer to {method} ({exc})") from None
    finally:
        transport.drop()
    if "error" in answer:
        raise ChainUnreachable(f"{url}: {method} failed: {answer['error']}")
    return answer["result"]


class LocalChain:
    """Start, stop and inspect the data directory's anvil.

    The chain belongs to its data directory: its port is chosen at the first start and recorded in
    chain/anvil.json with the process id and the process's start time, so a later command finds it
    without being told the port (a command without ANCHOR_LOCAL_PORT used to stop the running chain
    and start another on the default port), and a recorded pid that now belongs to some other process
    (pid reuse) is never signalled. A port given explicitly only matters for a new start.
    """

    def __init__(self, data_dir: Path, port: int | None = None) -> None:
        self.dir = DataDir(data_dir).chain
        self.record_file = self.dir / "anvil.json"
        self.pid_file = self.dir / "anvil.pid"  # written by earlier versions: the pid alone
        self.state_file = self.dir / "state.json"
        self.log_file = self.dir / "anvil.log"
        record = self._record()
        running_port = record.get("port") if self._pid() is not None else None
        self.port = int(running_port or port or record.get("port") or DEFAULT_PORT)
        self.rpc_url = f"http://127.0.0.1:{self.port}"

    def _record(self) -> dict[str, int]:
        """The record `up` wrote: its pid, start time and port, each kept only if it is a number it
        can be (a record edited by hand, or by someone else, is as good as none where it is not)."""
        try:
            record = json.loads(self.record_file.read_text())
        except (FileNotFoundError, ValueError, RecursionError):
            return {}
        bounds = {"pid": (1, 2**22), "start_ticks": (0, 2**63 - 1), "port": (1, 65535)}
        if not isinstance(record, dict):
            return {}
        return {
            name: value
            for name, (low, high) in bounds.items()
            if type(value := record.get(name)) is int and low <= value <= high
        }

    def _pid(self) -> int | None:
        """The recorded anvil's pid if that process still runs and is the one we started."""
        record = self._record()
        pid, started = record.get("pid"), record.get("start_ticks")
        if pid is None:
            try:
                pid, started = int(self.pid_file.read_text().strip()), None
            except (FileNotFoundError, ValueError):
                return None
        ticks = start_ticks(int(pid))
        if ticks is None or (started is not None and ticks != started):
            return None
        if started is None:  # the pid alone (an earlier version's pid file): maybe reused since
            state = _state_of(int(pid))
            if state is None or not (state == self.state_file or _same_folder(state, self.state_file)):
                return None
        return int(pid)

    def _write_record(self, pid: int | None) -> None:
        from anchor.files import PRIVATE_FILE, atomic_write

        record: dict[str, int | None] = {"port": self.port, "pid": pid}
        record["start_ticks"] = None if pid is None else start_ticks(pid)
        atomic_write(self.record_file, json.dumps(record).encode(), PRIVATE_FILE)

    def status(self) -> ChainStatus:
        pid = self._pid()
        block = None
        if pid is not None:
            try:
                block = int(str(rpc_call(self.rpc_url, "eth_blockNumber")), 16)
            except ChainUnreachable:
                block = None
        return ChainStatus(pid is not None and block is not None, self.rpc_url, pid, str(self.state_file), block)

    def up(self, timeout: float = 30.0) -> ChainStatus:
        """Start anvil unless ours is already running; raises `ChainUnreachable` if it does not answer."""
        current = self.status()
        if current.running:
            return current
        if current.pid is not None and _port_taken(self.port):  # ours, listening: too busy for the probe?
            current = self.answer_within(timeout)
            if current.running:
                return current
        if current.pid is not None:  # not listening, or silent for the whole timeout: ours to restart
            self._stop(current.pid)
        if _port_taken(self.port):
            raise BadInput(port_taken_message(self.port, self.dir.parent), detail={"port": self.port})
        import subprocess  # starting and stopping only: a read asks `status` (every verify did)

        from anchor.chain.toolchain import compiler_settings, tool
        from anchor.files import private_dir

        private_dir(self.dir)
        command = [
            str(tool("anvil")),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--chain-id",
            str(LOCAL_CHAIN_ID),
            "--hardfork",
            compiler_settings().evm_version,
            "--state",
            str(self.state_file),
            "--state-interval",
            "1",
        ]
        from anchor.settings.session import child_environment

        with open(self.log_file, "ab") as log:
            # without our secrets: anvil keeps running after the command, its /proc/<pid>/environ readable
            process = subprocess.Popen(  # noqa: S603 - fixed argv, no shell
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                env=child_environment(),
            )
        self._write_record(process.pid)
        self.pid_file.unlink(missing_ok=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise ChainUnreachable(f"anvil exited with {process.returncode}; see {self.log_file}")
            try:
                rpc_call(self.rpc_url, "eth_chainId", timeout=0.5)
                return self.status()
            except ChainUnreachable:
                time.sleep(0.05)
        self._stop(process.pid)
        raise ChainUnreachable(f"anvil did not answer within {timeout:.0f}s; see {self.log_file}")

    def answer_within(self, timeout: float) -> ChainStatus:
        """The status once our running anvil answers, or at `timeout` if it never does: the status probe
        gives up after two seconds, which a loaded machine (a test suite's other workers) can take."""
        deadline = time.monotonic() + timeout
        current = self.status()
        while not current.running and current.pid is not None and time.monotonic() < deadline:
            time.sleep(0.2)
            current = self.status()
        return current

    def down(self) -> ChainStatus:
        """Stop anvil (SIGTERM, so it writes its state file); a no-op if it is not running."""
        pid = self._pid()
        if pid is not None:
            self._stop(pid)
        return self.status()

    def stop_if_ours(self, pid: int | None) -> None:
        """Stop the chain if the one running is still `pid` (the one a caller started): not one that
        someone stopped and started again meanwhile, which is theirs."""
        if pid is not None and self._pid() == pid:
            self._stop(pid)

    def _stop(self, pid: int, grace: float = 15.0) -> None:
        """SIGTERM to the anvil we started, then wait for its whole process group (`up` starts it as a
        group of its own): npm's anvil is a Node wrapper that passes the signal to the real anvil and
        exits at once, while anvil is still writing its state file. Past `grace`, the group is killed."""
        import signal

        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and (_alive(pid) or _group_runs(pid)):
            time.sleep(0.05)
        if _alive(pid) or _group_runs(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)  # the group still has a member: its id is not reused yet
        self.pid_file.unlink(missing_ok=True)
        self._write_record(None)  # the port stays: the next start uses it again


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _group_runs(pgid: int) -> bool:
    """Whether a process of the group `pgid` still runs. An exited one that waits for its parent to
    reap it (a zombie) does not: a container's first process may reap late, or never. One whose first
    thread ended before the others does (`runs`): anvil's last threads still hold its listening socket."""
    proc = Path("/proc")
    if not proc.is_dir():  # no procfs: ask the kernel, zombies and all
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    for entry in proc.iterdir():
        if not (entry.name.isascii() and entry.name.isdigit()):
            continue
        fields = stat_fields(entry / "stat")
        if fields is not None and int(fields[2]) == pgid and runs(int(entry.name), fields[0]):
            return True
    return False


def _alive(pid: int) -> bool:
    try:
        finished, _ = os.waitpid(pid, os.WNOHANG)
        if finished == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    fields = stat_fields(f"/proc/{pid}/stat")
    if fields is None:  # reaped meanwhile, or no procfs to tell (then the kernel's word stands)
        return not Path("/proc/self").is_dir()
    return runs(pid, fields[0])  # a zombie another process has yet to reap (it may never) has ended


def port_taken_message(port: int, own: Path) -> str:
    """Who holds `port` and what to do: Anchor's own chain of another data dir is named, with the
    command that stops it (two data dirs share the default port: the demo's chain and the tour's). An
    anvil of the data dir `own` that its record does not name (the record deleted or rewritten) is not
    "another data dir's": it is named by pid, which only its owner may stop."""
    other = _anchor_chain_on(port)
    if other is not None:
        pid, data_dir = other
        if _same_folder(data_dir, own):
            return (
                f"port {port} on 127.0.0.1 is used by an anvil of this data dir (pid {pid}) that"
                f" {own / 'chain' / 'anvil.json'} does not record: stop that process (kill {pid}), then"
                " run `anchor chain up`"
            )
        return (
            f"port {port} on 127.0.0.1 is used by the local chain of another data dir, {data_dir}"
            f" (anvil pid {pid}): stop it with `ANCHOR_DATA_DIR={data_dir} anchor chain down`, or give this"
            f" data dir a port of its own (ANCHOR_LOCAL_PORT={port + 1})"
        )
    return f"port {port} on 127.0.0.1 is used by another process; set ANCHOR_LOCAL_PORT (another free port)"


def _same_folder(a: str | Path, b: str | Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _anchor_chain_on(port: int) -> tuple[int, str] | None:
    """(pid, data dir) of the anvil listening on `port` if it is an Anchor local chain (its --state
    file is `<data dir>/chain/state.json`); None otherwise or when /proc cannot tell."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    if not inodes:
        return None
    for entry in os.scandir("/proc"):
        if not (entry.name.isascii() and entry.name.isdigit()):
            continue
        try:
            held = {os.readlink(f"/proc/{entry.name}/fd/{fd}") for fd in os.listdir(f"/proc/{entry.name}/fd")}
        except OSError:
            continue
        if not any(f"socket:[{inode}]" in held for inode in inodes):
            continue
        state = _state_of(int(entry.name))
        if state is not None and state.name == "state.json" and state.parent.name == "chain":
            return int(entry.name), str(state.parent.parent)
        return None
    return None


def _state_of(pid: int) -> Path | None:
    """The state file an anvil we start is given (`--state`), from its command line: what binds a
    process to a data dir when only its pid was recorded (a pid file of an earlier version, no start
    time). Any other process, an anvil of the user's own among them, has none or another."""
    argv = _cmdline(pid).split(b"\0")
    if b"--state" in argv and argv.index(b"--state") + 1 < len(argv):
        state = Path(os.fsdecode(argv[argv.index(b"--state") + 1]))
        if state.is_absolute():
            return state
        try:  # relative to where that process runs, not to where we do
            return Path(os.readlink(f"/proc/{pid}/cwd")) / state
        except OSError:
            return None
    return None


def _port_taken(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0
