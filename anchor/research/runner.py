"""Run one attempt's command under the contract's wall-clock bound, in a process group of its own.

On timeout the whole group gets SIGTERM, then after the grace period SIGKILL, so grandchildren that
ignore SIGTERM die too; the attempt's exit status is then 124 (as timeout(1) reports it). Output is
captured to run_dir/stdout.log and stderr.log. The command's environment is an allow-list (PATH, the
locale, a HOME in the run dir: anchor.research.sandbox.allowed_env), with or without the sandbox.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from anchor.research.pids import Pids
from anchor.research.sandbox import Sandbox, allowed_env
from anchor.settings.session import child_env, start_ticks

TIMEOUT_STATUS = 124


@dataclass(frozen=True, slots=True)
class RunResult:
    exit_code: int
    timed_out: bool
    duration_ms: int
    limit: dict[str, object] | None = None
    """The resource limit that ended the command, if one did: {"name": memory|run_dir|file_size, "bound": N}."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What one command may use (issue 28): address space, the size of any one file it writes, the
    run dir's total size and how many processes run at once (anchor.research.pids: a cgroup, which
    holds under root as RLIMIT_NPROC does not); wall time is the contract's. From
    ANCHOR_ATTEMPT_MEMORY_BYTES (8 GiB), ANCHOR_ATTEMPT_FILE_BYTES (1 GiB), ANCHOR_ATTEMPT_RUN_DIR_BYTES
    (2 GiB) and ANCHOR_ATTEMPT_PROCESSES (512). Crossing one ends the attempt as failed, naming the
    limit, and the search goes on."""

    memory_bytes: int = 8 << 30
    file_bytes: int = 1 << 30
    run_dir_bytes: int = 2 << 30
    processes: int = 512

    @classmethod
    def from_env(cls) -> Limits:
        from anchor.settings.session import env_number

        return cls(
            int(env_number("ANCHOR_ATTEMPT_MEMORY_BYTES", 8 << 30)),
            int(env_number("ANCHOR_ATTEMPT_FILE_BYTES", 1 << 30)),
            int(env_number("ANCHOR_ATTEMPT_RUN_DIR_BYTES", 2 << 30)),
            int(env_number("ANCHOR_ATTEMPT_PROCESSES", 512)),
        )

    def apply(self) -> None:
        """(In the child, before exec.) Bound address space and file size; inherited by bwrap and
        everything it starts."""
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (self.memory_bytes, self.memory_bytes))
        resource.setrlimit(resource.RLIMIT_FSIZE, (self.file_bytes, self.file_bytes))


_OUT_OF_MEMORY = (b"MemoryError", b"Cannot allocate memory", b"std::bad_alloc", b"out of memory")
_NO_FORK = (b"Resource temporarily unavailable", b"BlockingIOError", b"Cannot fork", b"fork: retry")
_SIGXFSZ_STATUS = (128 + signal.SIGXFSZ, -signal.SIGXFSZ)


def _dir_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


@dataclass(frozen=True, slots=True)
class Bounds:
    """One command's limits in force: `preexec` for its child (the rlimits, its own pids group), `met`
    once it ended. Made by `bounded`, for an attempt here and a mission's command alike."""

    limits: Limits
    pids: Pids

    def preexec(self) -> None:
        """(In the child, before exec.) setrlimit and one write to the group: no lock, no allocation."""
        self.limits.apply()
        self.pids.enter()

    def met(self, code: int, log: Path) -> dict[str, object] | None:
        return _named_limit(code, log, self.limits, self.pids)


@contextlib.contextmanager
def bounded(limits: Limits) -> Iterator[Bounds]:
    """The bounds of one command; its pids group (and whatever is left in it) goes when the block ends."""
    pids = Pids.create(limits.processes)
    try:
        yield Bounds(limits, pids)
    finally:
        pids.close()


def _named_limit(code: int, log: Path, limits: Limits, pids: Pids) -> dict[str, object] | None:
    """Which limit a failed command met, from what it left: a fork the process bound refused (the
    cgroup's own count), a file-size signal, or an allocation failure reported at the end of its
    stderr (under RLIMIT_AS, allocation fails rather than the process being killed)."""
    if code != 0 and pids.met():
        return {"name": "processes", "bound": limits.processes}
    if code in _SIGXFSZ_STATUS:
        return {"name": "file_size", "bound": limits.file_bytes}
    if code != 0:
        with contextlib.suppress(OSError), open(log, "rb") as err:
            err.seek(max(0, os.fstat(err.fileno()).st_size - 8192))
            tail = err.read()
            if any(word in tail for word in _OUT_OF_MEMORY):
                return {"name": "memory", "bound": limits.memory_bytes}
            if pids.rlimit is not None and any(word in tail for word in _NO_FORK):  # the non-root fallback
                return {"name": "processes", "bound": limits.processes}
    return None


def run_command(
    command: str,
    cwd: Path,
    run_dir: Path,
    timeout_s: float,
    grace_s: float,
    sandbox: Sandbox | None = None,
    pass_env: tuple[str, ...] = (),
    limits: Limits | None = None,
) -> RunResult:
    run_dir.mkdir(parents=True, exist_ok=True)
    with bounded(limits or Limits.from_env()) as bounds:
        return _run_bounded(command, cwd, run_dir, timeout_s, grace_s, sandbox, pass_env, bounds)


