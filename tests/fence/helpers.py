"""What every conformance test of the fence needs: the runtimes this machine has, a sandbox of each, one
command run through the fence's entry, and the host's own view of the command's processes."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from anchor.fence.cgroups import hierarchy
from anchor.fence.runner import Limits, RunResult, run_command
from anchor.fence.sandbox import Sandbox

RUNTIMES = ["bubblewrap", "gvisor"]
"""Both runtimes, always: `make sandbox` installs them (CI runs it), and a missing one fails its cases
(`Sandbox.find` says which tool is missing) rather than skip them."""


def box(repo: Path, runtime: str, editable: tuple[str, ...] = ("params.json",)) -> Sandbox:
    return Sandbox.find(repo, editable, (), runtime=runtime)


def run(
    sandbox: Sandbox | None, repo: Path, run_dir: Path, command: str, *, editable: tuple[str, ...] = (), **limits: int
) -> RunResult:
    return run_command(
        command, repo, run_dir, 120, 1, sandbox, limits=Limits(**limits) if limits else None, editable=editable
    )


def _members() -> set[int]:
    """Every process now in one of this harness's command groups, read from the host's pids hierarchy."""
    import os

    root = hierarchy("pids")
    assert root is not None, "no pids cgroup here: the host's view of an attempt needs one"
    found: set[int] = set()
    for group in root.glob(f"anchor-{os.getpid()}-*"):
        try:
            found |= {int(pid) for pid in (group / "cgroup.procs").read_text().split()}
        except (OSError, ValueError):
            continue
    return found


def host_ids(pid: int) -> dict[str, list[int]] | None:
    """The real, effective, saved and filesystem uids and gids of `pid` as the host sees them."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return None
    return {line.split(":")[0]: [int(v) for v in line.split()[1:]] for line in lines if line.startswith(("Uid", "Gid"))}


@contextmanager
def in_background(target: Any) -> Iterator[dict[str, Any]]:
    """Run `target()` in a thread for the block's length; its return value lands in the dict's "result"."""
    out: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: out.update(result=target()), daemon=True)
    worker.start()
    try:
        yield out
    finally:
        worker.join(timeout=180)


def members_once(ready: str, timeout_s: float = 60.0) -> dict[int, dict[str, list[int]]]:
    """Once the command has written a file matching `ready` (a glob on the host), every process of this
    harness's command groups with its host ids: the launcher has handed over to the command by then."""
    import glob

    deadline = time.monotonic() + timeout_s
    patterns = ready.split("|")
    while not any(glob.glob(p) for p in patterns) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert any(glob.glob(p) for p in patterns), f"the command never wrote {ready}"
    return {pid: ids for pid in _members() if (ids := host_ids(pid)) is not None}


READY = "/run/anchor-fence/run-{pid}-*/run/ready|/tmp/anchor-run-*/run/ready"
"""Where a command's `touch {run_dir}/ready` lands on the host: its run dir's bounded filesystem (or the
plain directory that stands in for one where none can be mounted), as `|`-separated globs."""
