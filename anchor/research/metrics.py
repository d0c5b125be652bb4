"""Read the metric the harness trusts: from files bound in the attempt's evidence, parsed here, never
from the agent's say-so.

The metric sources (the contract's `metric_source`), a small registry:
- `jsonl:<file>`: the last row of run_dir/<file>; `json:<file>`: one JSON object;
- `regex:<pattern>`: the last match of <pattern> in the attempt's stdout (run_dir/stdout.log), group 1
  if the pattern has a group;
- `evaluator:<command>`: a command the harness runs after the attempt, in a sandbox of its own with
  read-only access to the attempt's outputs (anchor.research.evaluator); the last line of its stdout
  (a number, or a JSON object with the metric) is copied by the harness to run_dir/evaluator.out;
- `<name>:<argument>`: a plug-in registered in the `anchor.metric_sources` entry-point group, a
  function `(run_dir, argument, metric_name) -> number | str | None` reading the bound files.
The first three read what the edited code wrote; only `evaluator:` keeps evaluator and evaluated apart.
Each source is re-read from the bound files by `research verify --repo`, so every one of them is
checkable after the fact. If the agent also writes claims of its own (run_dir/claims.json, or, when
the metric comes from a regex or an evaluator, its own metrics.jsonl/metrics.json), they are recorded
beside the measured value and flagged when they differ; they never become the record.

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

ENTRY_POINT_GROUP = "anchor.metric_sources"
BUILTIN = ("jsonl", "json", "regex", "evaluator")
EVALUATOR_OUT = "evaluator.out"
"""Where the harness copies the evaluator's last stdout line, in the attempt's run dir (bound)."""


def check_source(source: str) -> str:
    """`source` if it names a known metric source with a usable argument; ValueError saying why."""
    import re

    kind, _, arg = source.partition(":")
    if kind in ("jsonl", "json"):
        if not arg or arg.startswith("/") or ".." in arg.split("/"):
            raise ValueError(f"{source!r}: use {kind}:<file in run_dir>")
    elif kind == "regex":
        try:
            pattern = re.compile(arg)
        except re.error as exc:
            raise ValueError(f"{source!r}: not a regular expression ({exc})") from None
        if not arg or pattern.groups > 1:
            raise ValueError(f"{source!r}: a non-empty pattern with at most one group (the value)")
    elif kind == "evaluator":
        if not arg.strip():
            raise ValueError(f"{source!r}: evaluator:<command> (run after the attempt, on its outputs)")
    elif _plugin(kind) is None:
        raise ValueError(
            f"{source!r}: unknown metric source {kind!r}; use jsonl:<file>, json:<file>, regex:<pattern>,"
            f" evaluator:<command>, or a plug-in of the {ENTRY_POINT_GROUP!r} entry-point group"
        )
    return source


def _plugin(kind: str) -> Any:
    from importlib.metadata import entry_points

    if kind in BUILTIN:
        return None
    found = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == kind]
    return found[0] if found else None


def source_definition(source: str, files: dict[str, str]) -> dict[str, Any]:
    """What the evaluator digest commits to: the source line, the BLAKE3 of each of the evaluator's
    files, and for a plug-in its entry point and distribution (docs/manifest.md, "Evaluator digest")."""
    definition: dict[str, Any] = {
        "source": source,
        "files": [{"path": path, "blake3": digest} for path, digest in sorted(files.items())],
    }
    plugin = _plugin(source.partition(":")[0])
    if plugin is not None:
        definition["plugin"] = {"entry_point": plugin.value}
        if plugin.dist is not None:
            definition["plugin"]["distribution"] = f"{plugin.dist.metadata['Name']}=={plugin.dist.version}"
    return definition


def read_metric(run_dir: Path, source: str, name: str) -> str | None:
    """The canonical decimal of metric `name`, or None if the run did not produce a usable one."""
    kind, _, arg = source.partition(":")
    value: Any = None
    if kind in ("jsonl", "json"):
        value = _from_json_file(run_dir, arg, name, kind == "jsonl")
    elif kind == "regex":
        value = _from_stdout(run_dir, arg)
    elif kind == "evaluator":
        value = _from_evaluator(run_dir, name)
    else:
        plugin = _plugin(kind)
        try:
            value = None if plugin is None else plugin.load()(run_dir, arg, name)
        except Exception:  # noqa: BLE001 - a broken plug-in measures nothing; it never stops the search
            value = None
    if value is None or isinstance(value, bool):
        return None
    try:
        return canonical_decimal(value, "metric")
    except BadInput:
        return None


def _from_json_file(run_dir: Path, rel: str, name: str, last_row: bool) -> Any:
    row = _json_row(run_dir, rel, last_row)
    return None if row is None else row.get(name)


def _json_row(run_dir: Path, rel: str, last_row: bool) -> dict[str, Any] | None:
    text = read_run_file(run_dir, rel)
    if text is None:
        return None
    try:
        if last_row:
            rows = [line for line in text.splitlines() if line.strip()]
            row = json.loads(rows[-1]) if rows else None
        else:
            row = json.loads(text)
    except ValueError:
        return None
    return row if isinstance(row, dict) else None


def metric_record(run_dir: Path, source: str) -> dict[str, Any] | None:
    """The whole JSON object the metric is read from (the row of `jsonl:`/`json:`, the evaluator's
    line), or None for sources that give a bare number: where an evaluator may also say how many
    examples it scored and each one's result (anchor.research.uncertainty)."""
    kind, _, arg = source.partition(":")
    if kind in ("jsonl", "json"):
        return _json_row(run_dir, arg, kind == "jsonl")
    if kind == "evaluator":
        value = _evaluator_line(run_dir)
        return value if isinstance(value, dict) else None
    return None


def _from_stdout(run_dir: Path, pattern: str) -> Any:
    import re

    text = read_run_file(run_dir, "stdout.log")
    matches = list(re.finditer(pattern, text or "", re.MULTILINE))
    if not matches:
        return None
    last = matches[-1]
    return last.group(1) if last.re.groups else last.group(0)


def _from_evaluator(run_dir: Path, name: str) -> Any:
    value = _evaluator_line(run_dir)
    if isinstance(value, dict):
        return value.get(name)
    return value if isinstance(value, int | float) else None


def _evaluator_line(run_dir: Path) -> Any:
    """The evaluator's last stdout line as the harness copied it, parsed as JSON; None if unreadable."""
    line = (read_run_file(run_dir, EVALUATOR_OUT) or "").strip()
    try:
        return json.loads(line) if line else None
    except ValueError:
        return None


def read_claims(run_dir: Path, source: str = "jsonl:metrics.jsonl", name: str = "") -> dict[str, Any] | None:
    """What the agent says it scored: claims.json, or, when the harness measured the metric some other
    way (a regex, an evaluator), the number the edited code wrote in its own metrics file."""
    path = run_dir / "claims.json"
    if not os.path.lexists(path):
        if source.partition(":")[0] in ("jsonl", "json") or not name:
            return None
        for kind, rel in (("jsonl", "metrics.jsonl"), ("json", "metrics.json")):
            own = _from_json_file(run_dir, rel, name, kind == "jsonl")
            if own is not None:
                return {name: own, "from": rel}
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
