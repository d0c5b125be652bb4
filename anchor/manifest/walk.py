"""List the regular files under a root, refusing everything a hostile tree could use against us.

Refused, each with an `UnsafePath` naming the path: devices, FIFOs and sockets, names that are not
UTF-8, and directories that cannot be read. Names are normalized to Unicode NFC; two names equal
after normalization are refused by the caller.

Symbolic links follow a policy (docs/manifest.md section 3), refused by default because a link can
point anywhere (`/etc`, another user's home, back up the tree):
- `refuse`: the first link met ends the walk with its path named;
- `record`: a link is recorded (its path and its target text) and never followed;
- `follow-inside`: a link is recorded and followed when what it resolves to is a regular file or a
  directory inside the root; a link that leaves the root, dangles, or loops is refused.
Links met under `record` or `follow-inside` are appended to `links` as (path, target).
"""

from __future__ import annotations

import errno
import os
import stat
import unicodedata
from collections.abc import Callable
from pathlib import Path

from anchor.errors import AnchorError, BadInput, FileChanged, UnsafePath, did_you_mean_path
from anchor.manifest.exclude import Rules

SYMLINK_POLICIES = ("refuse", "record", "follow-inside")
MAX_LINK_TARGET = 4096
LISTED_BATCH = 256
"""Files listed before the walk hands them on (`walk(listed=...)`)."""


def component(raw: bytes, shown: str) -> str:
    """One file name as NFC text; raises `UnsafePath` if it is not UTF-8."""
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UnsafePath(f"{shown}: file name is not valid UTF-8", detail={"path": shown}) from None
    return unicodedata.normalize("NFC", name)


def root_kind(base: Path) -> str:
    """'file' or 'dir' for a root we may hash; raises for a missing, linked or special root."""
    try:
        mode = os.lstat(base).st_mode
    except FileNotFoundError:
        raise BadInput(
            f"{base}: no such file or directory{did_you_mean_path(base)}", detail={"path": str(base)}
        ) from None
    except OSError as exc:
        raise UnsafePath(f"{base}: cannot be read ({exc.strerror})", detail={"path": str(base)}) from None
    if stat.S_ISLNK(mode):
        raise UnsafePath(f"{base}: the root is a symbolic link; links are refused", detail={"path": str(base)})
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    raise UnsafePath(f"{base}: {_kind(mode)} is not a regular file or directory", detail={"path": str(base)})


Frame = tuple[str, str, tuple[int, int], frozenset[tuple[int, int]]]
"""A directory still to list: (relative prefix, its path, its (device, inode) as its parent listed it, the
(device, inode) of every directory from the root down to it: a followed link to one of those would
walk forever)."""
Listed = list[tuple[str, str, int, tuple[int, int]]]


def walk(
    base: Path,
    rules: Rules | None = None,
    excluded: list[str] | None = None,
    symlinks: str = "refuse",
    links: list[tuple[str, str]] | None = None,
    listed: Callable[[Listed], None] | None = None,
    hand_off: Callable[[list[Frame], str], bool] | None = None,
) -> Listed:
    """(relative NFC path, filesystem path, size seen, (device, inode)) of every regular file below
    directory `base`. The identity lets the hasher refuse a file that is not the one listed here (a
    directory above it swapped for a link since: anchor.manifest.hashing).

    Each directory is opened O_DIRECTORY|O_NOFOLLOW and must be the one its parent's listing showed
    (device and inode): it is then listed, and its entries examined, through that descriptor
    (`fstatat`, `readlinkat`), never through a path that could have changed. A directory swapped for
    a link to /etc between being listed and being entered is `FileChanged`, never /etc's files.

    Paths the `rules` exclude are skipped (an excluded directory is not even entered, so whatever is
    inside it, sockets included, is never looked at); their names are appended to `excluded`.
    Links are handled by `symlinks` (module docstring) and appended to `links`. `listed`, if given, is
    handed the files found so far every `LISTED_BATCH` of them and once at the end (what the hasher
    starts on while the walk goes on: anchor.manifest.hashing.Streamed). `hand_off(frames, real root)`,
    if given, is offered the directories still to list after each one; when it takes them (True), this
    walk ends there and whoever took them lists them with `walk_frames`, under the same checks."""
    if symlinks not in SYMLINK_POLICIES:
        raise BadInput(
            f"symlinks must be one of {', '.join(SYMLINK_POLICIES)}, not {symlinks!r}", detail={"field": "symlinks"}
        )
    found: Listed = []
    top = os.lstat(base)
    real_root = os.path.realpath(base)
    stack: list[Frame] = [("", os.fspath(base), (top.st_dev, top.st_ino), frozenset({(top.st_dev, top.st_ino)}))]
    walk_frames(stack, real_root, rules, excluded, symlinks, links, found, listed, hand_off)
    return found


