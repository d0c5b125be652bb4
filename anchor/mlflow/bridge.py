"""Stamp and verify MLflow runs: the library behind `anchor mlflow` and `anchor.mlflow` (docs/mlflow.md).

Why thin: a run read whole is a manifest like any other (anchor.mlflow.reading), anchored by the one
`Stamper` (a key here, or services: the same choice `anchor stamp` makes) and verified by the one
`Verifier` (the artifacts as a file tree, the anchor on chain, the policy last). What is MLflow's own
here is where the proof goes: back into the run, as the artifact `anchor/proof.anchor.json` (left out
of the hashed tree) and the tags `anchor.manifest_digest`, `anchor.state`, `anchor.tx`.

Who could lie: whoever writes the tracking store can edit an artifact, log a metric again, change a
param in the database, or replace the run's proof with one of their own. The first three are named by
`verify_run` (anchor.mlflow.changes); the last is seen by its submitter (the verdict names it; policy
`expect_submitter`), and against the copy of the proof this data dir kept when it stamped the run.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from anchor.errors import AnchorError, BadInput, NotAnchored, PolicyMismatch, Tampered
from anchor.mlflow.reading import PROOF_ARTIFACT, PROOF_FOLDER, RunRead, client_for, get_run, read_run, scratch_dir
from anchor.record import Value
from anchor.settings.session import Settings

if TYPE_CHECKING:
    from mlflow import ActiveRun

    from anchor.anchoring.client import Upgraded
    from anchor.anchoring.stamper import Stamped, Stamper
    from anchor.library.verifier import Policy, Verification, Verifier
    from anchor.manifest.hashing import Progress
    from anchor.manifest.listed import ListedFile
    from anchor.proof.file import PendingProof, ProofFile

__all__ = ["AnchoredRun", "RunStamped", "RunVerification", "anchored_run", "stamp_run", "upgrade_run", "verify_run"]

TAG_DIGEST, TAG_STATE, TAG_TX = "anchor.manifest_digest", "anchor.state", "anchor.tx"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class RunStamped(Value):
    """What `stamp_run` did to one run."""

    run_id: str
    digest: str
    """The run manifest's digest, 0x-prefixed."""
    state: Literal["anchored", "pending"]
    unchanged: bool
    """Stamped before with these exact contents: nothing was anchored or written now."""
    tx_hash: str | None = None
    block: int | None = None
    proof: Path | None = None
    """This data dir's copy of the proof (None when there is no data dir, or nothing was written)."""
    stamped: Stamped | None = None
    superseded: str | None = None
    """The digest of the run's earlier proof, kept in the run as anchor/superseded/<digest>.anchor.json."""
    running: bool = False
    """Stamped while the run was RUNNING (`allow_running`): what it held then."""
    changes: tuple[str, ...] = ()
    """A re-stamp: every change since the proof it supersedes, as recorded in its manifest."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class RunVerification(Value):
    """The verdict on a run: the one `Verification` (artifacts, anchor, policy), and what the run is."""

    run_id: str
    verification: Verification
    status: str
    """The run's status as anchored (RUNNING: it was stamped before it ended)."""
    params: int
    metric_values: int
    tags: int
    proof_source: str
    """Where the proof came from: the run's artifact, or the file given."""
    lifecycle_stage: str = "active"
    """`deleted`: the run is hidden from its experiment (accepted only with `allow_deleted`)."""
    logged_models: int = 0
    stamps: int = 1
    """How many times the run was stamped: its proof and each earlier one its re-stamps name."""
    earlier: EarlierStamp | None = None
    """The stamp this proof superseded, and what it held of what changed since."""
    manifest: dict[str, object] = field(default_factory=dict)
    """The identity the proof anchors (what the run held), as verified."""

    def to_json(self) -> dict[str, object]:
        """The run's fields and its verdict's; `status` is the run's (MLflow's), `verdict_status` the verdict's."""
        verdict = self.verification.to_json()
        verdict["verdict_status"] = verdict.pop("status")
        return {
            "run_id": self.run_id,
            "status": self.status,
            "params": self.params,
            "tags": self.tags,
            "metric_values": self.metric_values,
            "proof_source": self.proof_source,
            "lifecycle_stage": self.lifecycle_stage,
            "logged_models": self.logged_models,
            "stamps": self.stamps,
            "earlier": None if self.earlier is None else self.earlier.to_json(),
            **verdict,
        }


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class EarlierStamp(Value):
    """The stamp a re-stamp superseded: its digest (bound in the re-stamp's manifest), where its block
    comes from (its own proof, kept in the run and checked against the chain), the changes the re-stamp
    recorded, and what the earlier stamp held of each."""

    manifest_digest: str
    changes: tuple[str, ...]
    held: tuple[str, ...] = ()
    """Empty when the run no longer holds the earlier proof (then `changes` is what is known)."""
    anchored_block: int | None = None
    proof: str | None = None
    """The run's artifact holding the earlier proof, or None when it is gone from the run."""
    problem: str | None = None
    """Why the earlier proof could not be shown (gone, not the one bound, its anchor did not verify)."""

    def to_json(self) -> dict[str, object]:
        return {
            "manifest_digest": self.manifest_digest,
            "changes": list(self.changes),
            "held": list(self.held),
            "anchored_block": self.anchored_block,
            "proof": self.proof,
            "problem": self.problem,
        }


