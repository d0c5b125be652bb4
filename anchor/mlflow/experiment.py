"""An MLflow experiment stamped and verified whole: every run, and the experiment's roster.

Why a roster: a run's own proof cannot say that a sibling existed. Whoever writes the tracking store
can delete a trial (MLflow hides it from the experiment) or remove it for good (`mlflow gc`), and the
runs left verify one by one. So `stamp_experiment` also anchors the roster, the list of every run the
experiment holds (deleted ones too, with their lifecycle stage), as a file tree of one file,
`roster.json`, kept beside the experiment's runs in its artifact store (`<experiment>/anchor/roster/`,
never a run's folder). `verify_experiment` lists the runs again (every lifecycle stage), verifies each,
reports the deleted ones apart, says how many runs the experiment held when it was stamped, and names a
run of the roster that is gone from the store: the bridge's counterpart of the research ledger's trial
count.

One run failing never stops the pass: each is reported, the rest are stamped or verified.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anchor.errors import AnchorError, BadInput, ExitCode, Tampered
from anchor.mlflow.bridge import RunStamped, RunVerification, _settings, stamp_run, verify_run
from anchor.mlflow.reading import client_for, runs_of, scratch_dir, translated
from anchor.record import Value

if TYPE_CHECKING:
    from anchor.anchoring.stamper import Stamper
    from anchor.library.verifier import Policy, Verifier
    from anchor.manifest.hashing import Progress
    from anchor.settings.session import Settings

__all__ = [
    "ExperimentStamped",
    "ExperimentVerification",
    "Roster",
    "stamp_experiment",
    "stamp_runs",
    "verify_experiment",
]

ROSTER_FOLDER = "anchor/roster"
"""Below the experiment's artifact location: roster.json and its proof, roster.anchor.json."""
MAX_ROSTER_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Roster(Value):
    """The experiment's runs as a stamp of the roster anchored them."""

    digest: str
    runs: tuple[tuple[str, str], ...]
    """(run id, lifecycle stage) of every run, sorted by run id."""
    state: str
    """`anchored` or `pending`."""
    anchored_block: int | None = None
    unchanged: bool = False
    """Anchored before with these exact runs: nothing anchored or written now."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ExperimentStamped(Value):
    """What `stamp_experiment` (or `stamp_runs`) did: each run stamped (or left unchanged), each refused
    with why."""

    experiment: str
    """The experiment's name and id ("" for `stamp_runs`)."""
    experiment_id: str
    stamped: list[RunStamped] = field(default_factory=list)
    refused: dict[str, AnchorError] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    """Runs hidden from the experiment: not stamped (a deleted run is restored first), in the roster."""
    roster: Roster | None = None

    @property
    def exit_code(self) -> int:
        """0 when no run was refused; a changed run outranks (exit 4: it is the finding); else the first
        refusal's code."""
        return worst_exit(list(self.refused.values()))


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ExperimentVerification(Value):
    """The verdict on an experiment: each run's (or the typed error it failed with), its deleted runs
    apart, and its roster against the runs the store holds now."""

    experiment: str
    experiment_id: str
    runs: list[tuple[str, RunVerification | AnchorError]]
    deleted: list[str]
    allow_deleted: bool
    roster: Roster | None
    roster_error: AnchorError | None = None
    gone: list[str] = field(default_factory=list)
    """Runs the roster anchored that the store no longer holds (removed for good)."""
    unlisted: list[str] = field(default_factory=list)
    """Runs the store holds that the roster does not (created after the experiment was last stamped)."""

    @property
    def runs_when_stamped(self) -> int | None:
        return None if self.roster is None else len(self.roster.runs)

    @property
    def exit_code(self) -> int:
        """A run changed, or one gone from the store, is exit 4; else the first failure's code; else a
        deleted run not accepted is exit 10; else 0."""
        failures = [verdict for _, verdict in self.runs if isinstance(verdict, AnchorError)]
        if self.gone:
            return int(ExitCode.TAMPERED)
        if self.roster_error is not None:
            failures.append(self.roster_error)
        if failures:
            return worst_exit(failures)
        return int(ExitCode.POLICY) if self.deleted and not self.allow_deleted else 0

    def to_json(self) -> dict[str, object]:
        return {
            "experiment": self.experiment,
            "experiment_id": self.experiment_id,
            "runs": [
                verdict.to_json()
                if isinstance(verdict, RunVerification)
                else {"run_id": run_id, "error": verdict.to_dict()}
                for run_id, verdict in self.runs
            ],
            "deleted": self.deleted,
            "allow_deleted": self.allow_deleted,
            "gone": self.gone,
            "unlisted": self.unlisted,
            "runs_when_stamped": self.runs_when_stamped,
            "roster": None
            if self.roster is None
            else {
                "manifest_digest": self.roster.digest,
                "anchored_block": self.roster.anchored_block,
                "runs": len(self.roster.runs),
            },
            "roster_error": None if self.roster_error is None else self.roster_error.to_dict(),
        }