def walk_frames(
    stack: list[Frame],
    real_root: str,
    rules: Rules | None,
    excluded: list[str] | None,
    symlinks: str,
    links: list[tuple[str, str]] | None,
    found: Listed,
    listed: Callable[[Listed], None] | None = None,
    hand_off: Callable[[list[Frame], str], bool] | None = None,
    each_file: Callable[[int, str, str], None] | None = None,
) -> None:
    """List the directories of `stack` and all below them into `found` (`walk`'s loop).

    `each_file(directory descriptor, name, relative path)`, if given, is handed each entry the directory
    itself says is a regular file (its d_type: no stat) instead of `found`, while the directory's
    verified descriptor is open: whoever hashes it opens it relative to that descriptor, O_NOFOLLOW, and
    checks that what opened is a regular file. No path is resolved again, so no (device, inode) needs
    comparing, and the stat that `found` needs for them is saved (a sixth of the syscalls per file)."""
    handed = 0
    while stack:
        prefix, directory, seen_as, above = stack.pop()
        fd = _open_listed(directory, prefix.rstrip("/") or directory, seen_as)
        try:
            _entries(fd, prefix, directory, real_root, above, rules, excluded, symlinks, links, found, stack, each_file)
        finally:
            os.close(fd)
        if listed is not None and len(found) - handed >= LISTED_BATCH:
            listed(found[handed:])
            handed = len(found)
        if hand_off is not None and stack and hand_off(stack, real_root):
            stack.clear()
    if listed is not None and len(found) > handed:
        listed(found[handed:])


