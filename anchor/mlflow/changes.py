"""What differs between a run as anchored and the run as read now, named one change a line.

Why named, not "digest mismatch": a reviewer told only that a run's digest changed cannot tell a
re-logged metric (someone reported a better number after the fact) from an edited model file or a
retouched param. Each line names the thing, the anchored value and the value now; each change also
says, in a few words, what the anchored side held (a re-stamp's verdict: "the earlier stamp held
val_acc 0.8125 at step 2"). Pure data: the two identities (anchor.manifest.mlflow_run) and, for the
artifacts, the two file listings.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from anchor.manifest.listed import ListedFile


class Change(NamedTuple):
    line: str
    """The change, as verify names it."""
    held: str
    """What the anchored side held of it, in a few words."""


def _pairs(items: Sequence[dict[str, str]]) -> dict[str, str]:
    return {item["key"]: item["value"] for item in items}


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _quoted(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


def _keyed(kind: str, anchored: dict[str, str], now: dict[str, str]) -> list[Change]:
    found = []
    for key in sorted(anchored.keys() | now.keys()):
        if key not in now:
            found.append(
                Change(
                    f"{kind} {key}: removed (was {_quoted(anchored[key])})", f"{kind} {key} {_quoted(anchored[key])}"
                )
            )
        elif key not in anchored:
            found.append(Change(f"{kind} {key}: added ({_quoted(now[key])})", f"no {kind} {key}"))
        elif anchored[key] != now[key]:
            found.append(
                Change(
                    f"{kind} {key}: changed from {_quoted(anchored[key])} to {_quoted(now[key])}",
                    f"{kind} {key} {_quoted(anchored[key])}",
                )
            )
    return found


def _metrics(anchored: Sequence[dict[str, Any]], now: Sequence[dict[str, Any]]) -> list[Change]:
    """A value logged after the stamp (a step logged again, or a new step), or one gone from the history."""

    def entry(item: dict[str, Any]) -> tuple[str, int, int, str]:
        return (item["key"], item["step"], item["timestamp"], item["value"])

    before, after = Counter(map(entry, anchored)), Counter(map(entry, now))
    at_step: dict[tuple[str, int], list[str]] = {}
    for key, step, _, value in before:
        at_step.setdefault((key, step), []).append(value)
    found = []
    for key, step, timestamp, value in sorted(after - before):
        was = at_step.get((key, step))
        again = f"logged again at step {step}" if was else f"logged at step {step}, after the stamp"
        shown = f" (anchored: {', '.join(was)})" if was else ""
        held = f"{key} {', '.join(was)} at step {step}" if was else f"no {key} at step {step}"
        found.append(Change(f"metric {key}: {again}: {value} at {_when(timestamp)}{shown}", held))
    for key, step, timestamp, value in sorted(before - after):
        found.append(
            Change(
                f"metric {key}: the value {value} at step {step} ({_when(timestamp)}) is gone from its history",
                f"{key} {value} at step {step}",
            )
        )
    return found


def _files(kind: str, anchored: Sequence[ListedFile], now: Sequence[ListedFile]) -> list[Change]:
    """`kind`: how a file is named (`artifact model/x` or `logged model m-… (model): x`)."""
    old = {item["path"]: item for item in anchored}
    new = {item["path"]: item for item in now}
    found = []
    for path in sorted(old.keys() | new.keys()):
        if path not in new:
            size = f"{old[path]['size']:,} bytes"
            found.append(Change(f"{kind}{path}: removed ({size})", f"{kind}{path} of {size}"))
        elif path not in old:
            found.append(Change(f"{kind}{path}: added ({new[path]['size']:,} bytes)", f"no {kind}{path}"))
        elif old[path]["blake3"] != new[path]["blake3"]:
            found.append(
                Change(
                    f"{kind}{path}: edited ({old[path]['size']:,} -> {new[path]['size']:,} bytes,"
                    f" blake3 {old[path]['blake3'][:16]}… -> {new[path]['blake3'][:16]}…)",
                    f"{kind}{path} of {old[path]['size']:,} bytes",
                )
            )
    return found


def _models(anchored: Sequence[dict[str, Any]], now: Sequence[dict[str, Any]]) -> list[Change]:
    """MLflow 3's logged models: one added or removed whole, else each file that differs, by name."""
    old = {m["model_id"]: m for m in anchored}
    new = {m["model_id"]: m for m in now}
    found = []
    for model_id in sorted(old.keys() | new.keys()):
        model = old.get(model_id) or new[model_id]
        named = f"logged model {model_id} ({model['name']})"
        if model_id not in new:
            found.append(Change(f"{named}: removed ({len(model['files'])} files)", named))
        elif model_id not in old:
            found.append(Change(f"{named}: added after the stamp ({len(model['files'])} files)", f"no {named}"))
        else:
            for field in ("name", "source_run_id"):
                if old[model_id].get(field) != new[model_id].get(field):
                    found.append(
                        Change(
                            f"{named}: {field} changed from {old[model_id].get(field)} to {new[model_id].get(field)}",
                            f"{named} with {field} {old[model_id].get(field)}",
                        )
                    )
            found += _files(f"{named}: ", old[model_id]["files"], new[model_id]["files"])
    return found


