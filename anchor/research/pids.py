"""A bound on how many processes one command (an attempt, a mission) may run at once.

Why a cgroup: RLIMIT_NPROC does not hold under root. The kernel exempts uid 0 (and any process with
CAP_SYS_RESOURCE or CAP_SYS_ADMIN) from it, and bubblewrap started by root maps the sandbox's user to
uid 0 outside, so a fork bomb in an attempt run by a root harness (CI, most containers) would take
the host's process table. A `pids` cgroup of our own holds for every user: the command and all it
starts are in it, `pids.max` refuses the fork past the bound (EAGAIN), and `pids.events` counts the
refusals, so a failed command is named as having met this limit and never guessed at from its output.

Where no `pids` hierarchy is writable (an unprivileged user without delegation), a non-root harness
falls back to RLIMIT_NPROC set to the bound plus the processes its user already runs (that rlimit
counts every process of the user); root without a writable hierarchy has no bound, and `Pids.create`
says so (`enforced` is False) rather than pretend.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

_COUNTER = itertools.count()


def _pids_hierarchy() -> Path | None:
    """The directory of this process's own `pids` cgroup, v1 (a `pids` mount) or v2 (a unified mount
    whose controllers include pids), or None."""
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
        if fstype == "cgroup" and "pids" in options:
            relative = next((path for names, path in v1.items() if "pids" in names.split(",")), None)
            if relative is not None:
                return point / relative.lstrip("/")
        if fstype == "cgroup2" and "" in v1:
            with contextlib.suppress(OSError):
                if "pids" in (point / "cgroup.controllers").read_text().split():
                    return point / v1[""].lstrip("/")
    return None


@dataclass(slots=True)
class Pids:
    """One command's process bound. `create` before starting it, `enter` in the child before exec
    (it only writes to a descriptor opened here), `met` after it ended, `close` always."""

    bound: int
    group: Path | None
    procs_fd: int | None
    rlimit: int | None
    """RLIMIT_NPROC for the child when no cgroup could be made (non-root only)."""

    @property
    def enforced(self) -> bool:
        return self.group is not None or self.rlimit is not None

    @classmethod
    def create(cls, bound: int) -> Pids:
        parent = _pids_hierarchy()
        if parent is not None:
            _sweep(parent)
            group = parent / f"anchor-{os.getpid()}-{next(_COUNTER)}"
            try:
                if group.parent.joinpath("cgroup.subtree_control").exists():  # v2: pids must be on below us
                    with contextlib.suppress(OSError):
                        group.parent.joinpath("cgroup.subtree_control").write_text("+pids")
                group.mkdir(mode=0o700)
                (group / "pids.max").write_text(str(bound))
                fd = os.open(group / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
                return cls(bound, group, fd, None)
            except OSError:
                with contextlib.suppress(OSError):
                    group.rmdir()
        if os.geteuid() != 0:
            return cls(bound, None, None, bound + _processes_of(os.getuid()))
        return cls(bound, None, None, None)

    def enter(self) -> None:
        """(In the child, before exec.) Join the group, or take the rlimit: inherited by all it starts."""
        if self.procs_fd is not None:
            os.write(self.procs_fd, str(os.getpid()).encode())
        elif self.rlimit is not None:
            import resource

            resource.setrlimit(resource.RLIMIT_NPROC, (self.rlimit, self.rlimit))

    def met(self) -> bool:
        """Whether a fork was refused for this bound (the cgroup's own count; never read from output)."""
        if self.group is None:
            return False
        try:
            for line in (self.group / "pids.events").read_text().splitlines():
                name, _, value = line.partition(" ")
                if name == "max":
                    return int(value) > 0
        except (OSError, ValueError):
            pass
        return False

    def close(self) -> None:
        """Stop whatever of the command is still in the group (processes we started: no one else can
        be in it) and remove the group."""
        if self.procs_fd is not None:
            os.close(self.procs_fd)
            self.procs_fd = None
        if self.group is None:
            return
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            try:
                members = [int(p) for p in (self.group / "cgroup.procs").read_text().split()]
            except (OSError, ValueError):
                members = []
            if not members:
                break
            for pid in members:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)
        with contextlib.suppress(OSError):
            self.group.rmdir()


def _sweep(parent: Path) -> None:
    """Remove the groups a harness that was killed (SIGKILL, a lost machine) left behind: ours by name,
    its process gone, and empty (rmdir refuses a group that still holds a process)."""
    with contextlib.suppress(OSError):
        for stale in parent.glob("anchor-*-*"):
            owner = stale.name.split("-")[1]
            if owner.isdigit() and int(owner) != os.getpid() and not Path(f"/proc/{owner}").exists():
                with contextlib.suppress(OSError):
                    stale.rmdir()


def _processes_of(uid: int) -> int:
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    count += 1
    return count