def _open_listed(directory: str, shown: str, listed: tuple[int, int]) -> int:
    """A descriptor of `directory`, which must still be the directory listed as `listed`."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise FileChanged(
                f"{shown}: changed while the tree was walked (now a link or not a directory);"
                " nothing from where it leads was listed",
                detail={"path": shown},
            ) from None
        if exc.errno == errno.ENOENT:
            raise _changed(shown, exc) from None
        raise UnsafePath(f"{shown}: directory cannot be read ({exc.strerror})", detail={"path": shown}) from None
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != listed:
        os.close(fd)
        raise FileChanged(
            f"{shown}: not the directory the walk listed (it, or one above it, was replaced since);"
            " nothing from where it leads was listed",
            detail={"path": shown},
        )
    return fd


def _entries(
    fd: int,
    prefix: str,
    directory: str,
    real_root: str,
    above: frozenset[tuple[int, int]],
    rules: Rules | None,
    excluded: list[str] | None,
    symlinks: str,
    links: list[tuple[str, str]] | None,
    found: list[tuple[str, str, int, tuple[int, int]]],
    stack: list[Frame],
    each_file: Callable[[int, str, str], None] | None = None,
) -> None:
    """List one open directory through its descriptor: files into `found` (or to `each_file`, `walk_frames`),
    directories onto `stack`."""
    try:
        with os.scandir(fd) as it:
            children = list(it)
    except OSError as exc:
        shown = prefix.rstrip("/") or directory
        raise UnsafePath(f"{shown}: directory cannot be read ({exc.strerror})", detail={"path": shown}) from None
    under = directory if directory.endswith("/") else directory + "/"
    for child in children:
        name = child.name
        if name.isascii():  # already UTF-8 and NFC (an undecodable byte is a surrogate, never ASCII)
            rel = shown = prefix + name
        else:
            raw = os.fsencode(name)
            shown = prefix + raw.decode("utf-8", "backslashreplace")
            rel = prefix + component(raw, shown)
        if each_file is not None and child.is_file(follow_symlinks=False):  # d_type says so (or an lstat did)
            if rules is not None and rules.excludes(rel, False):
                if excluded is not None:
                    excluded.append(rel)
                continue
            each_file(fd, name, rel)
            continue
        try:
            st = child.stat(follow_symlinks=False)  # fstatat, relative to the verified descriptor
        except OSError as exc:
            raise _changed(rel, exc) from None
        mode = st.st_mode
        if rules is not None and rules.excludes(rel, stat.S_ISDIR(mode)):
            if excluded is not None:
                excluded.append(rel + "/" if stat.S_ISDIR(mode) else rel)
            continue
        path = under + name
        if stat.S_ISLNK(mode):
            if symlinks == "refuse":
                raise UnsafePath(
                    f"{rel}: is a symbolic link; links are refused by default"
                    " (hint: --symlinks=record records it, --symlinks=follow-inside follows it within the root)",
                    detail={"path": rel},
                )
            if links is not None:
                links.append((rel, _link_target(child.name, rel, fd)))
            if symlinks == "record":
                continue
            path, st = _inside(path, rel, real_root)
            mode = st.st_mode
            if stat.S_ISDIR(mode) and (st.st_dev, st.st_ino) in above:
                raise UnsafePath(f"{rel}: the link leads back to a directory above it (a loop)", detail={"path": rel})
        if stat.S_ISREG(mode):
            found.append((rel, path, st.st_size, (st.st_dev, st.st_ino)))
        elif stat.S_ISDIR(mode):
            stack.append((rel + "/", path, (st.st_dev, st.st_ino), above | {(st.st_dev, st.st_ino)}))
        else:
            raise UnsafePath(f"{rel}: {_kind(mode)} is not a regular file", detail={"path": rel})


def _changed(rel: str, exc: OSError) -> AnchorError:
    """An entry the listing showed that is gone (renamed, removed) when it is looked at: the tree is
    changing under the walk, which is `FileChanged`, not an internal error."""
    if exc.errno == errno.ENOENT:
        return FileChanged(
            f"{rel}: changed while the tree was walked (gone since its directory was listed); run again once"
            " nothing writes to it",
            detail={"path": rel},
        )
    return UnsafePath(f"{rel}: cannot be read ({exc.strerror})", detail={"path": rel})


def _link_target(name: str, rel: str, dir_fd: int) -> str:
    """The link's own text (what `readlink` prints), which is what `record` binds."""
    try:
        raw = os.fsencode(os.readlink(name, dir_fd=dir_fd))
    except OSError as exc:
        raise UnsafePath(f"{rel}: link cannot be read ({exc.strerror})", detail={"path": rel}) from None
    try:
        target = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise UnsafePath(f"{rel}: link target is not valid UTF-8", detail={"path": rel}) from None
    if len(raw) > MAX_LINK_TARGET:
        raise UnsafePath(f"{rel}: link target longer than {MAX_LINK_TARGET} bytes", detail={"path": rel})
    return target


def _inside(path: str, rel: str, real_root: str) -> tuple[str, os.stat_result]:
    """Where a link followed under `follow-inside` leads, refused unless it stays within the root.

    The resolved path has no link left in it, so hashing opens it with O_NOFOLLOW as any other file."""
    resolved = os.path.realpath(path)
    if resolved != real_root and not resolved.startswith(real_root.rstrip("/") + "/"):
        raise UnsafePath(f"{rel}: the link leads outside the root ({resolved}); not followed", detail={"path": rel})
    try:
        return resolved, os.stat(resolved, follow_symlinks=False)
    except OSError:
        raise UnsafePath(f"{rel}: the link leads nowhere (dangling)", detail={"path": rel}) from None


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    return "a special file"