def worst_exit(failures: list[AnchorError]) -> int:
    if not failures:
        return 0
    if any(isinstance(exc, Tampered) for exc in failures):
        return int(ExitCode.TAMPERED)
    return int(failures[0].exit_code)


def stamp_runs(
    run_ids: list[str],
    *,
    tracking_uri: str | None = None,
    stamper: Stamper | None = None,
    settings: Settings | None = None,
    services: list[str] | None = None,
    allow_running: bool = False,
    restamp: bool = False,
    on_run: Callable[[str, RunStamped | AnchorError], None] | None = None,
    progress: Progress | None = None,
) -> ExperimentStamped:
    """Stamp each run (`stamp_run`) through one stamper, in order; a run that fails is reported
    (`refused`, and `on_run` as each ends), never the end of the pass."""
    from anchor.anchoring.stamper import Stamper

    settings = _settings(settings)
    done = ExperimentStamped("", "")
    own = stamper or Stamper.from_settings(settings, services)
    try:
        for run_id in run_ids:
            outcome: RunStamped | AnchorError
            try:
                outcome = stamp_run(
                    run_id,
                    tracking_uri=tracking_uri,
                    stamper=own,
                    settings=settings,
                    allow_running=allow_running,
                    restamp=restamp,
                    progress=progress,
                )
                done.stamped.append(outcome)
            except AnchorError as exc:
                outcome = done.refused.setdefault(run_id, exc)
            if on_run is not None:
                on_run(run_id, outcome)
    finally:
        if stamper is None:
            own.close()
    return done


def stamp_experiment(
    experiment: str,
    *,
    tracking_uri: str | None = None,
    stamper: Stamper | None = None,
    settings: Settings | None = None,
    services: list[str] | None = None,
    allow_running: bool = False,
    restamp: bool = False,
    on_run: Callable[[str, RunStamped | AnchorError], None] | None = None,
) -> ExperimentStamped:
    """Stamp every active run of `experiment` (by name), oldest first (`stamp_runs`: a changed run is
    refused unless `restamp`, a failing run never ends the pass), then its roster."""
    from anchor.anchoring.stamper import Stamper

    settings = _settings(settings)
    client = client_for(tracking_uri)
    experiment_id, runs = runs_of(client, experiment)
    own = stamper or Stamper.from_settings(settings, services)
    try:
        active = [run_id for run_id, stage in runs if stage != "deleted"]
        done = stamp_runs(
            active,
            tracking_uri=tracking_uri,
            stamper=own,
            settings=settings,
            allow_running=allow_running,
            restamp=restamp,
            on_run=on_run,
        )
        roster = _stamp_roster(client, experiment_id, runs, own)
    finally:
        if stamper is None:
            own.close()
    deleted = [run_id for run_id, stage in runs if stage == "deleted"]
    return ExperimentStamped(experiment, experiment_id, done.stamped, done.refused, deleted, roster)


def _roster_bytes(experiment_id: str, runs: list[tuple[str, str]]) -> bytes:
    listed = [{"lifecycle_stage": stage, "run_id": run_id} for run_id, stage in sorted(runs)]
    body = {"experiment_id": experiment_id, "kind": "anchor.mlflow.roster", "runs": listed, "version": 1}
    return (json.dumps(body, sort_keys=True, separators=(",", ":")) + "\n").encode()


def _roster_store(client: Any, experiment_id: str) -> Any:
    """The artifact repository of the experiment's roster folder (MLflow's own, as its client uses it)."""
    from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository

    location = str(client.get_experiment(experiment_id).artifact_location).rstrip("/")
    return get_artifact_repository(f"{location}/{ROSTER_FOLDER}", tracking_uri=str(client.tracking_uri))


def _held_roster(store: Any, scratch: Path) -> tuple[Path, Path] | None:
    """The roster the experiment holds: (its tree, a folder of roster.json alone; its proof), or None."""
    names = {Path(info.path).name for info in store.list_artifacts()}
    if not {"roster.json", "roster.anchor.json"} <= names:
        return None
    tree, proof = scratch / "tree", scratch / "proof"
    tree.mkdir(parents=True)
    proof.mkdir(parents=True)
    store.download_artifacts("roster.json", str(tree))
    store.download_artifacts("roster.anchor.json", str(proof))
    return tree, proof / "roster.anchor.json"