def _settings(settings: Settings | None) -> Settings:
    return settings or Settings.load()


def _kept(settings: Settings, run_id: str) -> Path | None:
    """This data dir's copy of the run's proof, where a data dir exists (a training script through a
    service, run from any folder, creates none)."""
    return settings.layout.mlflow_run(run_id) if settings.data_dir.is_dir() else None


def _run_proof(client: Any, run_id: str, scratch: Path) -> Path | None:
    """The proof the run holds (anchor/proof.anchor.json), downloaded into `scratch`, or None."""
    from anchor.mlflow.reading import translated

    try:
        names = {info.path for info in client.list_artifacts(run_id, PROOF_FOLDER)}
        if PROOF_ARTIFACT not in names:
            return None
        return Path(client.download_artifacts(run_id, PROOF_ARTIFACT, str(scratch)))
    except Exception as exc:  # noqa: BLE001 - MLflow's and requests' errors alike, typed
        raise translated(exc, client, f"run {run_id}: its proof") from None


def _write_back(
    client: Any, run_id: str, proof: ProofFile | PendingProof, proof_path: Path | None, superseded: Path | None
) -> None:
    """The proof into the run (the earlier one kept under anchor/superseded/), then the tags that index it
    (`proof_path` None: the run holds the proof already, its tags only are written)."""
    from anchor.mlflow.reading import translated
    from anchor.proof.file import ProofFile

    try:
        if superseded is not None:
            client.log_artifact(run_id, str(superseded), f"{PROOF_FOLDER}/superseded")
        if proof_path is not None:
            client.log_artifact(run_id, str(proof_path), PROOF_FOLDER)
        anchored = isinstance(proof, ProofFile)
        client.set_tag(run_id, TAG_DIGEST, proof.manifest_digest)
        client.set_tag(run_id, TAG_STATE, "anchored" if anchored else "pending")
        if isinstance(proof, ProofFile):
            client.set_tag(run_id, TAG_TX, proof.anchor.tx_hash)
    except Exception as exc:  # noqa: BLE001
        raise translated(exc, client, f"run {run_id}: writing its proof back") from None


