"""Run one untrusted command (an attempt, a proposer, an evaluator) under its bounds, in a process group
of its own: `run_command`, the fence's one entry for the research loop.

On timeout the whole group gets SIGTERM, then after the grace period SIGKILL, so grandchildren that
ignore SIGTERM die too; the attempt's exit status is then 124 (as timeout(1) reports it). Output is
captured to run_dir/stdout.log and stderr.log. The command's environment is an allow-list (PATH, the
locale, a HOME in the run dir: anchor.fence.sandbox.allowed_environment), with or without the sandbox.

In the sandbox the command writes only its bounded filesystem (anchor.fence.quota): its run dir and its
copies of the editable files (anchor.fence.workspace), which the harness reads back as hostile data
once every process of the command is gone. A bound the kernel counted (an OOM kill, a refused fork, a
full filesystem) ends the command naming that limit, whatever it exited with: a figure measured after
a worker was killed is never a completed attempt.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from anchor.fence.cgroups import CommandGroup, Limits, processes_of
from anchor.fence.quota import BoundedDir, copy_in, replace_run_dir
from anchor.fence.sandbox import Sandbox, allowed_environment
from anchor.fence.walk import bytes_under
from anchor.fence.workspace import Workspace, said, unsafe_entries
from anchor.files import tail_regular
from anchor.record import Value
from anchor.settings.session import runs, start_ticks, stat_fields

TIMEOUT_STATUS = 124
HARNESS_FILES = ("process.json", "code.diff")
"""What the harness itself writes in a run dir (its process record, the attempt's diff from git): what
the command leaves at these names never replaces them."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class RunResult(Value):
    exit_code: int
    timed_out: bool
    duration_ms: int
    limit: dict[str, object] | None = None
    """The resource limit that ended the command, if one did: {"name": memory|processes|disk|inodes|file_size,
    "bound": N}."""
    memory_bound: str = "cgroup"
    """How the memory bound held: "cgroup" (every process and tmpfs page together) or "rlimit" (per
    process: no memory cgroup could be made here; recorded in the ledger entry)."""
    git_changed: tuple[str, ...] = ()
    """What of the repository's .git the command changed (anchor.fence.guard.GitSeal), undone: a
    command that changed any of it failed, whatever it exited with."""
    refused: tuple[str, ...] = ()
    """What the command left in the editable files that the repository never holds ("src/sub/.git (a
    nested repository (.git))", a link, a device): never written back, never given to git; a command
    that left any of it failed, whatever it exited with."""
    written_back: tuple[str, ...] = ()
    """The editable paths written (or removed) in the repository from the command's copies (a proposer)."""
    quota: str = "kernel"
    """How the run dir's bound held: "kernel" (a filesystem of its own, bytes and inodes) or "watched"
    (regular files' bytes, counted by the harness: no filesystem could be mounted here)."""


_OUT_OF_MEMORY = (b"MemoryError", b"Cannot allocate memory", b"std::bad_alloc", b"out of memory")
_NO_FORK = (b"Resource temporarily unavailable", b"BlockingIOError", b"Cannot fork", b"fork: retry")
_SIGXFSZ_STATUS = (128 + signal.SIGXFSZ, -signal.SIGXFSZ)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Bounds(Value):
    """One command's limits in force: `preexec` for its child (its cgroups, and the rlimits that stand
    in for a cgroup that could not be made), `met` once it ended. Made by `bounded`, for an attempt here
    and a mission's command alike."""

    limits: Limits
    group: CommandGroup
    nproc: int | None
    """RLIMIT_NPROC for the child when no pids group could be made (non-root only: root ignores it)."""
    forks_inside: bool = False
    """Whether processes are bounded inside the sandbox's own kernel (gVisor's RLIMIT_NPROC), where the
    host's pids group sees runsc's threads, not the command's processes."""

    @property
    def memory(self) -> str:
        """How the memory bound holds: "cgroup" (every process and tmpfs page together) or "rlimit"
        (RLIMIT_AS per process, the fallback where no memory cgroup can be made)."""
        return "cgroup" if self.group.memory_enforced else "rlimit"

    def preexec(self) -> None:
        """(In the child, before exec.) setrlimit and one write per group: no lock, no allocation."""
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (self.limits.file_bytes, self.limits.file_bytes))
        if not self.group.memory_enforced:
            resource.setrlimit(resource.RLIMIT_AS, (self.limits.memory_bytes, self.limits.memory_bytes))
        if self.nproc is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (self.nproc, self.nproc))
        self.group.enter()

    def met(self, code: int, log: Path) -> dict[str, object] | None:
        """Which limit the command met, from what it left: the kernel's own counts in its cgroups (an
        OOM kill, a refused fork), whatever it exited with (a parent that exits 0 after a child was
        killed met the bound all the same); then, for a failed command, a file-size signal, or (under
        the rlimit fallbacks only, where allocation fails rather than the process being killed) an
        allocation failure at the end of its stderr."""
        kernel = self.group.met()
        if kernel == "memory":
            return {"name": "memory", "bound": self.limits.memory_bytes}
        if kernel == "processes":
            return {"name": "processes", "bound": self.limits.processes}
        if code == 0:
            return None
        if code in _SIGXFSZ_STATUS:
            return {"name": "file_size", "bound": self.limits.file_bytes}
        tail = tail_regular(log, 8192)  # the command's to replace: never followed, never waited on
        if any(word in tail for word in _OUT_OF_MEMORY):
            return {"name": "memory", "bound": self.limits.memory_bytes}
        if (self.nproc is not None or self.forks_inside) and any(word in tail for word in _NO_FORK):
            return {"name": "processes", "bound": self.limits.processes}
        return None


