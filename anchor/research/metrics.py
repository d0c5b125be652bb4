"""Read the metric the harness trusts: from files the run wrote, parsed here, never from the agent's say-so.

`jsonl:<file>` takes the last row of run_dir/<file>; `json:<file>` one JSON object. If the agent
also writes claims of its own (run_dir/claims.json), they are recorded beside the measured value and
flagged when they differ; they never become the record.

Both files are written by the code under measurement, so they are opened as hostile input: a symbolic
link (to the keystore, to /dev/zero), a FIFO (which would block the harness forever) or a file past
MAX_METRIC_FILE is no metric at all, never followed, waited on or read into memory.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from anchor.errors import BadInput
from anchor.manifest.attempt import canonical_decimal


def read_metric(run_dir: Path, source: str, name: str) -> str | None:
    """The canonical decimal of metric `name`, or None if the run did not produce a usable one."""
    kind, _, rel = source.partition(":")
    text = read_run_file(run_dir, rel)
    if text is None:
        return None
    try:
        if kind == "jsonl":
            rows = [line for line in text.splitlines() if line.strip()]
            row = json.loads(rows[-1]) if rows else None
        else:
            row = json.loads(text)
    except ValueError:
        return None
    if not isinstance(row, dict) or name not in row:
        return None
    try:
        return canonical_decimal(row[name], "metric")
    except BadInput:
        return None


def read_claims(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / "claims.json"
    if not os.path.lexists(path):
        return None
    text = read_run_file(run_dir, "claims.json")
    try:
        claims = None if text is None else json.loads(text)
    except ValueError:
        claims = None
    if claims is None:
        return {"unreadable": True}
    return claims if isinstance(claims, dict) else {"unreadable": True}


MAX_METRIC_FILE = 64 * 1024 * 1024
"""A metrics file is rows of numbers; anything larger is not one (and is not read into memory)."""


def read_run_file(run_dir: Path, rel: str) -> str | None:
    """The text of a regular file the run wrote at run_dir/rel, or None: never through a symbolic link
    (the file or a directory of `rel`), never a FIFO or device, never past MAX_METRIC_FILE, always UTF-8."""
    path = run_dir / rel
    try:
        inner = [run_dir.joinpath(*Path(rel).parts[:i]) for i in range(1, len(Path(rel).parts))]
        if any(p.is_symlink() for p in inner):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_METRIC_FILE:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_METRIC_FILE + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_METRIC_FILE:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
