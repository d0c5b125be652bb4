"""What differs between a run as anchored and the run as read now, named one change a line.

Why named, not "digest mismatch": a reviewer told only that a run's digest changed cannot tell a
re-logged metric (someone reported a better number after the fact) from an edited model file or a
retouched param. Each line names the thing, the anchored value and the value now. Pure data: the two
identities (anchor.manifest.mlflow_run) and, for the artifacts, the two file listings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any


def _pairs(items: Sequence[dict[str, str]]) -> dict[str, str]:
    return {item["key"]: item["value"] for item in items}


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _quoted(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


def _keyed(kind: str, anchored: dict[str, str], now: dict[str, str]) -> list[str]:
    lines = []
    for key in sorted(anchored.keys() | now.keys()):
        if key not in now:
            lines.append(f"{kind} {key}: removed (was {_quoted(anchored[key])})")
        elif key not in anchored:
            lines.append(f"{kind} {key}: added ({_quoted(now[key])})")
        elif anchored[key] != now[key]:
            lines.append(f"{kind} {key}: changed from {_quoted(anchored[key])} to {_quoted(now[key])}")
    return lines


def _metrics(anchored: Sequence[dict[str, Any]], now: Sequence[dict[str, Any]]) -> list[str]:
    """A value logged after the stamp (a step logged again, or a new step), or one gone from the history."""

    def entry(item: dict[str, Any]) -> tuple[str, int, int, str]:
        return (item["key"], item["step"], item["timestamp"], item["value"])

    before, after = Counter(map(entry, anchored)), Counter(map(entry, now))
    at_step: dict[tuple[str, int], list[str]] = {}
    for key, step, _, value in before:
        at_step.setdefault((key, step), []).append(value)
    lines = []
    for key, step, timestamp, value in sorted(after - before):
        was = at_step.get((key, step))
        again = f"logged again at step {step}" if was else f"logged at step {step}, after the stamp"
        shown = f" (anchored: {', '.join(was)})" if was else ""
        lines.append(f"metric {key}: {again}: {value} at {_when(timestamp)}{shown}")
    for key, step, timestamp, value in sorted(before - after):
        lines.append(f"metric {key}: the value {value} at step {step} ({_when(timestamp)}) is gone from its history")
    return lines


def _artifacts(anchored: Sequence[dict[str, Any]], now: Sequence[dict[str, Any]]) -> list[str]:
    old = {item["path"]: item for item in anchored}
    new = {item["path"]: item for item in now}
    lines = []
    for path in sorted(old.keys() | new.keys()):
        if path not in new:
            lines.append(f"artifact {path}: removed ({old[path]['size']:,} bytes)")
        elif path not in old:
            lines.append(f"artifact {path}: added ({new[path]['size']:,} bytes)")
        elif old[path]["blake3"] != new[path]["blake3"]:
            lines.append(f"artifact {path}: edited ({old[path]['size']:,} -> {new[path]['size']:,} bytes,"
                         f" blake3 {old[path]['blake3'][:16]}… -> {new[path]['blake3'][:16]}…)")  # fmt: skip
    return lines


def run_changes(
    anchored: dict[str, Any], anchored_files: Sequence[dict[str, Any]] | None, now: dict[str, Any],
    now_files: Sequence[dict[str, Any]],
) -> list[str]:  # fmt: skip
    """Every difference between two run identities, one line each, the run's identity first (a proof of
    another run), then artifacts, params, tags, metrics and times. `anchored_files`: the proof's listing
    (None when it holds none: then only the artifacts' root can be compared)."""
    if anchored.get("run_id") != now.get("run_id"):
        return [f"run_id: the proof is of run {anchored.get('run_id')}, not of run {now.get('run_id')}"]
    lines = []
    if anchored.get("experiment_id") != now.get("experiment_id"):
        lines.append(f"experiment_id: changed from {anchored.get('experiment_id')} to {now.get('experiment_id')}")
    if anchored["artifacts"] != now["artifacts"]:
        named = _artifacts(anchored_files, now_files) if anchored_files is not None else []
        lines += named or [f"artifacts: the tree's root changed ({anchored['artifacts']['files_root'][:16]}… ->"
                           f" {now['artifacts']['files_root'][:16]}…)"]  # fmt: skip
    lines += _keyed("param", _pairs(anchored.get("params", [])), _pairs(now.get("params", [])))
    lines += _keyed("tag", _pairs(anchored.get("tags", [])), _pairs(now.get("tags", [])))
    lines += _metrics(anchored.get("metrics", []), now.get("metrics", []))
    for field in ("source_commit", "status", "start_time", "end_time"):
        was, is_now = anchored.get(field), now.get(field)
        if was != is_now:
            shown = {k: _when(v) if isinstance(v, int) else v for k, v in (("was", was), ("now", is_now))}
            note = " (it was stamped while RUNNING)" if field in ("status", "end_time") and \
                anchored.get("status") == "RUNNING" else ""  # fmt: skip
            lines.append(f"{field}: changed from {shown['was'] or 'none'} to {shown['now'] or 'none'}{note}")
    return lines