GVISOR_THREADS = 256
"""Host threads allowed runsc (its sentry, gofer and Go runtime) beside the command's own bound: under
gVisor the command's processes are tasks of gVisor's kernel, bounded there (RLIMIT_NPROC inside), and
each may cost runsc host threads of its own (its platform's stubs): the host bound is three per task."""


@contextlib.contextmanager
def bounded(limits: Limits, runtime: str | None = None) -> Iterator[Bounds]:
    """The bounds of one command (run in `runtime`: bubblewrap, gvisor, or None unconfined); its cgroups
    (and whatever is left in them) go when the block ends."""
    inside = runtime == "gvisor"
    host = 3 * limits.processes + GVISOR_THREADS if inside else limits.processes
    group = CommandGroup.create(host, limits.memory_bytes)
    nproc = None
    if not group.processes_enforced and os.geteuid() != 0:
        nproc = limits.processes + processes_of(os.getuid())
    try:
        yield Bounds(limits, group, nproc, inside)
    finally:
        group.close()


def run_command(
    command: str,
    cwd: Path,
    run_dir: Path,
    timeout_s: float,
    grace_s: float,
    sandbox: Sandbox | None = None,
    pass_env: tuple[str, ...] = (),
    limits: Limits | None = None,
    *,
    editable: tuple[str, ...] = (),
    network: bool = False,
    extra_env: dict[str, str] | None = None,
    write_back: bool = False,
) -> RunResult:
    """Run `command` (a shell line) in `cwd` under `limits`, sandboxed unless `sandbox` is None, its
    logs and evidence in `run_dir`. `write_back` (a proposer) writes the command's copies of the editable
    files back to the repository once they are inspected; otherwise they are only inspected. Unconfined,
    `editable` names the paths to inspect in the repository itself. `network` and `extra_env` are the
    proposer's (an agent calling its model, ANCHOR_EDITABLE)."""
    from anchor.fence.guard import GitSeal

    run_dir.mkdir(parents=True, exist_ok=True)
    limits = limits or Limits()  # the defaults: a caller with settings passes Limits.from_environment
    seal = GitSeal.take(cwd)
    if sandbox is None:
        before = unsafe_entries(cwd, editable)
        with bounded(limits, None) as bounds:
            result = _run_bounded(
                command, cwd, run_dir, timeout_s, grace_s, None, pass_env, bounds, None, None, network, extra_env
            )
        left = {p: said(k) for p, k in unsafe_entries(cwd, editable).items() if before.get(p) != k}
        result = replace(result, refused=tuple(f"{p} ({k})" for p, k in sorted(left.items())), quota="watched")
    else:
        space = BoundedDir.make(limits.run_dir_bytes, sandbox.identity)
        try:
            work = (
                Workspace.make(sandbox.repo, sandbox.editable, space.edit, sandbox.identity, space.size)
                if sandbox.edits
                else None
            )
            copy_in(run_dir, space, sandbox.identity)
            with bounded(limits, sandbox.runtime) as bounds:
                result = _run_bounded(
                    command,
                    cwd,
                    run_dir,
                    timeout_s,
                    grace_s,
                    sandbox,
                    pass_env,
                    bounds,
                    space,
                    work,
                    network,
                    extra_env,
                )
            if not replace_run_dir(space, run_dir, keep=HARNESS_FILES) and result.limit is None:
                # files whose sizes add up past the bound (sparse ones, hard links to one): not copied, named
                result = replace(
                    result, limit={"name": "disk", "bound": limits.run_dir_bytes}, exit_code=result.exit_code or 1
                )
            refused = {} if work is None else work.refused()
            back: list[str] = []
            if work is not None and write_back and not refused and result.exit_code == 0 and result.limit is None:
                back = work.write_back()
            result = replace(
                result,
                refused=tuple(f"{p} ({k})" for p, k in sorted(refused.items())),
                written_back=tuple(back),
                quota="kernel" if space.enforced else "watched",
            )
        finally:
            space.close()
    changed = () if seal is None else tuple(seal.broken())
    if changed:  # undone before any git of ours runs again; never a success
        result = replace(result, git_changed=changed)
    if (changed or result.refused) and result.exit_code == 0:
        result = replace(result, exit_code=1)
    return result


