"""Proposers change the editable file(s) for the next attempt; the guard fences what they may touch.

`ParamSearch` is built in: deterministic for a seed, it perturbs one numeric parameter of a JSON or
flat TOML editable per attempt. `CommandProposer` runs any external command (a coding agent, a
script) in the repository with the editable paths in ANCHOR_EDITABLE.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from anchor.errors import BadInput

if TYPE_CHECKING:
    from anchor.fence.cgroups import Limits
    from anchor.fence.sandbox import Sandbox

_FLAT_TOML = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_]*)\s*=\s*(?P<value>-?[0-9][0-9_.eE+-]*)\s*$")


class Proposer(Protocol):
    def propose(self, repo: Path, attempt: int) -> None: ...


class ParamSearch:
    FACTORS = (0.5, 0.8, 1.25, 2.0)

    def __init__(self, editable: str, seed: int, researcher: str) -> None:
        self.editable, self.seed, self.researcher = editable, seed, researcher

    def check(self, repo: Path) -> None:
        """Refuse, before the search writes or anchors anything, a first editable this proposer cannot
        tune: it used to fail at the first proposal, after the baseline was measured and anchored."""
        self._numeric(repo / self.editable)

    def propose(self, repo: Path, attempt: int) -> None:
        path = repo / self.editable
        params = _read(path)
        numeric = self._numeric(path, params)
        rng = random.Random(f"{self.seed}:{self.researcher}:{attempt}")  # noqa: S311 - search, not security
        key = rng.choice(numeric)
        value = params[key] * rng.choice(self.FACTORS)
        params[key] = max(1, round(value)) if isinstance(params[key], int) else float(f"{value:.6g}")
        _write(path, params)

    def _numeric(self, path: Path, params: dict[str, Any] | None = None) -> list[str]:
        said = f"editable {self.editable!r}"
        if params is None:
            if path.is_dir():
                raise BadInput(
                    f"{said}: a folder; the built-in proposer tunes the numbers of one JSON or flat TOML"
                    " file (name that file first among the editable paths), or give --propose COMMAND"
                    " to change a folder",
                    detail={"field": "editable"},
                )
            if not path.is_file():
                raise BadInput(
                    f"{said}: no such file in the repository{_near(path, self.editable)}; the built-in"
                    " proposer tunes the numbers of the first editable file (JSON or flat TOML)",
                    detail={"field": "editable"},
                )
            params = _read(path)
        numeric = sorted(k for k, v in params.items() if isinstance(v, (int, float)) and not isinstance(v, bool))
        if not numeric:
            raise BadInput(f"{said}: no numeric parameter to search", detail={"field": "editable"})
        return numeric


def note_absent_editables(repo: Path, editable: Sequence[str]) -> None:
    """Say, before a search with a proposer command starts, which editable paths the repository lacks:
    the agent may be meant to create them, so they are not refused, but a mistyped one (`param.json` for
    params.json) wastes every attempt in silence, the agent writing a file the command never reads."""
    import logging

    for rel in editable:
        if not (repo / rel).exists():
            logging.getLogger("anchor.progress").warning(
                f"note: editable {rel!r} is not in the repository{_near(repo / rel, rel)}: the proposer may"
                " create it; an attempt counts only if the measured command reads it"
            )


def _near(path: Path, rel: str) -> str:
    """` (did you mean params.json?)`: the closest name beside a missing editable, repo-relative."""
    from anchor.errors import did_you_mean

    try:
        names = [str(Path(rel).with_name(entry.name)) for entry in path.parent.iterdir()]
    except OSError:
        return ""
    return did_you_mean(rel, names)


class CommandProposer:
    """An external proposer (a coding agent): fenced like an attempt. Its environment is the same
    allow-list (PATH, the locale, the contract's `pass_env`, a HOME in `scratch`), never a secret of
    ours; in the sandbox it sees what an attempt sees, and the network only if `network` is set."""

    def __init__(
        self,
        command: str,
        editable: tuple[str, ...],
        timeout_s: float = 600.0,
        scratch: Path | None = None,
        sandbox: Sandbox | None = None,
        network: bool = False,
        pass_env: tuple[str, ...] = (),
        limits: Limits | None = None,
    ) -> None:
        self.command, self.editable, self.timeout_s = command, editable, timeout_s
        self.scratch, self.sandbox, self.network, self.pass_env = scratch, sandbox, network, pass_env
        self.limits = limits
        """The attempts' bounds, which the proposer runs under too (anchor.fence.cgroups; None: the defaults)."""

    def propose(self, repo: Path, attempt: int) -> None:
        """Run the proposer in its own process group. One that hangs past `timeout_s`, crashes or exits
        non-zero is a rejected proposal (`GuardError`, with the end of its stderr), never an exception
        out of the search; on a timeout its whole group is stopped, grandchildren included."""
        import tempfile

        if self.scratch is not None:
            return self._run(repo, attempt, self.scratch)
        with tempfile.TemporaryDirectory(prefix="anchor-proposer-") as scratch:
            return self._run(repo, attempt, Path(scratch))

    def _run(self, repo: Path, attempt: int, scratch: Path) -> None:
        from anchor.errors import GuardError
        from anchor.fence.runner import run_command

        extra = {"ANCHOR_EDITABLE": " ".join(self.editable), "ANCHOR_ATTEMPT": str(attempt)}
        # the attempts' bounds and fence: a proposer is untrusted too. Sandboxed, it edits copies, which
        # are written back only once nothing in them could steer git (anchor.fence.workspace)
        result = run_command(
            self.command,
            repo,
            scratch,
            self.timeout_s,
            1.0,
            self.sandbox,
            self.pass_env,
            editable=self.editable,
            network=self.network,
            extra_env=extra,
            write_back=True,
            limits=self.limits,
        )
        if result.git_changed:
            raise GuardError(
                f"the proposer changed {', '.join(result.git_changed)} (undone): the repository's git"
                " state is the harness's",
                detail={"paths": list(result.git_changed)},
            )
        if result.refused:
            raise GuardError(
                f"the proposer left what the repository never holds: {', '.join(result.refused[:10])}"
                " (never written back, never given to git)",
                detail={"paths": list(result.refused), "reason": "unsafe entry"},
            )
        if result.timed_out:
            raise GuardError(f"the proposer timed out after {self.timeout_s:g} s")
        if result.limit is not None:
            from anchor.fence.cgroups import LIMIT_SETTINGS

            name = str(result.limit["name"])
            raise GuardError(
                f"the proposer met its {name} limit of {result.limit['bound']}"
                f" ({LIMIT_SETTINGS.get(name, 'its bound')})"
            )
        if result.exit_code != 0:
            tail = _tail(scratch / "stderr.log")
            raise GuardError(f"the proposer exited with status {result.exit_code}" + (f": {tail}" if tail else ""))


def _tail(log: Path) -> str:
    """The end of the proposer's stderr, read as the hostile file it is (anchor.files.tail_regular)."""
    from anchor.files import tail_regular

    return tail_regular(log, 4096).decode("utf-8", "replace").strip()[-300:]


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else None
    except (OSError, ValueError) as exc:  # a JSON or UTF-8 error is a ValueError
        raise BadInput(f"{path.name}: cannot be read as parameters ({exc})", detail={"field": "editable"}) from None
    if path.suffix == ".json":
        if not isinstance(data, dict):
            raise BadInput(f"{path.name}: a JSON object is expected", detail={"field": "editable"})
        return data
    params: dict[str, Any] = {}
    for line in text.splitlines():
        match = _FLAT_TOML.match(line)
        if match:
            raw = match["value"].replace("_", "")
            params[match["key"]] = float(raw) if any(c in raw for c in ".eE") else int(raw)
    return params


def _write(path: Path, params: dict[str, Any]) -> None:
    if path.suffix == ".json":
        # a one-line file stays one line, its keys in their order: pretty-printing it made every
        # proposal's diff the whole file; a file laid out over lines is written as before
        before = path.read_text(encoding="utf-8").strip() if path.exists() else ""
        if before and "\n" not in before:
            path.write_text(json.dumps(params) + "\n", encoding="utf-8")
            return
        path.write_text(json.dumps(params, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        return
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        match = _FLAT_TOML.match(line)
        lines.append(f"{match['key']} = {params[match['key']]}" if match else line)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