def _stamp_roster(client: Any, experiment_id: str, runs: list[tuple[str, str]], stamper: Stamper) -> Roster:
    from anchor.manifest.exclude import Rules
    from anchor.proof.file import ProofFile, load_any

    body = _roster_bytes(experiment_id, runs)
    listed = tuple(sorted(runs))
    try:
        store = _roster_store(client, experiment_id)
        with scratch_dir() as tmp:
            held = _held_roster(store, Path(tmp) / "held")
            if held is not None and (held[0] / "roster.json").read_bytes() == body:
                proof = load_any(held[1])
                block = proof.anchor.block_number if isinstance(proof, ProofFile) else None
                return Roster(proof.manifest_digest, listed, "anchored" if block else "pending", block, True)
            tree = Path(tmp) / "new" / "roster"
            tree.mkdir(parents=True)
            (tree / "roster.json").write_bytes(body)
            out = Path(tmp) / "new" / "roster.anchor.json"
            stamped = stamper._stamp(tree, out=out, rules=Rules([]))
            store.log_artifact(str(tree / "roster.json"))
            store.log_artifact(str(out))
            client.set_experiment_tag(experiment_id, "anchor.roster_digest", stamped.proof.manifest_digest)
            client.set_experiment_tag(experiment_id, "anchor.roster_runs", str(len(runs)))
    except AnchorError:
        raise
    except Exception as exc:  # noqa: BLE001 - MLflow's and requests' errors alike, typed
        raise translated(exc, client, f"experiment {experiment_id}: its roster") from None
    proof_now = stamped.proof
    block = proof_now.anchor.block_number if isinstance(proof_now, ProofFile) else None
    return Roster(proof_now.manifest_digest, listed, stamped.state, block)


def verify_experiment(
    experiment: str,
    *,
    tracking_uri: str | None = None,
    policy: Policy | None = None,
    verifier: Verifier | None = None,
    settings: Settings | None = None,
    require: str = "any",
    allow_deleted: bool = False,
) -> ExperimentVerification:
    """Every run of `experiment` (deleted ones too) verified (`verify_run`), each failure kept with its
    run; the deleted runs apart (not accepted unless `allow_deleted`); and the roster the experiment was
    last stamped with, verified like any file tree, against the runs the store holds now."""
    from anchor.library.verifier import Verifier

    settings = _settings(settings)
    client = client_for(tracking_uri)
    own = verifier or Verifier.from_settings(settings)
    experiment_id, runs = runs_of(client, experiment)
    verdicts: list[tuple[str, RunVerification | AnchorError]] = []
    for run_id, _ in runs:
        verdict: RunVerification | AnchorError
        try:
            verdict = verify_run(
                run_id,
                tracking_uri=tracking_uri,
                policy=policy,
                verifier=own,
                settings=settings,
                require=require,
                allow_deleted=True,
            )
        except AnchorError as exc:
            verdict = exc
        verdicts.append((run_id, verdict))
    deleted = [run_id for run_id, stage in runs if stage == "deleted"]
    roster, roster_error = None, None
    try:
        roster = _verified_roster(client, experiment_id, own, policy, require)
    except AnchorError as exc:
        roster_error = exc
    now = {run_id for run_id, _ in runs}
    gone = [run_id for run_id, _ in roster.runs if run_id not in now] if roster else []
    unlisted = [run_id for run_id, _ in runs if roster and run_id not in {r for r, _ in roster.runs}]
    return ExperimentVerification(
        experiment, experiment_id, verdicts, deleted, allow_deleted, roster, roster_error, gone, unlisted
    )


def _verified_roster(
    client: Any, experiment_id: str, verifier: Verifier, policy: Policy | None, require: str
) -> Roster | None:
    """The roster the experiment holds, verified (the file tree against its proof, the anchor on chain,
    the policy), or None when it holds none."""
    try:
        store = _roster_store(client, experiment_id)
        with scratch_dir() as tmp:
            held = _held_roster(store, Path(tmp))
            if held is None:
                return None
            verdict = verifier.verify(held[0], proof=held[1], policy=policy, require=require)
            body = (held[0] / "roster.json").read_bytes()
    except AnchorError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise translated(exc, client, f"experiment {experiment_id}: its roster") from None
    try:
        data = json.loads(body[:MAX_ROSTER_BYTES])
        if data.get("experiment_id") != experiment_id:
            raise Tampered(
                f"experiment {experiment_id}: its roster is of experiment {data.get('experiment_id')}",
                detail={"experiment_id": experiment_id},
            )
        listed = tuple(sorted((str(r["run_id"]), str(r["lifecycle_stage"])) for r in data["runs"]))
    except (ValueError, KeyError, TypeError, AttributeError):
        raise BadInput(
            f"experiment {experiment_id}: its roster.json is not a roster", detail={"field": "roster"}
        ) from None
    return Roster(verdict.manifest_digest, listed, "anchored", verdict.anchored_block)