def stamp_run(
    run_id: str,
    *,
    tracking_uri: str | None = None,
    stamper: Stamper | None = None,
    settings: Settings | None = None,
    services: list[str] | None = None,
    allow_running: bool = False,
    restamp: bool = False,
    progress: Progress | None = None,
) -> RunStamped:
    """Anchor what run `run_id` holds now (its record, artifacts and logged models), through `stamper`
    (default `Stamper.from_settings(settings, services)`: services if configured, else the key here),
    and write the proof back into the run. A run stamped before with the same contents is left as it is.
    A run still RUNNING is refused unless `allow_running` (then its manifest says RUNNING).

    A run that had ended when it was stamped and changed since is refused (`Tampered`, every change
    named, nothing written) unless `restamp`: a routine re-stamp must never anchor an edit unseen. A
    re-stamp (asked, or of a run stamped while RUNNING) binds the superseded proof's digest and the
    change list in the new manifest, so the verdict says what the earlier stamp held."""
    from anchor.anchoring.stamper import Stamper
    from anchor.manifest.mlflow_run import contents
    from anchor.mlflow.changes import run_changes
    from anchor.proof.file import load_any, write_proof

    settings = _settings(settings)
    client = client_for(tracking_uri)
    run = get_run(client, run_id)
    if run.info.status in ("RUNNING", "SCHEDULED") and not allow_running:
        raise BadInput(
            f"run {run_id} is {run.info.status}: stamp it when it ends (or allow_running /"
            " --allow-running, said in its verdict); nothing was written",
            detail={"field": "run_id"},
        )
    if run.info.lifecycle_stage == "deleted":
        raise BadInput(f"run {run_id} is deleted: restore it first; nothing was written", detail={"field": "run_id"})
    bound = max_artifact_bytes()
    with scratch_dir() as tmp:
        scratch = Path(tmp)
        read = read_run(client, run_id, scratch, max_artifact_bytes=bound, progress=progress, run=run)
        manifest = read.manifest
        (scratch / "held").mkdir()
        held = _run_proof(client, run_id, scratch / "held")
        earlier = load_any(held) if held is not None else None
        changes: list[str] = []
        if earlier is not None:
            if contents(earlier.manifest) == manifest.identity():
                if read.tags.get(TAG_DIGEST) != earlier.manifest_digest:  # the index only: the proof holds
                    _write_back(client, run_id, earlier, None, None)
                return _unchanged(run_id, earlier, _kept(settings, run_id))
            changes = run_changes(
                contents(earlier.manifest), _listing_of(earlier), manifest.identity(), read.tree.files_json()
            ) or ["the run's manifest differs from the anchored one"]
            if earlier.manifest.get("status") not in ("RUNNING", "SCHEDULED") and not restamp:
                raise Tampered(
                    f"run {run_id} changed since its last stamp ({_count(changes)}); nothing was anchored or"
                    f" written: `anchor mlflow stamp {run_id} --restamp` (restamp=True) anchors it anew, these"
                    " changes recorded in its manifest",
                    detail={
                        "run_id": run_id,
                        "changes": changes,
                        "anchored": earlier.manifest_digest,
                        "computed": "0x" + manifest.digest.hex(),
                    },
                )
            manifest = manifest.restamped(earlier.manifest_digest, changes)
        digest = "0x" + manifest.digest.hex()
        proof_out = scratch / "out" / "proof.anchor.json"
        proof_out.parent.mkdir()
        own = stamper or Stamper.from_settings(settings, services)
        try:
            stamped = own._stamp_identity(manifest.identity(), proof_out, read.tree, read.annotations())
        finally:
            if stamper is None:
                own.close()
        superseded = None
        if earlier is not None:
            superseded = scratch / "held" / f"{earlier.manifest_digest}.anchor.json"
            shutil.copyfile(held, superseded)  # type: ignore[arg-type]
        _write_back(client, run_id, stamped.proof, proof_out, superseded)
        kept = _kept(settings, run_id)
        if kept is not None:
            kept.parent.mkdir(parents=True, exist_ok=True)
            write_proof(stamped.proof, kept)
    return _outcome(run_id, digest, stamped, kept, earlier, read, tuple(changes))


def _count(changes: list[str] | tuple[str, ...]) -> str:
    return f"{len(changes)} change{'s' if len(changes) != 1 else ''}"


def _listing_of(proof: ProofFile | PendingProof) -> list[ListedFile] | None:
    return None if proof.files is None else list(proof.files)


def max_artifact_bytes() -> int:
    """The bound on one artifact or model file (ANCHOR_MLFLOW_MAX_ARTIFACT_BYTES), read when used (the
    bridge is not handed the settings model yet)."""
    from anchor.settings.model import Environment

    return Environment.load().mlflow_max_artifact_bytes


