"""The keep/reset search loop of one researcher.

A baseline first; then, until a stop rule fires: propose, fence, commit, dedup, measure under the
contract's bounds, keep only on strict improvement by `min_improvement`, otherwise reset hard to the
champion. Every measured attempt is a ledger entry before anything else happens; a search killed at
any point resumes from the ledger without measuring a scored commit twice.

The repository is the user's: the harness touches only what it made. Before each attempt it writes an
in-flight marker (runs/<researcher>/in-flight.json) listing the untracked files already there; the
reset after the attempt deletes only untracked files that appeared since, and the marker is removed.
A start without a marker refuses any dirt (an untracked file, an uncommitted edit), naming it; a start
with one (the last run died mid-attempt) treats what appeared since the marker as that attempt's.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import blake3

from anchor.errors import GuardError
from anchor.fence.cgroups import LIMIT_SETTINGS
from anchor.fence.git import Repo
from anchor.fence.guard import check_changes_something, check_committed, check_fence, check_unscored
from anchor.fence.runner import reap_survivors, run_command
from anchor.fence.sandbox import Sandbox
from anchor.files import private_dir
from anchor.manifest.attempt import AttemptManifest, Metric
from anchor.record import Value
from anchor.research.audit import remember_repo
from anchor.research.contract import AttemptContract
from anchor.research.evaluator import evaluate, measured_by
from anchor.research.evidence import interrupted_dir_of, run_dir_of, seal
from anchor.research.ledger import REJECTED, STARTED, AnyLedger, LedgerRow, is_attempt, row_of, value_of
from anchor.research.metrics import read_claims, read_metric
from anchor.research.noise import is_better
from anchor.research.proposers import Proposer

if TYPE_CHECKING:
    from anchor.manifest.champion import Run
    from anchor.settings.model import Environment

NO_PARENT = "0" * 40
"""The baseline has no champion before it."""
COMMIT_DATE = "2026-01-01T00:00:00+00:00"
"""Attempt commits carry a fixed date: the same change from the same champion is the same commit."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class SearchLimits(Value):
    max_attempts: int = 20
    budget_s: float = 3600.0
    max_consecutive_failures: int = 5


@dataclass
class SearchSummary:
    researcher: str
    measured: int = 0
    rejected: int = 0
    stopped_because: str = ""
    champion: str | None = None
    champion_metric: str | None = None
    rejections: list[str] = field(default_factory=list)
    rejected_for: dict[str, int] = field(default_factory=dict)
    """The rejections counted by reason (`rejection_reason`), as `research report` counts them."""
    proposer_said: str | None = None
    """The last failure of the proposer command in its own words (a mistyped --propose: not found)."""
    interrupted: int = 0
    """Attempts a dead harness left running, closed as `interrupted` when this search started."""


def ref_name(researcher: str) -> str:
    """The researcher's id as one git ref component (any id is allowed; a ref name is not)."""
    if re.fullmatch(r"[A-Za-z0-9_-]{1,64}", researcher):
        return researcher
    import blake3

    return "id-" + blake3.blake3(researcher.encode()).hexdigest()[:16]


def status_of(result: Any, value: str | None, removed: tuple[str, ...]) -> str:
    """An attempt's (or a replication's) status: timed out, completed with a metric and bindable
    evidence, or failed."""
    if result.timed_out:
        return "timed_out"
    return "completed" if result.exit_code == 0 and value is not None and not removed else "failed"


def rejection_reason(exc: GuardError) -> str:
    """A rejected proposal's reason, as the report counts it: no change, a repeat, outside the fence,
    an unsafe entry (a nested repository, a link, a device: anchor.fence.workspace), or the proposer
    itself (it failed, timed out, or changed the repository's git state)."""
    if exc.detail.get("reason") == "no change" or exc.message.startswith("no change"):
        return "no change"
    if "already scored" in exc.message:
        return "repeat of a scored commit"
    if "outside the editable fence" in exc.message:
        return "outside the fence"
    if exc.detail.get("reason") == "unsafe entry":
        return "unsafe entry"
    return "the proposer failed"