def changes_between(
    anchored: dict[str, Any],
    anchored_files: Sequence[ListedFile] | None,
    now: dict[str, Any],
    now_files: Sequence[ListedFile] | None,
) -> list[Change]:
    """Every difference between two run identities, the run's identity first (a proof of another run),
    then artifacts, logged models, params, tags, metrics and times. `anchored_files`: the proof's listing
    and `now_files` (None when one holds none: then only the artifacts' root can be compared). A re-stamp record (the
    identity's `restamp`) is not a difference: it says what the stamp was, not what the run held."""
    if anchored.get("run_id") != now.get("run_id"):
        return [
            Change(
                f"run_id: the proof is of run {anchored.get('run_id')}, not of run {now.get('run_id')}",
                f"run {anchored.get('run_id')}",
            )
        ]
    found = []
    if anchored.get("experiment_id") != now.get("experiment_id"):
        found.append(
            Change(
                f"experiment_id: changed from {anchored.get('experiment_id')} to {now.get('experiment_id')}",
                f"experiment {anchored.get('experiment_id')}",
            )
        )
    if anchored["artifacts"] != now["artifacts"]:
        listed = anchored_files is not None and now_files is not None
        named = _files("artifact ", anchored_files or [], now_files or []) if listed else []
        root = anchored["artifacts"]["files_root"]
        found += named or [
            Change(
                f"artifacts: the tree's root changed ({root[:16]}… -> {now['artifacts']['files_root'][:16]}…)",
                f"artifacts of root {root[:16]}…",
            )
        ]
    found += _models(anchored.get("logged_models") or [], now.get("logged_models") or [])
    found += _keyed("param", _pairs(anchored.get("params", [])), _pairs(now.get("params", [])))
    found += _keyed("tag", _pairs(anchored.get("tags", [])), _pairs(now.get("tags", [])))
    found += _metrics(anchored.get("metrics", []), now.get("metrics", []))
    for field in ("source_commit", "status", "start_time", "end_time"):
        was, is_now = anchored.get(field), now.get(field)
        if was != is_now:
            shown = {k: _when(v) if isinstance(v, int) else v for k, v in (("was", was), ("now", is_now))}
            note = (
                " (it was stamped while RUNNING)"
                if field in ("status", "end_time") and anchored.get("status") == "RUNNING"
                else ""
            )
            found.append(
                Change(
                    f"{field}: changed from {shown['was'] or 'none'} to {shown['now'] or 'none'}{note}",
                    f"{field} {shown['was'] or 'none'}",
                )
            )
    return found


def run_changes(
    anchored: dict[str, Any],
    anchored_files: Sequence[ListedFile] | None,
    now: dict[str, Any],
    now_files: Sequence[ListedFile],
) -> list[str]:
    """Every difference between two run identities, one line each (`changes_between`)."""
    return [change.line for change in changes_between(anchored, anchored_files, now, now_files)]


def file_changes(prefix: str, anchored: Sequence[ListedFile], now: Sequence[ListedFile]) -> list[str]:
    """Every file that differs between two listings (file-tree entries), one line each, named after
    `prefix` (`registered version 3: model.pkl: edited (…)`)."""
    return [change.line for change in _files(prefix, anchored, now)]