def _unchanged(run_id: str, proof: ProofFile | PendingProof, kept: Path | None) -> RunStamped:
    from anchor.proof.file import ProofFile

    digest = proof.manifest_digest
    if isinstance(proof, ProofFile):
        return RunStamped(
            run_id,
            digest,
            "anchored",
            True,
            proof.anchor.tx_hash,
            proof.anchor.block_number,
            kept,
            running=proof.manifest.get("status") == "RUNNING",
        )
    return RunStamped(run_id, digest, "pending", True, proof=kept, running=proof.manifest.get("status") == "RUNNING")


def _outcome(
    run_id: str,
    digest: str,
    stamped: Stamped,
    kept: Path | None,
    earlier: ProofFile | PendingProof | None,
    read: RunRead,
    changes: tuple[str, ...],
) -> RunStamped:
    from anchor.proof.file import ProofFile

    proof = stamped.proof
    superseded = earlier.manifest_digest if earlier is not None else None
    tx, block = (proof.anchor.tx_hash, proof.anchor.block_number) if isinstance(proof, ProofFile) else (None, None)
    return RunStamped(
        run_id,
        digest,
        stamped.state,
        False,
        tx,
        block,
        kept,
        stamped,
        superseded,
        read.manifest.status == "RUNNING",
        changes,
    )


def upgrade_run(
    run_id: str,
    *,
    tracking_uri: str | None = None,
    settings: Settings | None = None,
    services: list[str] | None = None,
) -> Upgraded:
    """Complete a run's pending proof from its services' anchors (each checked against the chain first)
    and write it back into the run; `NotAnchored` if the run holds no proof."""
    from anchor.anchoring.stamper import Stamper
    from anchor.proof.file import load_any, write_proof

    settings = _settings(settings)
    client = client_for(tracking_uri)
    get_run(client, run_id)
    with scratch_dir() as tmp:
        held = _run_proof(client, run_id, Path(tmp))
        if held is None:
            raise NotAnchored(
                f"run {run_id} holds no proof ({PROOF_ARTIFACT}): `anchor mlflow stamp {run_id}`",
                detail={"run_id": run_id},
            )
        with Stamper.from_settings(settings, services) as stamper:
            outcome = stamper.upgrade(held)
        if outcome.added:
            proof = load_any(held)
            _write_back(client, run_id, proof, held, None)
            kept = _kept(settings, run_id)
            if kept is not None:
                kept.parent.mkdir(parents=True, exist_ok=True)
                write_proof(proof, kept)
    return outcome


def verify_run(
    run_id: str,
    *,
    tracking_uri: str | None = None,
    proof: Path | None = None,
    policy: Policy | None = None,
    verifier: Verifier | None = None,
    settings: Settings | None = None,
    require: str = "any",
    allow_deleted: bool = False,
    progress: Progress | None = None,
) -> RunVerification:
    """The verdict on run `run_id` as it is now: re-read whole, compared with what its proof (the run's
    own, or `proof`) anchored, every difference named (`Tampered`), then the one Verifier's checklist on
    the artifacts and the anchor, the policy last. Raises the typed error of the first check that fails.

    A deleted run (hidden from its experiment, still in the store) fails the policy (`PolicyMismatch`,
    exit 10) unless `allow_deleted`: a trial hidden after the fact is not quietly "verified". A run
    stamped more than once says how many times, and what its earlier stamp held of what changed."""
    from anchor.library.verifier import Verifier
    from anchor.proof.file import load_any

    settings = _settings(settings)
    client = client_for(tracking_uri)
    own = verifier or Verifier.from_settings(settings)
    with scratch_dir() as tmp:
        scratch = Path(tmp)
        read = read_run(client, run_id, scratch, max_artifact_bytes=max_artifact_bytes(), progress=progress)
        (scratch / "held").mkdir()
        proof_path = proof if proof is not None else _run_proof(client, run_id, scratch / "held")
        if proof_path is None:
            raise NotAnchored(
                f"run {run_id} holds no proof ({PROOF_ARTIFACT}) and none was given (--proof):"
                f" `anchor mlflow stamp {run_id}`{_deleted_note(read)}",
                detail={"run_id": run_id},
            )
        found = load_any(proof_path)
        if found.manifest.get("kind") != "mlflow_run":
            raise BadInput(
                f"{proof_path}: a {found.manifest.get('kind')!r} proof, not an MLflow run's", detail={"field": "proof"}
            )
        _compare(run_id, found, read)
        if proof is None:
            _against_kept(settings, run_id, found)
        verdict = own.verify(read.artifacts, proof=proof_path, policy=policy, require=require)
        stamps, earlier = _history(client, run_id, found, scratch / "history", own)

    def count(part: str) -> int:
        listed = found.manifest.get(part)
        return len(listed) if isinstance(listed, list) else 0

    result = RunVerification(
        run_id,
        verdict,
        str(found.manifest["status"]),
        count("params"),
        count("metrics"),
        count("tags"),
        "the run's anchor/proof.anchor.json" if proof is None else str(proof),
        read.lifecycle_stage,
        count("logged_models"),
        stamps,
        earlier,
        dict(found.manifest),
    )
    if read.lifecycle_stage == "deleted" and not allow_deleted:
        raise PolicyMismatch(
            f"run {run_id} is deleted (hidden from its experiment; the store still holds it): its proof holds,"
            f" {result.status} as anchored in block {verdict.anchored_block}, but a deleted run is not accepted"
            " unless --allow-deleted (allow_deleted=True)",
            detail={"run_id": run_id, "lifecycle_stage": "deleted", "anchored_block": verdict.anchored_block},
        )
    return result


