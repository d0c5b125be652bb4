"""List the regular files under a root, refusing everything a hostile tree could use against us.

Refused, each with an `UnsafePath` naming the path: symbolic links (never followed, wherever they
point), devices, FIFOs and sockets, names that are not UTF-8, and directories that cannot be read.
Names are normalized to Unicode NFC; two names equal after normalization are refused by the caller.
"""

from __future__ import annotations

import os
import stat
import unicodedata
from pathlib import Path

from anchor.errors import BadInput, UnsafePath
from anchor.manifest.exclude import Rules


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
        raise BadInput(f"{base}: no such file or directory", detail={"path": str(base)}) from None
    except OSError as exc:
        raise UnsafePath(f"{base}: cannot be read ({exc.strerror})", detail={"path": str(base)}) from None
    if stat.S_ISLNK(mode):
        raise UnsafePath(f"{base}: the root is a symbolic link; links are refused", detail={"path": str(base)})
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "dir"
    raise UnsafePath(f"{base}: {_kind(mode)} is not a regular file or directory", detail={"path": str(base)})


def walk(base: Path, rules: Rules | None = None, excluded: list[str] | None = None) -> list[tuple[str, str, int]]:
    """(relative NFC path, filesystem path, size seen) of every regular file below directory `base`.

    Paths the `rules` exclude are skipped (an excluded directory is not even entered, so whatever is
    inside it, sockets included, is never looked at); their names are appended to `excluded`."""
    found: list[tuple[str, str, int]] = []
    stack: list[tuple[str, str]] = [("", os.fspath(base))]
    while stack:
        prefix, directory = stack.pop()
        try:
            with os.scandir(os.fsencode(directory)) as it:
                children = list(it)
        except OSError as exc:
            shown = prefix.rstrip("/") or directory
            raise UnsafePath(f"{shown}: directory cannot be read ({exc.strerror})", detail={"path": shown}) from None
        for child in children:
            shown = prefix + child.name.decode("utf-8", "backslashreplace")
            rel = prefix + component(child.name, shown)
            st = child.stat(follow_symlinks=False)
            mode = st.st_mode
            if rules is not None and rules.excludes(rel, stat.S_ISDIR(mode)):
                if excluded is not None:
                    excluded.append(rel + "/" if stat.S_ISDIR(mode) else rel)
                continue
            if stat.S_ISREG(mode):
                found.append((rel, os.fsdecode(child.path), st.st_size))
            elif stat.S_ISDIR(mode):
                stack.append((rel + "/", os.fsdecode(child.path)))
            elif stat.S_ISLNK(mode):
                raise UnsafePath(f"{rel}: symbolic links are refused (never followed)", detail={"path": rel})
            else:
                raise UnsafePath(f"{rel}: {_kind(mode)} is not a regular file", detail={"path": rel})
    return found


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device file"
    return "a special file"
