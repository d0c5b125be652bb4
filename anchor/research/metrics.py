"""Read the metric the harness trusts: from files the run wrote, parsed here, never from the agent's say-so.

`jsonl:<file>` takes the last row of run_dir/<file>; `json:<file>` one JSON object. If the agent
also writes claims of its own (run_dir/claims.json), they are recorded beside the measured value and
flagged when they differ; they never become the record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from anchor.errors import BadInput
from anchor.manifest.attempt import canonical_decimal


def read_metric(run_dir: Path, source: str, name: str) -> str | None:
    """The canonical decimal of metric `name`, or None if the run did not produce a usable one."""
    kind, _, rel = source.partition(":")
    path = run_dir / rel
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
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
    if not path.is_file():
        return None
    try:
        claims = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {"unreadable": True}
    return claims if isinstance(claims, dict) else {"unreadable": True}
