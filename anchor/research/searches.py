"""The searches a data directory knows: the default work dir (<data dir>/research) and every other
`--workdir` a search ran in, recorded at its start, so that read-back (the API's attempt listings, the
explorer) covers every search of this installation and not only the default ledger.

A work dir that is gone is skipped, never an error: the record is a hint for read-back, not a trust
root (each ledger is verified before any of its rows is served).
"""

from __future__ import annotations

import fcntl
import json
from pathlib import Path
from typing import Any

from anchor.files import atomic_write, private_dir
from anchor.layout import DataDir

RECORD = "searches.json"


def default_workdir(data_dir: Path) -> Path:
    return DataDir(data_dir).research


def remember_search(data_dir: Path, workdir: Path) -> None:
    """Add `workdir` to the data dir's list of searches (idempotent, under a lock)."""
    record = default_workdir(data_dir) / RECORD
    private_dir(record.parent)
    with open(record.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        known = _read(record)
        path = str(workdir.resolve())
        if path not in known:
            atomic_write(record, json.dumps({"workdirs": [*known, path]}, indent=1).encode())


def known_searches(data_dir: Path) -> list[Path]:
    """The work dirs with a ledger: the default one first, then the recorded ones, each once."""
    found: list[Path] = []
    default = default_workdir(data_dir)
    for path in [default, *(Path(p) for p in _read(default / RECORD))]:
        if (path / "ledger.jsonl").is_file() and path.resolve() not in [f.resolve() for f in found]:
            found.append(path)
    return found


def known_ledgers(data_dir: Path, journal_url: str | None) -> list[Any]:
    """Every ledger read-back should cover: the file ledgers of the known work dirs and, with a
    PostgreSQL ANCHOR_JOURNAL_URL, each ledger in that database (its run dirs looked for in the known
    work dir of the same name, else the default one)."""
    from anchor.research.ledger import Ledger, PgLedger

    found: list[Any] = [Ledger(workdir / "ledger.jsonl") for workdir in known_searches(data_dir)]
    if journal_url and journal_url.startswith(("postgresql://", "postgres://")):
        recorded = {Path(p).name: Path(p) for p in _read(default_workdir(data_dir) / RECORD)}
        for name in PgLedger.names(journal_url):
            found.append(PgLedger(journal_url, recorded.get(name, default_workdir(data_dir)), name))
    return found


def _read(record: Path) -> list[str]:
    try:
        data = json.loads(record.read_text())
    except (OSError, ValueError):
        return []
    workdirs = data.get("workdirs") if isinstance(data, dict) else None
    return [p for p in workdirs if isinstance(p, str)] if isinstance(workdirs, list) else []
