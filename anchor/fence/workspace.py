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
from anchor.fence.walk import bytes_under, walk

STEERING_NAMES = (".git", ".gitmodules", ".gitignore", ".gitattributes")
"""Names git reads as instructions wherever they are: a repository of its own (a gitlink when added,
with a config that may name any program), submodules to fetch, files to leave out of every commit (and
so out of every reset: a file measured that no commit holds), filters and drivers to apply. One the
repository already holds may stay as it is; a new or changed one is refused."""


MAX_DEPTH = 128
"""How deep the editable files may nest: far past any source tree, well short of what the harness's
own recursion (and a path's length) could take."""


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


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # a byte that is not UTF-8, kept by the file system encoding's surrogates
        return False
    return "\n" not in name and "\r" not in name


def unsafe_entries(root: Path, rels: tuple[str, ...], shown_as: dict[str, Path] | None = None) -> dict[str, str]:
    """{path relative to the repository: what it is} for every entry under `root`/rel (or under
    `shown_as[rel]`, its copy) that git could be steered by, that is not a plain file or directory, or
    whose name git and the ledger cannot carry (not UTF-8, a line break). A git instruction file's
    content is part of what it is, so that one left unchanged compares equal. Nothing is followed; a
    nested `.git` is not descended into."""
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
            if not _utf8(leaf):
                found[printable(name)] = "a name that is not one line of UTF-8"
                continue
            if leaf == ".git":
                found[name] = "a nested repository (.git)"
                continue
            kind = _kind(mode)
            if kind is not None:
                found[name] = kind
            elif leaf in STEERING_NAMES:
                found[name] = f"git's instructions ({leaf}) " + _digest(path)
            elif stat.S_ISDIR(mode) and name.count("/") >= MAX_DEPTH:
                found[name] = f"a tree deeper than {MAX_DEPTH} directories"
            elif stat.S_ISDIR(mode):
                with contextlib.suppress(OSError):
                    stack += [(Path(e.path), f"{name}/{e.name}") for e in os.scandir(path)]
    return found


def printable(name: str) -> str:
    """`name` as text the ledger can hold: bytes that are not UTF-8 as \\xNN, line breaks escaped."""
    raw = name.encode("utf-8", "surrogateescape")
    return raw.decode("utf-8", "backslashreplace").replace("\n", "\\n").replace("\r", "\\r")


def _digest(path: Path) -> str:
    import hashlib

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return "(unreadable)"
    with os.fdopen(fd, "rb") as handle:
        return "#" + hashlib.sha256(handle.read(1 << 20)).hexdigest()[:16]


def said(kind: str) -> str:
    """What an unsafe entry is, in words (without the content digest that tells two versions apart)."""
    return kind.split(" #", 1)[0]


@dataclass(slots=True)
class Workspace:
    """Copies of the editable files in `root`, the command's to write (`give`n to its identity)."""

    repo: Path
    root: Path
    copies: dict[str, Path] = field(default_factory=dict)
    """editable path -> its copy (only editable paths that exist and lie outside .git)."""
    before: dict[str, str] = field(default_factory=dict)
    """The unsafe entries the repository already held (a link it tracks): not the command's doing."""

    budget: int = 0
    """The most bytes the copies may hold, counted by file size (the bound of the command's filesystem)."""

    @classmethod
    def make(
        cls, repo: Path, editable: tuple[str, ...], root: Path, identity: Identity | None, budget: int
    ) -> Workspace:
        """Copy the editable paths into `root`. `BadInput` when they do not fit the command's bound."""
        from anchor.errors import BadInput

        made = cls(repo, root, budget=budget)
        for index, rel in enumerate(editable):
            source = repo / rel
            if not os.path.lexists(source) or source == repo / ".git" or (repo / ".git") in source.parents:
                continue
            copy = root / str(index)
            try:
                _copy_in(source, copy, identity)
            except OSError as exc:
                raise BadInput(
                    f"editable {rel!r}: cannot be copied for the command ({exc.strerror}): what is"
                    " editable must fit ANCHOR_ATTEMPT_RUN_DIR_BYTES beside the run dir",
                    detail={"field": "editable", "path": rel},
                ) from None
            made.copies[rel] = copy
        made.before = unsafe_entries(repo, tuple(made.copies))
        return made

    def refused(self) -> dict[str, str]:
        """What the command left in its copies that the repository must never hold: {path: what}, in
        words. Copies larger than the bound (sparse files) are refused whole."""
        now = unsafe_entries(self.repo, tuple(self.copies), self.copies)
        out = {path: said(kind) for path, kind in now.items() if self.before.get(path) != kind}
        size = sum(bytes_under(copy) for copy in self.copies.values())
        if self.budget and size > self.budget:
            out["(the editable files)"] = f"{size} bytes, past the bound of {self.budget}"
        return out

    def write_back(self) -> list[str]:
        """Make the repository's editable paths hold what the copies hold, by content, regular files
        only (`refused()` must be empty first). Returns the paths written or removed; `GuardError`
        naming the path when the repository will not take one (a name too long, a folder where a file
        was): the proposal is then rejected, and the loop's reset undoes what was written."""
        from anchor.errors import GuardError

        changed: list[str] = []
        for rel, copy in self.copies.items():
            try:
                changed += _mirror(copy, self.repo / rel, rel)
            except OSError as exc:
                raise GuardError(
                    f"the proposer's {rel} could not be written back ({exc.strerror}: {exc.filename})",
                    detail={"paths": [rel], "reason": "unsafe entry"},
                ) from None
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
            if entry.name not in STEERING_NAMES and (
                entry.is_dir(follow_symlinks=False) or entry.is_file(follow_symlinks=False)
            ):
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
            import tempfile

            fd, tmp = tempfile.mkstemp(prefix=".anchor-write-", dir=target.parent)
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode) if target.exists() else 0o644)
            os.replace(tmp, target)
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
        if name in STEERING_NAMES:
            continue  # the repository's own, unchanged (a changed one was refused): never written by us
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
    return any(files for _, _, files in walk(path))


def _read_regular(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()