def _run_bounded(
    command: str,
    cwd: Path,
    run_dir: Path,
    timeout_s: float,
    grace_s: float,
    sandbox: Sandbox | None,
    pass_env: tuple[str, ...],
    bounds: Bounds,
    space: BoundedDir | None,
    work: Workspace | None,
    network: bool,
    extra_env: dict[str, str] | None,
) -> RunResult:
    import threading

    limits = bounds.limits
    start = time.monotonic()
    over: dict[str, object] = {}
    logs = run_dir if space is None else space.run  # the logs count against the bound too
    with _fresh_log(logs / "stdout.log") as out, _fresh_log(logs / "stderr.log") as err:
        if sandbox is None:
            argv: str | list[str] = command
            env = {**allowed_environment(run_dir, passed=pass_env), **(extra_env or {})}
        else:  # the launcher starts from the allow-list itself (`env -i`): nothing else reaches it
            copies = {} if work is None else work.copies
            shown = None if space is None else space.run
            argv = sandbox.argv(command, run_dir, network, extra_env, limits.processes, copies, shown)
            env = {}
        process = subprocess.Popen(  # noqa: S602 - the command is the researcher's own, from the contract
            argv,
            shell=sandbox is None,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
            preexec_fn=bounds.preexec,  # noqa: PLW1509 - setrlimit and one write: no lock, no allocation of note
        )
        stop = threading.Event()

        def watch() -> None:
            """Every 10 ms (a statvfs and a small read): the kernel's count of an OOM kill in the
            command's group (cgroup v1 has no memory.oom.group: the first kill ends the whole command
            here), and the run dir's bound (a full filesystem, or regular files' bytes where none could
            be mounted). Either ends the group, named."""
            ticks = 0
            while not stop.wait(0.01):
                ticks += 1
                if bounds.group.met() == "memory":
                    over.update(name="memory", bound=limits.memory_bytes)
                elif space is not None and (space.enforced or ticks % 50 == 0) and (full := space.full()):
                    over.update(name=full, bound=limits.run_dir_bytes if full == "disk" else space.inodes)
                elif space is None and ticks % 50 == 0 and bytes_under(run_dir) > limits.run_dir_bytes:
                    over.update(name="disk", bound=limits.run_dir_bytes)
                else:
                    continue
                _signal_group(process.pid, signal.SIGKILL)
                return

        watcher = threading.Thread(target=watch, name="command-bounds", daemon=True)
        watcher.start()
        try:
            # who owns what: the attempt's process group, recorded before we wait on it, so whoever must
            # stop it (a resumed search, a test) signals exactly this group and never a process by name
            (run_dir / "process.json").write_text(json.dumps(_record(process.pid)))
            code = wait_for(process, timeout_s)
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
    if not over:  # met faster than the watcher looked
        full = space.full() if space is not None else ("disk" if bytes_under(run_dir) > limits.run_dir_bytes else None)
        if full is not None:
            over.update(name=full, bound=limits.run_dir_bytes if full == "disk" else space.inodes if space else 0)
    if over:
        limit: dict[str, object] | None = dict(over)
    else:  # a timeout is its own verdict; otherwise, what the command left says which limit it met
        limit = None if timed_out else bounds.met(code, logs / "stderr.log")
    if limit is not None and code == 0:
        code = 1  # a bound ended it (or killed one of its processes): never a success
    return RunResult(code, timed_out, int((time.monotonic() - start) * 1000), limit, bounds.memory)


def _fresh_log(path: Path) -> BinaryIO:
    """A new, empty log the harness owns at `path`: whatever the last command left there (a FIFO a
    plain open would wait on for ever, a link to a host file) is removed first, never opened."""
    with contextlib.suppress(FileNotFoundError):
        if path.is_dir() and not path.is_symlink():
            import shutil

            shutil.rmtree(path)
        else:
            path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    return os.fdopen(fd, "wb")


def wait_for(process: subprocess.Popen[bytes], timeout_s: float) -> int:
    """`process.wait(timeout_s)` without its polling loop (sleeps of up to 50 ms between looks, which a
    short command paid in full): the kernel says when the process ends, through a pidfd."""
    import select

    try:
        fd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):  # not Linux 5.3+, or it is already gone
        return process.wait(timeout=timeout_s)
    try:
        ready = select.poll()
        ready.register(fd, select.POLLIN)
        if not ready.poll(max(0.0, timeout_s) * 1000):
            raise subprocess.TimeoutExpired(process.args, timeout_s)
    finally:
        os.close(fd)
    return process.wait()


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
    """{pgid: {pid: start ticks}} of every process that runs (`runs`: no zombie, unless a thread of it
    runs), from one pass over /proc."""
    found: dict[int, dict[int, int]] = {}
    for entry in os.scandir("/proc"):
        if not (entry.name.isascii() and entry.name.isdigit()):
            continue
        fields = stat_fields(Path(entry.path, "stat"))
        if fields is not None and runs(int(entry.name), fields[0]):
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