def _deleted_note(read: RunRead) -> str:
    return " (the run is deleted: hidden from its experiment)" if read.lifecycle_stage == "deleted" else ""


def _compare(run_id: str, found: ProofFile | PendingProof, read: RunRead) -> None:
    """`Tampered` naming every difference between the run now and what the proof anchored (its re-stamp
    record aside: that says what the stamp was, not what the run held)."""
    from anchor.manifest.mlflow_run import contents
    from anchor.mlflow.changes import run_changes

    now = read.manifest.identity()
    if contents(found.manifest) == now:
        return
    changes = run_changes(contents(found.manifest), _listing_of(found), now, read.tree.files_json())
    changes = changes or ["the run's manifest differs from the anchored one"]
    raise Tampered(
        f"run {run_id} changed since it was stamped ({_count(changes)}){_deleted_note(read)}",
        detail={
            "run_id": run_id,
            "changes": changes,
            "anchored": found.manifest_digest,
            "computed": "0x" + read.manifest.digest.hex(),
            **({"lifecycle_stage": "deleted"} if read.lifecycle_stage == "deleted" else {}),
        },
    )


def _history(
    client: Any, run_id: str, found: ProofFile | PendingProof, scratch: Path, verifier: Verifier
) -> tuple[int, EarlierStamp | None]:
    """How many times the run was stamped (this proof, and each earlier one a re-stamp record names), and
    the stamp this one superseded: its block from its own proof (kept in the run, its digest the one
    bound, its anchor checked on chain), and what it held of each change recorded."""
    from anchor.manifest.identity import manifest_digest
    from anchor.manifest.mlflow_run import contents
    from anchor.mlflow.changes import changes_between
    from anchor.mlflow.reading import translated
    from anchor.proof.file import ProofFile, load_any

    if not found.manifest.get("restamp"):
        return 1, None
    folder = f"{PROOF_FOLDER}/superseded"
    try:
        names = {info.path for info in client.list_artifacts(run_id, folder)}
        scratch.mkdir()
        if names:
            client.download_artifacts(run_id, folder, str(scratch))
    except Exception as exc:  # noqa: BLE001
        raise translated(exc, client, f"run {run_id}: its earlier proofs") from None
    stamps, first, seen = 1, None, set()
    current: ProofFile | PendingProof | None = found
    while (
        current is not None
        and isinstance(record := current.manifest.get("restamp"), dict)
        and record
        and record["supersedes"] not in seen
    ):
        digest = record["supersedes"]
        seen.add(digest)
        stamps += 1
        where = f"{folder}/{digest}.anchor.json"
        path = scratch / "superseded" / f"{digest}.anchor.json"  # MLflow downloads a folder by its last name
        earlier, problem = None, None
        if where not in names:
            problem = f"its proof is gone from the run ({where})"
        else:
            try:
                earlier = load_any(path)
                if "0x" + manifest_digest(earlier.manifest).hex() != digest:
                    earlier, problem = None, f"{where} is not the proof the re-stamp names"
            except AnchorError as exc:
                problem = f"{where}: {exc.message}"
        if first is None:
            block = None
            if isinstance(earlier, ProofFile):
                try:
                    block = verifier.verify_proof(earlier).anchored_block
                except AnchorError as exc:
                    problem = f"its anchor did not verify: {exc.message}"
            held = (
                ()
                if earlier is None
                else tuple(
                    change.held
                    for change in changes_between(
                        contents(earlier.manifest),
                        _listing_of(earlier),
                        contents(current.manifest),
                        _listing_of(current),
                    )
                )
            )
            first = EarlierStamp(
                digest, tuple(record["changes"]), held, block, None if earlier is None else where, problem
            )
        current = earlier
    return stamps, first