class Search:
    def __init__(
        self,
        repo: Repo,
        contract: AttemptContract,
        contract_digest: str,
        ledger: AnyLedger,
        workdir: Path,
        proposer: Proposer,
        researcher: str,
        limits: SearchLimits,
        on_entry: Callable[[LedgerRow], None] | None = None,
        sandbox: Sandbox | None = None,
        env: Environment | None = None,
    ) -> None:
        self.repo, self.contract, self.contract_digest = repo, contract, contract_digest
        self.ledger, self.workdir, self.proposer = ledger, workdir, proposer
        self.researcher, self.limits, self.on_entry = researcher, limits, on_entry
        self.sandbox = sandbox
        """Where attempts run (anchor.fence.sandbox); None: unconfined, recorded as such per entry."""
        from anchor.fence.cgroups import Limits
        from anchor.research.environment import Capture
        from anchor.settings.model import Environment

        env = Environment() if env is None else env
        self.attempt_limits = Limits.from_environment(env)
        """What an attempt, its evaluator and the proposer may use: memory, file size, run dir and processes
        (anchor.fence.cgroups.Limits, from the settings model)."""
        self.environment = Capture(contract, repo.path, env.image)
        """What each record binds of where it ran (anchor.manifest.environment); refuses missing inputs now."""
        from anchor.research.noise import rule_in

        self.keep_rule = rule_in(ledger.rows(), researcher) if contract.keep == "noise" else None
        """`keep = "noise"`: the calibrated rule every attempt after it is judged by (anchor.research.noise)."""

    # ------------------------------------------------------------------ state from the ledger

    def mine(self) -> list[LedgerRow]:
        return [e for e in self.ledger.entries() if e["researcher"] == self.researcher]

    def champion(self) -> LedgerRow | None:
        kept = [e for e in self.mine() if e["kept"]]
        return kept[-1] if kept else None

    # ------------------------------------------------------------------ the loop

    # ------------------------------------------------------------------ what the harness owns

    @property
    def marker(self) -> Path:
        return self.workdir / "runs" / self.researcher / "in-flight.json"

    def begin_attempt(self, champion: str) -> set[str]:
        """Record, before anything is proposed or run, which untracked files are not ours."""
        before = self.repo.untracked()
        private_dir(self.marker.parent)
        tmp = self.marker.with_suffix(".tmp")
        tmp.write_text(json.dumps({"champion": champion, "untracked_before": sorted(before)}))
        tmp.replace(self.marker)
        return before

    def end_attempt(self, champion: str, before: set[str]) -> None:
        self.repo.reset_to(champion, keep=before)
        self.marker.unlink(missing_ok=True)

    def _check_start(self, champion: LedgerRow | None) -> set[str] | None:
        """Refuse to start on anything the user left in the repository; returns the untracked set of
        the attempt a crashed run left in flight, or None if there was none."""
        if self.marker.exists():
            return set(json.loads(self.marker.read_text())["untracked_before"])
        check_committed(self.repo, self.contract.editable)  # names every untracked or edited file
        head = self.repo.head()
        if champion is not None and head != champion["commit"]:
            raise GuardError(
                f"HEAD is {head[:12]}, not this search's champion {champion['commit'][:12]}: the repository moved"
                " since the search stopped; check out the champion to continue, or start a new search with"
                " another --workdir",
                detail={"head": head, "champion": champion["commit"]},
            )
        return None

    # ------------------------------------------------------------------ the loop

    def run(self) -> SearchSummary:
        summary = SearchSummary(self.researcher)
        start = time.monotonic()
        failures = rejected_in_row = 0  # the streak, and how many of it were rejected proposals
        champion = self.champion()
        # a harness killed mid-attempt (SIGKILL, a lost session) left the attempt's group running:
        # stop it, and only it, before anything else touches the repository
        reap_survivors(self.workdir / "runs" / self.researcher)
        remember_repo(self.workdir, self.researcher, self.repo.path)
        measured_by(self.contract, self.repo.path)  # an unreadable evaluator file stops the search before it starts
        summary.interrupted = self.close_interrupted()
        in_flight = self._check_start(champion)
        if champion is None and all(e["status"] == "interrupted" for e in self.mine()):
            # no baseline yet, or only ones whose harness died: measure it (again; the trace stays)
            before = self.begin_attempt(self.repo.head()) if in_flight is None else in_flight
            check_committed(self.repo, self.contract.editable)
            baseline = self.measure(self.repo.head(), NO_PARENT, None)
            summary.measured += 1
            champion = baseline if baseline["kept"] else None
            self.end_attempt(baseline["commit"], before)
            in_flight = None
        if champion is None:
            summary.stopped_because = "the baseline produced no metric" + self._why_not(self.mine())
            return summary
        if in_flight is not None:
            champion = self._resume(champion, summary, in_flight)
        if self.contract.keep == "noise" and self.keep_rule is None:
            from anchor.research.noise import calibrate

            self.keep_rule = calibrate(self, champion)  # before any candidate: every one is judged by it
            if self.keep_rule is None:
                asked = self.contract.noise_replications
                summary.stopped_because = f"the noise calibration: under 2 of the baseline's {asked} re-runs completed"
                summary.champion, summary.champion_metric = champion["commit"], value_of(champion)
                return summary
        while True:
            mine = self.mine()
            if len(mine) >= self.limits.max_attempts:
                summary.stopped_because = f"max attempts ({self.limits.max_attempts})"
                break
            if time.monotonic() - start >= self.limits.budget_s:
                summary.stopped_because = f"wall-clock budget ({self.limits.budget_s:g} s)"
                break
            if failures >= self.limits.max_consecutive_failures:
                runs = failures - rejected_in_row
                summary.stopped_because = (
                    f"{failures} consecutive failures ({rejected_in_row} rejected"
                    f" {'proposal' if rejected_in_row == 1 else 'proposals'}, {runs} failed"
                    f" {'run' if runs == 1 else 'runs'})"
                )
                break
            scored = {e["commit"] for e in mine}
            before = self.begin_attempt(champion["commit"])
            try:
                self.proposer.propose(self.repo.path, len(mine) + summary.rejected)
                dirty = check_fence(self.repo, self.contract.editable)
                if not dirty:
                    raise GuardError("no change: the proposer changed nothing")
                check_changes_something(self.repo, dirty)
                commit = self.repo.commit_paths(
                    self.contract.editable, f"anchor attempt by {self.researcher}", COMMIT_DATE
                )
                check_unscored(commit, scored, self.researcher)
            except GuardError as exc:
                reason = rejection_reason(exc)
                summary.rejected += 1
                summary.rejections.append(exc.message)
                summary.rejected_for[reason] = summary.rejected_for.get(reason, 0) + 1
                if reason == "the proposer failed":
                    summary.proposer_said = exc.message
                failures += 1
                rejected_in_row += 1
                # on record, under the hash chain: a rejection is no trial, and the report counts it by reason
                self.ledger.append(
                    {
                        "event": REJECTED,
                        "researcher": self.researcher,
                        "contract_digest": self.contract_digest,
                        "reason": reason,
                        "message": exc.message[:500],
                        "at": _now(),
                    }
                )
                self.end_attempt(champion["commit"], before)
                continue
            # the fence was checked before the commit and the commit took every editable change: the
            # tree is clean, no need to ask git again
            entry = self.measure(commit, champion["commit"], champion, clean=True)
            summary.measured += 1
            failures = 0 if entry["status"] == "completed" else failures + 1
            rejected_in_row = 0 if entry["status"] == "completed" else rejected_in_row
            if entry["kept"]:
                champion = entry
            self.end_attempt(champion["commit"], before)  # losers leave nothing the attempt wrote
        summary.champion, summary.champion_metric = champion["commit"], value_of(champion)
        return summary

    def _why_not(self, mine: list[LedgerRow]) -> str:
        """`` (failed: the disk limit of 64 MiB (ANCHOR_ATTEMPT_RUN_DIR_BYTES); its stderr: PATH)``: why the
        last measurement has no metric, in words, and where to read what it said."""
        if not mine:
            return ""
        last = mine[-1]
        why = [str(last.get("status", "failed"))]
        limit = last.get("limit")
        if isinstance(limit, dict):
            name = str(limit.get("name"))
            why.append(f"its {name} limit of {limit.get('bound')} ({LIMIT_SETTINGS.get(name, 'its bound')})")
        elif last.get("exit_code") not in (None, 0):
            why.append(f"exit {last['exit_code']}")
        if last.get("refused"):
            why.append("it left " + ", ".join(last["refused"][:3]))
        stderr = run_dir_of(self.workdir, self.researcher, last["commit"]) / "stderr.log"
        return f" ({', '.join(why)}; its stderr: {stderr})"

    def close_interrupted(self) -> int:
        """Close every attempt of this researcher that has a `started` trace and no outcome (its harness
        died while it ran) with an outcome row of status `interrupted`: no metric, never kept, its run
        dir as far as it got bound as evidence. Returns how many were closed."""
        open_: dict[str, LedgerRow] = {}
        for row in self.ledger.rows():
            if row["researcher"] != self.researcher:
                continue
            if row.get("event") == STARTED:
                open_[row["commit"]] = row
            elif is_attempt(row):
                open_.pop(row["commit"], None)
        for trace in open_.values():
            # its run dir, as far as it got, is moved aside and bound: the commit may be measured again
            # (a baseline), and that measurement gets the commit's own run dir
            run_dir = interrupted_dir_of(self.workdir, self.researcher, trace["commit"], trace["seq"])
            left = run_dir_of(self.workdir, self.researcher, trace["commit"])
            if left.is_dir() and not run_dir.exists():
                left.rename(run_dir)
            run_dir.mkdir(parents=True, exist_ok=True)
            sealed = seal(run_dir)
            parent, commit = trace["parent"], trace["commit"]
            diff = b"" if parent == NO_PARENT else self.repo.diff(parent, commit, self.contract.editable)
            manifest = AttemptManifest.build(
                version=4 if self.keep_rule is None else 5,
                keep_rule=self.keep_rule,
                commit=trace["commit"],
                parent=trace["parent"],
                diff_blake3=blake3.blake3(diff).hexdigest(),
                metric=None,
                kept=False,
                status="interrupted",
                researcher=self.researcher,
                contract_digest=self.contract_digest,
                evidence=sealed.manifest.digest.hex(),
                sandbox="none" if self.sandbox is None else self.sandbox.runtime,
                measured_by=measured_by(self.contract, self.repo.path),
                environment=self.environment(),
            )
            entry = self.ledger.append(
                {
                    **row_of(manifest.identity()),
                    "attempt_digest": manifest.digest.hex(),
                    "started_seq": trace["seq"],
                    "closed_at": _now(),
                }
            )
            self.repo.set_ref(f"refs/anchor/{ref_name(self.researcher)}/{entry['seq']}", trace["commit"])
            if self.on_entry is not None:
                self.on_entry(entry)
        return len(open_)

    def _resume(self, champion: LedgerRow, summary: SearchSummary, before: set[str]) -> LedgerRow:
        """After a crash mid-attempt: measure the unscored attempt left checked out on the champion (once
        the attempt's own stray files are swept), or reset; either way only the attempt's files go."""
        head = self.repo.head()
        scored = {e["commit"] for e in self.mine()}
        if head != champion["commit"] and head not in scored and self.repo.parent_of(head) == champion["commit"]:
            self.repo.reset_to(head, keep=before)
            entry = self.measure(head, champion["commit"], champion)
            summary.measured += 1
            if entry["kept"]:
                champion = entry
        self.end_attempt(champion["commit"], before)
        return champion

    def measure_again(self, run_dir: Path, command: str, box: Sandbox | None) -> Run:
        """Measure the commit checked out (the champion, the baseline) once more in `run_dir`, in the
        same fence as an attempt: a replication, the holdout (anchor.research.final), a noise
        calibration run (anchor.research.noise). No ledger row: the caller records the run."""
        from anchor.manifest.champion import Run

        terms = self.contract
        champion = self.repo.head()
        before = self.begin_attempt(champion)  # the same fence as an attempt: what it leaves is swept
        try:
            run_dir.mkdir(parents=True)
            name = f"{self.researcher}-{champion[:12]}-{run_dir.name}"
            timeout_s = terms.attempt_timeout_minutes * 60
            result = run_command(
                terms.render(run_dir, name, command),
                self.repo.path,
                run_dir,
                timeout_s,
                terms.grace_seconds,
                box,
                terms.pass_env,
                editable=terms.editable,
                limits=self.attempt_limits,
            )
            evaluate(terms, self.repo.path, run_dir, name, box, self.attempt_limits)
            sealed = seal(run_dir)
        finally:
            self.end_attempt(champion, before)
        value = None if result.timed_out else read_metric(run_dir, terms.metric_source, terms.metric)
        status = status_of(result, value, sealed.removed)
        metric = Metric.of(terms.metric, terms.mode, value) if status == "completed" else None
        return Run.model_validate({"status": status, "metric": metric, "evidence": sealed.manifest.digest.hex()})

    # ------------------------------------------------------------------ one measurement

    def measure(self, commit: str, parent: str, champion: LedgerRow | None, clean: bool = False) -> LedgerRow:
        """Run the contract's command on `commit` and append the ledger entry. The harness reads the
        metric itself; claims the agent wrote are recorded beside it and flagged, never adopted."""
        if not clean:
            check_committed(self.repo, self.contract.editable)
        run_name = f"{self.researcher}-{commit[:12]}"
        run_dir = run_dir_of(self.workdir, self.researcher, commit)
        if run_dir.exists():  # left by a run that died mid-attempt on this (unscored) commit: ours, stale
            shutil.rmtree(run_dir)
        run_dir.mkdir(parents=True)
        diff = b"" if parent == NO_PARENT else self.repo.diff(parent, commit, self.contract.editable)
        (run_dir / "code.diff").write_bytes(diff)
        # the trace, before anything runs: if the harness dies now, the next start closes it as interrupted
        self.ledger.append(
            {
                "event": STARTED,
                "commit": commit,
                "parent": parent,
                "researcher": self.researcher,
                "contract_digest": self.contract_digest,
                "started_at": _now(),
            }
        )
        environment = self.environment()  # the inputs as the command finds them, hashed before it runs
        result = run_command(
            self.contract.render(run_dir, run_name),
            self.repo.path,
            run_dir,
            self.contract.attempt_timeout_minutes * 60,
            self.contract.grace_seconds,
            self.sandbox,
            self.contract.pass_env,
            editable=self.contract.editable,
            limits=self.attempt_limits,
        )
        # the attempt's processes are gone: its evaluator (if the contract has one) reads its outputs,
        # then everything is bound and the metric read from the bound files
        evaluate(self.contract, self.repo.path, run_dir, run_name, self.sandbox, self.attempt_limits)
        sealed = seal(run_dir)
        value = read_metric(run_dir, self.contract.metric_source, self.contract.metric)
        status = status_of(result, value, sealed.removed)
        metric = Metric.of(self.contract.metric, self.contract.mode, value) if status == "completed" else None
        # a timed-out attempt's last number before its deadline: recorded, flagged, never kept
        partial = (
            Metric.of(self.contract.metric, self.contract.mode, value)
            if status == "timed_out" and value is not None
            else None
        )
        margin = self.contract.min_improvement if self.keep_rule is None else self.keep_rule["threshold"]
        best = None if champion is None else champion["metric"]
        kept = metric is not None and (
            best is None or is_better(metric.value, best["value"], self.contract.mode, margin)
        )
        manifest = AttemptManifest.build(
            version=4 if self.keep_rule is None else 5,
            keep_rule=self.keep_rule,
            commit=commit,
            parent=parent,
            diff_blake3=blake3.blake3(diff).hexdigest(),
            metric=metric,
            kept=kept,
            status=status,
            researcher=self.researcher,
            contract_digest=self.contract_digest,
            evidence=sealed.manifest.digest.hex(),
            sandbox="none" if self.sandbox is None else self.sandbox.runtime,
            measured_by=measured_by(self.contract, self.repo.path),
            partial=partial,
            environment=environment,
        )
        claims = read_claims(run_dir, self.contract.metric_source, self.contract.metric)
        claimed = None if claims is None else claims.get(self.contract.metric)
        differ = claims is not None and (metric is None or _as_decimal(claimed) != Decimal(metric.value))
        fields: LedgerRow = {
            **row_of(manifest.identity()),
            "exit_code": result.exit_code,
            "duration_ms": result.duration_ms,
            "attempt_digest": manifest.digest.hex(),
        }
        if result.limit:
            fields["limit"] = result.limit
        if result.git_changed:
            fields["git_changed"] = list(result.git_changed)
        if result.memory_bound != "cgroup":
            fields["memory_bound"] = result.memory_bound
        if result.refused:
            fields["refused"] = list(result.refused)
        if result.quota != "kernel" and self.sandbox is not None:
            fields["quota"] = result.quota
        if sealed.removed:
            fields["evidence_removed"] = list(sealed.removed[:64])
        if claims is not None:
            fields["claims"] = _claims_text(claims)
            fields["claims_differ"] = differ
        entry = self.ledger.append(fields)
        # every measured commit stays reachable (losers too, after the reset): a ref per ledger entry
        # survives `git gc` and can be pushed with the repository (refs/anchor/*)
        self.repo.set_ref(f"refs/anchor/{ref_name(self.researcher)}/{entry['seq']}", commit)
        if self.on_entry is not None:
            self.on_entry(entry)
        return entry


def _now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _as_decimal(value: object) -> Decimal | None:
    try:
        return Decimal(str(value))
    except ArithmeticError:
        return None


def _claims_text(claims: dict[str, Any]) -> str:
    import json

    return json.dumps(claims, sort_keys=True)[:4096]
