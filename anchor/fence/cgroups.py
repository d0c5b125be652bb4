"""One command's cgroups: how many processes it may run at once, and how much memory all of them (and
the tmpfs pages they write) may hold together.

Why a cgroup for processes: RLIMIT_NPROC does not hold under root. The kernel exempts uid 0 (and any
process with CAP_SYS_RESOURCE or CAP_SYS_ADMIN) from it, and a sandbox's user maps to the harness's
uid outside, so a fork bomb in an attempt run by a root harness (CI, most containers) would take the
host's process table. A `pids` group of our own holds for every user: the command and all it starts
are in it, `pids.max` refuses the fork past the bound (EAGAIN), and `pids.events` counts the refusals.

Why a cgroup for memory: RLIMIT_AS bounds one process's address space, not the command: three
children of 700 MiB each ran under a 1 GiB rlimit, and the sandbox's tmpfs pages (RAM) were outside it.
A `memory` group charges every page any member touches, tmpfs pages included, to one bound (v2
`memory.max` with `memory.swap.max` 0 and `memory.oom.group`; v1 `memory.limit_in_bytes` and
`memory.memsw.limit_in_bytes` where swap accounting exists). Past it the kernel's OOM killer ends the
command, and `memory.events` (v2) or `memory.oom_control` (v1) counts the kill, so a failed command is
named as having met the limit from the kernel's own count, never guessed at from its output.

Where no hierarchy is writable (an unprivileged user without delegation) the caller falls back to
rlimits (anchor.fence.runner.Limits) and says so: `memory_enforced` / `processes_enforced` are False
rather than pretend.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from anchor.record import Value

if TYPE_CHECKING:
    from anchor.settings.model import Environment

_COUNTER = itertools.count()


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Limits(Value):
    """What one command may use: memory (all its processes and the tmpfs pages they
    write, together: a memory cgroup), the size of any one file it writes, the run dir's total size and
    how many processes run at once (a pids cgroup, which holds under root as RLIMIT_NPROC does not);
    wall time is the contract's. From ANCHOR_ATTEMPT_MEMORY_BYTES (8 GiB), ANCHOR_ATTEMPT_FILE_BYTES
    (1 GiB), ANCHOR_ATTEMPT_RUN_DIR_BYTES (2 GiB) and ANCHOR_ATTEMPT_PROCESSES (512). Crossing one ends
    the attempt as failed, naming the limit, and the search goes on."""

    memory_bytes: int = 8 << 30
    file_bytes: int = 1 << 30
    run_dir_bytes: int = 2 << 30
    processes: int = 512

    @classmethod
    def from_environment(cls, env: Environment) -> Limits:
        """The limits the settings model (anchor.settings.model) gives."""
        return cls(*env.attempt_limits)


LIMIT_SETTINGS = {
    "memory": "ANCHOR_ATTEMPT_MEMORY_BYTES",
    "processes": "ANCHOR_ATTEMPT_PROCESSES",
    "disk": "ANCHOR_ATTEMPT_RUN_DIR_BYTES",
    "inodes": "one per 4 KiB of ANCHOR_ATTEMPT_RUN_DIR_BYTES",
    "file_size": "ANCHOR_ATTEMPT_FILE_BYTES",
}
"""Which setting bounds each limit a command can meet (docs/configuration.md)."""


def hierarchy(controller: str) -> Path | None:
    """The directory of this process's own cgroup that has `controller`: v1 (a mount whose options name
    it) or v2 (a unified mount whose `cgroup.controllers` lists it), or None."""
    try:
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
        own = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    v1 = {line.split(":", 2)[1]: line.split(":", 2)[2] for line in own if line.count(":") >= 2}
    for line in mounts:
        pre, _, post = line.partition(" - ")
        fields, tail = pre.split(), post.split()
        if len(fields) < 5 or len(tail) < 3:
            continue
        point, fstype, options = Path(fields[4]), tail[0], tail[2].split(",")
        if fstype == "cgroup" and controller in options:
            relative = next((path for names, path in v1.items() if controller in names.split(",")), None)
            if relative is not None:
                return point / relative.lstrip("/")
        if fstype == "cgroup2" and "" in v1:
            with contextlib.suppress(OSError):
                if controller in (point / "cgroup.controllers").read_text().split():
                    return point / v1[""].lstrip("/")
    return None


def _counter(path: Path, name: str) -> int:
    """The value of `name` in a flat-keyed cgroup file (`pids.events`, `memory.events`, `memory.oom_control`)."""
    with contextlib.suppress(OSError, ValueError):
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == name:
                return int(value)
    return 0


@dataclass(slots=True)
class CommandGroup:
    """One command's groups. `create` before starting it, `enter` in the child before exec (it only
    writes to descriptors opened here), `met` after it ended, `close` always."""

    processes: int
    memory_bytes: int
    groups: dict[str, Path] = field(default_factory=dict)
    """controller -> the group made for it (v2: one directory for both)."""
    procs_fds: list[int] = field(default_factory=list)

    @property
    def processes_enforced(self) -> bool:
        return "pids" in self.groups

    @property
    def memory_enforced(self) -> bool:
        return "memory" in self.groups

    @property
    def group(self) -> Path | None:
        """The pids group (where the process bound is read)."""
        return self.groups.get("pids")

    @classmethod
    def create(cls, processes: int, memory_bytes: int) -> CommandGroup:
        made = cls(processes, memory_bytes)
        name = f"anchor-{os.getpid()}-{next(_COUNTER)}"
        for controller in ("pids", "memory"):
            parent = hierarchy(controller)
            if parent is None:
                continue
            group = parent / name
            if group in made.groups.values():  # v2: the same directory carries both controllers
                made._bound(controller, group)
                made.groups[controller] = group
                continue
            _sweep(parent)
            try:
                if parent.joinpath("cgroup.subtree_control").exists():  # v2: the controller must be on below us
                    with contextlib.suppress(OSError):
                        parent.joinpath("cgroup.subtree_control").write_text(f"+{controller}")
                group.mkdir(mode=0o700)
                made._bound(controller, group)
                made.procs_fds.append(os.open(group / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC))
                made.groups[controller] = group
            except OSError:
                with contextlib.suppress(OSError):
                    group.rmdir()
        return made

    def _bound(self, controller: str, group: Path) -> None:
        if controller == "pids":
            (group / "pids.max").write_text(str(self.processes))
        elif (group / "memory.max").exists():  # v2
            (group / "memory.max").write_text(str(self.memory_bytes))
            with contextlib.suppress(OSError):  # absent without swap accounting
                (group / "memory.swap.max").write_text("0")
            with contextlib.suppress(OSError):  # the whole command goes at once, not one child at a time
                (group / "memory.oom.group").write_text("1")
        else:  # v1: memsw (memory + swap) may only be set once the memory limit is
            (group / "memory.limit_in_bytes").write_text(str(self.memory_bytes))
            with contextlib.suppress(OSError):
                (group / "memory.memsw.limit_in_bytes").write_text(str(self.memory_bytes))

    def enter(self) -> None:
        """(In the child, before exec.) Join every group: inherited by all it starts."""
        pid = str(os.getpid()).encode()
        for fd in self.procs_fds:
            os.write(fd, pid)

    def met(self) -> str | None:
        """Which bound the kernel enforced on this command: "memory" (an OOM kill in its group),
        "processes" (a fork refused), or None. Read from the cgroup's own counters."""
        memory = self.groups.get("memory")
        if memory is not None:
            events = memory / "memory.events"  # v2; v1 counts its kills in memory.oom_control
            if _counter(events if events.exists() else memory / "memory.oom_control", "oom_kill") > 0:
                return "memory"
        pids = self.groups.get("pids")
        if pids is not None and _counter(pids / "pids.events", "max") > 0:
            return "processes"
        return None

    def close(self) -> None:
        """Stop whatever of the command is still in its groups (processes we started: no one else can
        be in them) and remove the groups."""
        for fd in self.procs_fds:
            os.close(fd)
        self.procs_fds.clear()
        for group in dict.fromkeys(self.groups.values()):
            deadline = time.monotonic() + 5.0
            while time.monotonic() < deadline:
                try:
                    members = [int(p) for p in (group / "cgroup.procs").read_text().split()]
                except (OSError, ValueError):
                    members = []
                if not members:
                    break
                for pid in members:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                time.sleep(0.01)
            with contextlib.suppress(OSError):
                group.rmdir()


def _sweep(parent: Path) -> None:
    """Remove the groups a harness that was killed (SIGKILL, a lost machine) left behind: ours by name,
    its process gone, and empty (rmdir refuses a group that still holds a process)."""
    with contextlib.suppress(OSError):
        for stale in parent.glob("anchor-*-*"):
            owner = stale.name.split("-")[1]
            if (
                (owner.isascii() and owner.isdigit())
                and int(owner) != os.getpid()
                and not Path(f"/proc/{owner}").exists()
            ):
                with contextlib.suppress(OSError):
                    stale.rmdir()


def processes_of(uid: int) -> int:
    """How many processes `uid` runs now (RLIMIT_NPROC counts them all: the non-root fallback adds them)."""
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isascii() and entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    count += 1
    return count
