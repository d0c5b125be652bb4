"""One walk over a tree a command wrote, in a loop rather than a recursion: os.walk of this Python is
recursive, and a tree 1,200 directories deep made it raise RecursionError inside the harness."""

from __future__ import annotations

import os
from collections.abc import Iterator


def walk(top: str | os.PathLike[str]) -> Iterator[tuple[str, list[str], list[str]]]:
    """(directory, subdirectory names, other names) for `top` and every directory below it, top-down,
    links never followed (a link is among the other names)."""
    stack = [os.fspath(top)]
    while stack:
        here = stack.pop()
        dirs: list[str] = []
        others: list[str] = []
        try:
            with os.scandir(here) as entries:
                for entry in entries:
                    (dirs if entry.is_dir(follow_symlinks=False) else others).append(entry.name)
        except OSError:
            continue
        yield here, dirs, others
        stack += [os.path.join(here, name) for name in reversed(dirs)]


def bytes_under(path: str | os.PathLike[str]) -> int:
    """The sizes of every file and link under `path`, added up (links and special files by their own
    size): what a copy of it would write, and the watch where no bound can be mounted."""
    total = 0
    for root, _, others in walk(path):
        for name in others:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total
