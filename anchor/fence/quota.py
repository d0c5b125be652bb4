"""Where a sandboxed command writes: a filesystem of its own whose bytes and inodes the kernel bounds.

Why: a quota counted by walking the run dir for regular files' sizes missed everything that is not
one. Under a 1 MiB bound an attempt left 80 MiB on the host disk as 20,000 empty directories and wrote
300 MiB into a file it had unlinked, and ended `exit 0`. A tmpfs mounted with `size=` and `nr_inodes=`
counts all of it (directories, unlinked and sparse files, links): a write past the bound fails with
ENOSPC, whatever the file. Its pages are RAM, charged to the command's memory cgroup like the rest.

Everything the command may write lives there: its run dir (shown at the run dir's path) and its copies
of the editable files (anchor.fence.workspace). When it ends, the harness copies the run dir's part to
the real run dir, treating every entry as hostile (no link followed, nothing but files, directories,
links and a FIFO standing in for anything else, which the evidence seal then names), and unmounts it.

Mounting needs root. A harness that is not root gets a plain directory and the old watch (bytes of
regular files, twice a second), and says so: `enforced` is False.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anchor.fence.identity import Identity, give, give_tree
from anchor.fence.walk import bytes_under

_COUNTER = itertools.count()
INODE_BYTES = 4096
"""One inode for every 4 KiB of the bound (and at least 1,024): directories and empty files cost an
inode each, so a flood of them meets the bound as bytes do."""


def inodes_for(size: int) -> int:
    return max(1024, size // INODE_BYTES)


@dataclass(slots=True)
class BoundedDir:
    """One command's writable filesystem: `run` (shown at its run dir) and `edit` (the editable copies)."""

    path: Path
    size: int
    inodes: int
    enforced: bool
    """Whether the kernel bounds it (a tmpfs of its own) or only the harness's watch does."""

    @property
    def run(self) -> Path:
        return self.path / "run"

    @property
    def edit(self) -> Path:
        return self.path / "edit"

    @classmethod
    def make(cls, size: int, identity: Identity | None) -> BoundedDir:
        """A tmpfs of `size` bytes and `inodes_for(size)` inodes, the identity's, under a root harness;
        a private temporary directory otherwise."""
        inodes = inodes_for(size)
        if os.geteuid() == 0 and identity is not None:
            from anchor.fence.sandbox import STAGE_ROOT, stage_root

            stage_root()
            sweep()
            path = STAGE_ROOT / f"run-{os.getpid()}-{next(_COUNTER)}"
            path.mkdir(mode=0o700)
            options = f"size={size},nr_inodes={inodes},mode=0700,uid={identity.uid},gid={identity.gid}"
            if _mount_tmpfs(path, options):
                made = cls(path, size, inodes, True)
                made._dirs(identity)
                return made
            path.rmdir()  # no tmpfs here (a restricted container): the watch, said as such
        made = cls(Path(tempfile.mkdtemp(prefix="anchor-run-")), size, inodes, False)
        give(made.path, identity)
        made._dirs(identity)
        return made

    def _dirs(self, identity: Identity | None) -> None:
        for path in (self.run, self.run / "home", self.edit):
            path.mkdir(exist_ok=True)
            give(path, identity)

    def full(self) -> str | None:
        """ "inodes" or "disk" once the kernel's bound is reached (a write there now fails), else None."""
        if not self.enforced:
            return "disk" if bytes_under(self.path) > self.size else None
        try:
            found = os.statvfs(self.path)
        except OSError:
            return None
        if found.f_favail == 0:
            return "inodes"
        if found.f_bavail * found.f_frsize < 64 * 1024:  # under 16 pages left: a write past it already failed
            return "disk"
        return None

    def close(self) -> None:
        """Unmount (lazily: nothing of the command is left to hold it) and remove."""
        if self.enforced:
            _unmount(self.path)
            with contextlib.suppress(OSError):
                self.path.rmdir()
        else:
            shutil.rmtree(self.path, ignore_errors=True)