def _run_bounded(
    command: str, cwd: Path, run_dir: Path, timeout_s: float, grace_s: float, sandbox: Sandbox | None,
    pass_env: tuple[str, ...], bounds: Bounds,
) -> RunResult:  # fmt: skip
    import threading

    limits = bounds.limits
    start = time.monotonic()
    over: dict[str, object] = {}
    with open(run_dir / "stdout.log", "wb") as out, open(run_dir / "stderr.log", "wb") as err:
        process = subprocess.Popen(  # noqa: S602 - the command is the researcher's own, from the contract
            command if sandbox is None else sandbox.argv(command, run_dir),
            shell=sandbox is None,
            cwd=cwd,
            # bwrap clears the environment itself and sets the allow-list inside; it gets no secret either
            env=allowed_env(run_dir, passed=pass_env) if sandbox is None else child_env(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            preexec_fn=bounds.preexec,  # noqa: PLW1509 - setrlimit and one write: no lock, no allocation of note
        )
        stop = threading.Event()

        def watch_run_dir() -> None:
            """The run dir's size, twice a second: past its bound the group goes down, named."""
            while not stop.wait(0.5):
                if _dir_bytes(run_dir) > limits.run_dir_bytes:
                    over.update(name="run_dir", bound=limits.run_dir_bytes)
                    _signal_group(process.pid, signal.SIGKILL)
                    return

        watcher = threading.Thread(target=watch_run_dir, name="run-dir-quota", daemon=True)
        watcher.start()
        try:
            # who owns what: the attempt's process group, recorded before we wait on it, so whoever must
            # stop it (a resumed search, a test) signals exactly this group and never a process by name
            (run_dir / "process.json").write_text(json.dumps(_record(process.pid)))
            code = process.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(process, grace_s)
            code = TIMEOUT_STATUS
        except BaseException:  # Ctrl-C, or SIGTERM turned into one: the group goes down before we do
            stop_group(process, grace_s)
            raise
        finally:
            stop.set()
            watcher.join()
    # the leader may be gone while grandchildren linger: sweep the group in every case, and return only
    # once it is really gone, so the next attempt never shares the machine with this one
    _signal_group(process.pid, signal.SIGKILL)
    _wait_group_gone(process.pid)
    if not over and _dir_bytes(run_dir) > limits.run_dir_bytes:  # written faster than the watcher looked
        over.update(name="run_dir", bound=limits.run_dir_bytes)
    if over:
        limit: dict[str, object] | None = dict(over)
    else:  # a timeout is its own verdict; otherwise, what the failure left says which limit it met
        limit = None if timed_out else bounds.met(code, run_dir / "stderr.log")
    if limit is not None and code == 0:
        code = 1  # the quota watcher ended it: never a success
    return RunResult(code, timed_out, int((time.monotonic() - start) * 1000), limit)


def stop_group(process: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM the process's group, SIGKILL what is left after `grace_s`, and return once it is gone."""
    _kill_group(process, grace_s)
    _wait_group_gone(process.pid)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _kill_group(process: subprocess.Popen[bytes], grace_s: float) -> None:
    _signal_group(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if process.poll() is not None and not _live_members(process.pid):
            return
        time.sleep(0.02)
    _signal_group(process.pid, signal.SIGKILL)
    process.wait()


def _wait_group_gone(pgid: int, bound_s: float = 5.0) -> None:
    deadline = time.monotonic() + bound_s
    while _live_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.01)


def _live_members(pgid: int) -> bool:
    """Whether any process of the group still runs; zombies (dead, awaiting their reaper) do not count."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return bool(_groups().get(pgid))


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _record(pgid: int) -> dict[str, object]:
    """Who the attempt's group is: its id, the leader's start time and this boot (pid reuse cannot fake
    the three together)."""
    return {"pgid": pgid, "start_ticks": start_ticks(pgid), "boot_id": _boot_id(), "started_unix": time.time()}


def _groups() -> dict[int, dict[int, int]]:
    """{pgid: {pid: start ticks}} of every live (non-zombie) process, from one pass over /proc."""
    found: dict[int, dict[int, int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] not in ("Z", "X"):
            found.setdefault(int(fields[2]), {})[int(entry.name)] = int(fields[19])
    return found


def reap_survivors(runs: Path) -> list[int]:
    """Stop the attempt groups a harness that died (SIGKILL, a lost machine) left running under `runs`,
    and only those; returns the group ids stopped.

    A group is ours when its record (process.json, written before the harness waits on it) names this
    boot, and every live member started at or after the recorded leader, and the leader, if alive, is
    the recorded one (same start time). A group id reused by someone else's process fails the last
    test, so nothing of theirs is ever signalled."""
    stopped: list[int] = []
    records = [*runs.glob("*/process.json"), *runs.glob("*.final-*/*/process.json")]
    if not records:
        return stopped
    boot, groups = _boot_id(), _groups()
    for path in records:
        try:
            record = json.loads(path.read_text())
            pgid, started = int(record["pgid"]), int(record["start_ticks"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if record.get("boot_id") != boot or pgid <= 1:
            continue
        members = groups.get(pgid, {})
        if not members or any(ticks < started for ticks in members.values()):
            continue
        leader = members.get(pgid)
        if leader is not None and leader != started:
            continue
        _signal_group(pgid, signal.SIGKILL)
        _wait_group_gone(pgid)
        stopped.append(pgid)
    return stopped
