"""The research ledger: append-only JSON lines, each entry committing to the digest of the one before.

An edited, deleted or reordered entry breaks the chain at that entry, and `verify` names it. Appends
take an exclusive lock on the file (several researchers share one ledger) and are fsynced before the
attempt counts as scored, so the ledger survives restarts and crashes.

Two kinds of row share the chain: a `started` trace (`"event": "started"`), written before an
attempt's command runs, and the attempt's outcome row, written after it is measured. An attempt whose
harness died in between has a trace and no outcome; the next start of that researcher's search closes
it as `interrupted`, so every attempt that ever ran is on record, the killed ones included.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from anchor.errors import Tampered
from anchor.manifest.canonical import canonical_json
from anchor.manifest.domain import Domain, tagged

GENESIS = "0" * 64


def entry_digest(fields: dict[str, Any]) -> str:
    body = {k: v for k, v in fields.items() if k != "digest"}
    return tagged(Domain.LEDGER_ENTRY, canonical_json(body)).hex()


STARTED = "started"
"""The `event` of a trace row: an attempt's command is about to run (commit, parent, researcher, time)."""


def is_attempt(row: dict[str, Any]) -> bool:
    """An outcome row (an attempt's record); trace rows carry an `event`."""
    return "event" not in row


class Ledger:
    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)

    @contextmanager
    def _locked(self) -> Iterator[Any]:
        with open(self.path, "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield handle
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def rows(self) -> list[dict[str, Any]]:
        """Every row of the chain, in order (row i has seq i): attempts and their `started` traces."""
        lines = self.path.read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def entries(self) -> list[dict[str, Any]]:
        """The attempts: one outcome row per measured (or interrupted) attempt, without the `started`
        rows written before each command ran (`rows()` has both)."""
        return [row for row in self.rows() if is_attempt(row)]

    def append(self, fields: dict[str, Any]) -> dict[str, Any]:
        """Chain `fields` onto the ledger under the lock; returns the entry with seq, prev and digest."""
        with self._locked() as handle:
            handle.seek(0)
            lines = [line for line in handle.read().decode("utf-8").splitlines() if line.strip()]
            last = json.loads(lines[-1]) if lines else None
            entry = {
                **fields,
                "seq": 0 if last is None else last["seq"] + 1,
                "prev": GENESIS if last is None else last["digest"],
            }
            entry["digest"] = entry_digest(entry)
            handle.seek(0, os.SEEK_END)
            handle.write(canonical_json(entry) + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        return entry

    def verify(self) -> dict[str, Any]:
        """Check the whole chain; raises `Tampered` naming the first bad entry (its line number)."""
        prev, count = GENESIS, 0
        for number, line in enumerate(self.path.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                ok_shape = isinstance(entry, dict) and {"seq", "prev", "digest"} <= entry.keys()
            except ValueError:
                ok_shape = False
            problem = None
            if not ok_shape:
                problem = "not a ledger entry"
            elif entry_digest(entry) != entry["digest"]:
                problem = "its content does not match its digest (edited)"
            elif entry["seq"] != count:
                problem = f"seq {entry['seq']} where {count} was expected (deleted or reordered)"
            elif entry["prev"] != prev:
                problem = "it does not chain to the entry before (deleted or reordered)"
            if problem is not None:
                raise Tampered(
                    f"{self.path}: entry at line {number} is bad: {problem}",
                    detail={"line": number, "seq": count, "problem": problem},
                )
            prev, count = entry["digest"], count + 1
        return {"entries": count, "head": prev}

    def head(self) -> tuple[str, int]:
        rows = self.rows()
        return (rows[-1]["digest"], len(rows)) if rows else (GENESIS, 0)