def sweep() -> None:
    """Unmount the bounded dirs a harness that was killed (SIGKILL, a lost machine) left mounted: ours by
    name, their harness's process gone."""
    from anchor.fence.sandbox import STAGE_ROOT

    with contextlib.suppress(OSError):
        for stale in STAGE_ROOT.glob("run-*-*"):
            owner = stale.name.split("-")[1]
            if (
                (owner.isascii() and owner.isdigit())
                and int(owner) != os.getpid()
                and not Path(f"/proc/{owner}").exists()
            ):
                _unmount(stale)
                with contextlib.suppress(OSError):
                    stale.rmdir()


_MS_NOSUID, _MS_NODEV, _MNT_DETACH = 2, 4, 2


def _libc() -> object:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _mount_tmpfs(path: Path, options: str) -> bool:
    """mount(2) of a tmpfs at `path`, nosuid and nodev: the system call itself, not a `mount` process
    per command. False where it is refused (no CAP_SYS_ADMIN here)."""
    libc: Any = _libc()
    return bool(libc.mount(b"anchor-run", os.fsencode(path), b"tmpfs", _MS_NOSUID | _MS_NODEV, options.encode()) == 0)


def _unmount(path: Path) -> None:
    """umount2(2) with MNT_DETACH: nothing of the command is left to hold it."""
    libc: Any = _libc()
    libc.umount2(os.fsencode(path), _MNT_DETACH)


def copy_in(run_dir: Path, space: BoundedDir, identity: Identity | None) -> None:
    """What the run dir already holds (a proposer's HOME from its last proposal, a harness's note) into
    the command's bounded run dir, the identity's: the command sees its run dir as it was left."""
    if any(run_dir.iterdir()):
        copy_out(run_dir, space.run, space.size)
        give_tree(space.run, identity)


def replace_run_dir(space: BoundedDir, run_dir: Path, keep: tuple[str, ...]) -> bool:
    """Make `run_dir` hold what the command left in its bounded run dir (copied as hostile data, at most
    the bound's bytes: False when something was left behind for it), but for `keep`, the harness's own
    files (its process record, the attempt's diff)."""
    for entry in list(os.scandir(run_dir)):
        if entry.name in keep:
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)
    return copy_out(space.run, run_dir, space.size)


def copy_out(source: Path, target: Path, budget: int | None = None) -> bool:
    """Copy what a command left in `source` into `target` (which the harness owns), as hostile data:
    nothing followed, nothing of the harness's replaced (an entry already in `target` wins), regular
    files copied by content, links made again with the same target (the evidence records them), and
    anything else (a FIFO, a socket) left as a FIFO of the same name, for the evidence seal to remove and
    name. Directories are made only for what they hold (a flood of empty ones cost the bounded
    filesystem inodes, and would cost the host's disk blocks); the walk is a loop, not a recursion, so
    no depth overflows it. At most `budget` bytes of files are copied, counted by their size (a sparse
    file or a thousand hard links to one file cost the bound little and the host's disk a lot): False
    when a file was left behind for it."""
    left = budget
    whole = True
    target.mkdir(parents=True, exist_ok=True)
    stack = [(source, target)]
    while stack:
        here_source, here_target = stack.pop()
        try:
            entries = list(os.scandir(here_source))
        except OSError:
            continue
        for entry in entries:
            here = here_target / entry.name
            try:
                found = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(found.st_mode):
                if not (os.path.lexists(here) and not (here.is_dir() and not here.is_symlink())):
                    stack.append((Path(entry.path), here))
                continue
            if os.path.lexists(here):
                continue
            if stat.S_ISREG(found.st_mode) and left is not None:
                if found.st_size > left:
                    whole = False
                    continue
                left -= found.st_size
            with contextlib.suppress(OSError):
                here_target.mkdir(parents=True, exist_ok=True)
                if stat.S_ISLNK(found.st_mode):
                    os.symlink(os.readlink(entry.path), here)
                elif stat.S_ISREG(found.st_mode):
                    _copy_file(entry.path, here, found.st_mode)
                else:
                    os.mkfifo(here, 0o600)
    return whole


def _copy_file(source: str, target: Path, mode: int) -> None:
    fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644 | (mode & 0o111))
        try:
            while chunk := os.read(fd, 1 << 20):
                os.write(out, chunk)
        finally:
            os.close(out)
    finally:
        os.close(fd)
