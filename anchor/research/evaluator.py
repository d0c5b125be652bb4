"""The evaluator: a command the harness runs after an attempt, apart from the code under measurement.

Why: with `jsonl:`/`json:`/`regex:` sources the number comes from the program being measured, so
evaluator and evaluated are one. An `evaluator:<command>` source runs once the attempt's process group
is gone, in a sandbox of its own: the attempt's run dir read-only, the editable files read-only, its
own directory (`<run dir>.evaluator`) the only writable place, no network. The last non-empty line of
its stdout (a number, or a JSON object holding the metric) is copied by the harness into the run dir
as `evaluator.out`, so it is bound with the rest of the evidence and `research verify --repo` re-reads
the same number. The evaluator's files (`evaluator_files`, never editable) are digested into every
attempt manifest (`measured_by`): which evaluator, exactly, produced the number.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import blake3

from anchor.errors import BadInput
from anchor.fence.cgroups import Limits
from anchor.fence.runner import RunResult, run_command
from anchor.fence.sandbox import Sandbox
from anchor.manifest.attempt import MeasuredBy
from anchor.manifest.canonical import canonical_json
from anchor.manifest.domain import Domain, tagged
from anchor.research.contract import AttemptContract
from anchor.research.metrics import EVALUATOR_OUT, source_definition

MAX_OUTPUT_LINE = 4096


def measured_by(contract: AttemptContract, repo: Path) -> MeasuredBy:
    """The metric source and the digest of its definition, with the evaluator's files hashed now."""
    files: dict[str, str] = {}
    for name in contract.evaluator_files:
        path = Path(name) if name.startswith("/") else repo / name
        try:
            files[name] = blake3.blake3(path.read_bytes()).hexdigest()
        except OSError as exc:
            raise BadInput(
                f"evaluator_files: {name} cannot be read ({exc.strerror})", detail={"field": "evaluator_files"}
            ) from None
    definition = source_definition(contract.metric_source, files)
    digest = tagged(Domain.METRIC_SOURCE, canonical_json(definition)).hex()
    return MeasuredBy(source=contract.metric_source.partition(":")[0], digest=digest)


def eval_dir_of(run_dir: Path) -> Path:
    return run_dir.with_name(run_dir.name + ".evaluator")


def evaluate(
    contract: AttemptContract,
    repo: Path,
    run_dir: Path,
    run_name: str,
    sandbox: Sandbox | None,
    limits: Limits | None = None,
) -> RunResult | None:
    """Run the contract's evaluator on the attempt in `run_dir` (its processes gone), under the attempts'
    `limits`, and copy its answer to run_dir/evaluator.out; None when the contract has no evaluator."""
    command = contract.evaluator_command()
    if command is None:
        return None
    own = eval_dir_of(run_dir)
    shutil.rmtree(own, ignore_errors=True)
    own.mkdir(parents=True)
    line = contract.render(run_dir, run_name, command).replace("{eval_dir}", str(own))
    result = run_command(
        line,
        repo,
        own,
        contract.evaluator_timeout_minutes * 60,
        contract.grace_seconds,
        None if sandbox is None else sandbox.evaluating(run_dir),
        contract.pass_env,
        limits=limits,
    )
    # the attempt may have left anything at this name (a link, a FIFO, a directory): ours replaces it
    out = run_dir / EVALUATOR_OUT
    if out.is_dir() and not out.is_symlink():
        shutil.rmtree(out, ignore_errors=True)
    with contextlib.suppress(FileNotFoundError):
        out.unlink()
    answer = _last_line(own / "stdout.log") if result.exit_code == 0 and not result.timed_out else ""
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(answer + "\n" if answer else "")
    return result


def _last_line(path: Path) -> str:
    """The evaluator's last non-empty line, its stdout read as the hostile file it may be (a link to a
    host file, a FIFO): never followed, never waited on."""
    from anchor.files import tail_regular

    tail = tail_regular(path, 64 * 1024).decode("utf-8", "replace")
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return lines[-1][:MAX_OUTPUT_LINE] if lines else ""
