"""The editable files as a sandboxed command sees them: the harness's copies, read back as hostile data.

Why: a proposer that could write the repository's editable folder made a nested git repository there
whose own `.git/config` named a `filter.x.clean` program; the harness committed it as a gitlink, and
its next `git status` recursed into it and ran that program on the host, as root. So no sandboxed
command writes the user's repository. It writes copies (in its bounded filesystem: anchor.fence.quota),
and the harness reads them back entry by entry, never following a link: a nested `.git`, a
`.gitmodules`, a symbolic link, a FIFO, a socket or a device that was not already in the repository is
refused, named, and never reaches the repository or git. Only a proposer's copies are written back
(regular files, by content); an attempt's are discarded once inspected: it measures the committed tree.

Unconfined (`--no-sandbox`) commands write the repository itself; `unsafe_entries` is then asked of
the repository before the harness's git runs again.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from anchor.fence.identity import Identity, give

STEERING_NAMES = (".git", ".gitmodules")
"""Names git reads as instructions wherever they are: a repository of its own (a gitlink when added,
with a config that may name any program), or submodules to fetch."""


def _kind(mode: int) -> str | None:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return None


def unsafe_entries(root: Path, rels: tuple[str, ...], shown_as: dict[str, Path] | None = None) -> dict[str, str]:
    """{path relative to the repository: what it is} for every entry under `root`/rel (or under
    `shown_as[rel]`, its copy) that git could be steered by or that is not a plain file or directory.
    Nothing is followed; a nested `.git` is not descended into."""
    found: dict[str, str] = {}
    for rel in rels:
        top = (shown_as or {}).get(rel, root / rel)
        stack = [(top, rel)]
        while stack:
            path, name = stack.pop()
            try:
                mode = os.lstat(path).st_mode
            except OSError:
                continue
            leaf = Path(name).name
            if leaf in STEERING_NAMES:
                found[name] = "a nested repository (.git)" if leaf == ".git" else "submodules (.gitmodules)"
                continue
            kind = _kind(mode)
            if kind is not None:
                found[name] = kind
            elif stat.S_ISDIR(mode):
                with contextlib.suppress(OSError):
                    stack += [(Path(e.path), f"{name}/{e.name}") for e in os.scandir(path)]
    return found


@dataclass(slots=True)
class Workspace:
    """Copies of the editable files in `root`, the command's to write (`give`n to its identity)."""

    repo: Path
    root: Path
    copies: dict[str, Path] = field(default_factory=dict)
    """editable path -> its copy (only editable paths that exist and lie outside .git)."""
    before: dict[str, str] = field(default_factory=dict)
    """The unsafe entries the repository already held (a link it tracks): not the command's doing."""

    @classmethod
    def make(cls, repo: Path, editable: tuple[str, ...], root: Path, identity: Identity | None) -> Workspace:
        made = cls(repo, root)
        for index, rel in enumerate(editable):
            source = repo / rel
            if not os.path.lexists(source) or source == repo / ".git" or (repo / ".git") in source.parents:
                continue
            copy = root / str(index)
            _copy_in(source, copy, identity)
            made.copies[rel] = copy
        made.before = unsafe_entries(repo, tuple(made.copies))
        return made

    def refused(self) -> dict[str, str]:
        """What the command left in its copies that the repository must never hold: {path: what}."""
        now = unsafe_entries(self.repo, tuple(self.copies), self.copies)
        return {path: kind for path, kind in now.items() if self.before.get(path) != kind}

    def write_back(self) -> list[str]:
        """Make the repository's editable paths hold what the copies hold, by content, regular files
        only (`refused()` must be empty first). Returns the paths written or removed."""
        changed: list[str] = []
        for rel, copy in self.copies.items():
            changed += _mirror(copy, self.repo / rel, rel)
        return changed


def _copy_in(source: Path, copy: Path, identity: Identity | None) -> None:
    """Copy a regular file or a directory's regular files and directories (links and special files of
    the repository are not shown to the command's copy), each the identity's."""
    mode = os.lstat(source).st_mode
    if stat.S_ISREG(mode):
        shutil.copyfile(source, copy, follow_symlinks=False)
        os.chmod(copy, 0o644 | (mode & 0o111))
        give(copy, identity)
    elif stat.S_ISDIR(mode):
        copy.mkdir(mode=0o755)
        give(copy, identity)
        for entry in os.scandir(source):
            if entry.name not in STEERING_NAMES and (entry.is_dir(follow_symlinks=False) or
                                                     entry.is_file(follow_symlinks=False)):  # fmt: skip
                _copy_in(Path(entry.path), copy / entry.name, identity)


def _mirror(copy: Path, target: Path, rel: str) -> list[str]:
    """Write `copy` (a file or a directory tree of regular files, already inspected) over `target`."""
    changed: list[str] = []
    mode = os.lstat(copy).st_mode
    if stat.S_ISREG(mode):
        data = _read_regular(copy)
        if os.path.lexists(target) and (target.is_symlink() or not target.is_file()):
            return changed  # the repository's own link or special file at an editable path: left alone
        if not target.exists() or target.read_bytes() != data:
            tmp = target.with_name(f".{target.name}.anchor-write")
            tmp.write_bytes(data)
            if target.exists():
                os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
            tmp.replace(target)
            changed.append(rel)
        return changed
    if not stat.S_ISDIR(mode):
        return changed
    if not target.is_dir() or target.is_symlink():
        if os.path.lexists(target) or not _holds_a_file(copy):  # git keeps no empty directory: neither do we
            return changed
        target.mkdir(parents=True)
    kept = {entry.name for entry in os.scandir(copy)}
    for name in sorted(kept):
        changed += _mirror(copy / name, target / name, f"{rel}/{name}")
    for entry in list(os.scandir(target)):
        if entry.name in kept or entry.name in STEERING_NAMES or entry.is_symlink():
            continue
        if entry.is_file(follow_symlinks=False):
            os.unlink(entry.path)
            changed.append(f"{rel}/{entry.name}")
        elif entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
            changed.append(f"{rel}/{entry.name}")
    return changed


def _holds_a_file(path: Path) -> bool:
    return any(files for _, _, files in os.walk(path))


def _read_regular(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()