def _against_kept(settings: Settings, run_id: str, found: ProofFile | PendingProof) -> None:
    """The run's proof against the copy this data dir kept when it stamped the run: a run stamped again
    elsewhere (its store rewritten, then re-stamped with another key) holds a proof that verifies, of
    other contents; that is said, not passed over."""
    from anchor.proof.file import load_any

    kept = _kept(settings, run_id)
    if kept is None or not kept.is_file():
        return
    try:
        ours = load_any(kept)
    except AnchorError:
        return
    if ours.manifest_digest != found.manifest_digest:
        raise Tampered(
            f"run {run_id}: the proof it holds anchors {found.manifest_digest}, but this data dir stamped"
            f" {ours.manifest_digest} (kept at {kept}): the run was stamped again elsewhere; give --proof"
            " to verify against either",
            detail={
                "run_id": run_id,
                "kept": str(kept),
                "anchored": ours.manifest_digest,
                "computed": found.manifest_digest,
            },
        )


@dataclass
class AnchoredRun:
    """The run of an `anchored_run` block: MLflow's `ActiveRun` (`.run`, and its attributes, `.info`,
    `.data`), and after the block, what the stamp did (`.stamped`)."""

    run: ActiveRun
    stamped: RunStamped | None = None
    error: AnchorError | None = field(default=None)
    """Why the stamp failed, when the block itself raised (that error is the one re-raised)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.run, name)


@contextmanager
def anchored_run(
    *,
    settings: Settings | None = None,
    services: list[str] | None = None,
    run_id: str | None = None,
    experiment_id: str | None = None,
    run_name: str | None = None,
    nested: bool = False,
    parent_run_id: str | None = None,
    tags: Mapping[str, str] | None = None,
    description: str | None = None,
    log_system_metrics: bool | None = None,
) -> Iterator[AnchoredRun]:
    """`mlflow.start_run(...)` with the same keyword arguments, stamped when the block ends (`stamp_run`):
    through services when configured (pending at once: a training job never waits for confirmations;
    `anchor mlflow upgrade` completes it), else with the key here. A block that raises ends its run
    FAILED, is stamped all the same (a failed trial is a trial), and its own exception is the one that
    propagates."""
    import mlflow

    active = mlflow.start_run(
        run_id=run_id,
        experiment_id=experiment_id,
        run_name=run_name,
        nested=nested,
        parent_run_id=parent_run_id,
        tags=None if tags is None else dict(tags),
        description=description,
        log_system_metrics=log_system_metrics,
    )
    handle = AnchoredRun(active)
    uri = mlflow.get_tracking_uri()
    failed = True
    try:
        yield handle
        failed = False
    finally:
        mlflow.end_run("FAILED" if failed else "FINISHED")
        try:
            handle.stamped = stamp_run(active.info.run_id, tracking_uri=uri, settings=settings, services=services)
        except AnchorError as exc:
            if not failed:
                raise
            handle.error = exc  # the block's own exception is the one that propagates
