"""The dispatcher: the one door for mission work (`anchor mission submit`, `POST /v1/missions`).

It accepts exactly: the mission (its document and the digest the submitter claims for it), the data
snapshot (a reference and its SHA-256), the image (by digest, never a tag), an output identity not
used before, a resource profile from the declared set, and optionally a resume pair (a bundle
reference and its manifest digest, both or neither). Everything is checked before anything is
written, and each refusal is a typed error naming the field:

| refused | error |
|---|---|
| an image by tag (`name:tag`, or no `@sha256:`) | `BadInput` field `image` |
| a missing or malformed digest | `BadInput` field `mission.digest` / `snapshot.sha256` |
| a mission digest that is not the one we compute | `Tampered` field `mission.digest` |
| a snapshot that is a local file whose SHA-256 is not the claimed one | `Tampered` field `snapshot.sha256` |
| an output identity already used | `Conflict` field `output` |
| an unknown resource profile | `BadInput` field `profile` |
| half a resume pair | `BadInput` field `resume` |
| a resume pin that is not anchored here | `NotAnchored` field `resume.digest` |
| a resume pin whose mission, snapshot, image or policy differs from the new submission | `BadInput` naming it |

Accepted submissions are rows of `<data dir>/missions.sqlite`, their output identities claimed in the
journal (unique across every replica that shares it, anchor.journal.submit.claim_output), the
mission document kept with them.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

from pydantic import BaseModel, ConfigDict, Field

from anchor.errors import BadInput, Conflict, NotAnchored, Tampered, did_you_mean
from anchor.files import PRIVATE_FILE, private_dir
from anchor.layout import DataDir
from anchor.manifest.mission import Mission
from anchor.manifest.validation import validated

if TYPE_CHECKING:
    from anchor.settings.session import Settings

IMAGE = re.compile(r"^[a-z0-9][a-z0-9._/:-]*@sha256:[0-9a-f]{64}$")
HEX64 = re.compile(r"^[0-9a-f]{64}$")

PROFILES: dict[str, dict[str, str]] = {
    "small": {"cpu": "1", "memory": "2Gi"},
    "medium": {"cpu": "2", "memory": "8Gi"},
    "large": {"cpu": "4", "memory": "16Gi"},
}
"""The declared resource profiles: requests = limits, so every run of a profile has the same bounds."""


class BudgetJson(TypedDict):
    minutes: int
    attempts: int


class StopRuleJson(TypedDict):
    metric: str
    mode: Literal["max", "min"]
    target: str


class MissionDocument(TypedDict):
    """A mission file's identity (anchor.manifest.mission.Mission, as JSON): validated when it was read."""

    kind: Literal["mission"]
    version: int
    hypothesis: str
    covers: dict[str, str]
    budget: BudgetJson
    stop_rules: list[StopRuleJson]
    evaluator_policy_sha256: str
    command: str


class MissionPart(TypedDict):
    """The mission as a record holds it: where it came from, its digest, and its document (its manifest's
    identity, anchor.manifest.mission)."""

    ref: str
    digest: str
    document: MissionDocument


class SnapshotPart(TypedDict):
    ref: str
    sha256: str


class ResumePin(TypedDict):
    """The result bundle a mission resumes from, and the digest its proof must show."""

    bundle: str | None
    digest: str


class MissionRecord(TypedDict):
    """What `check` accepts and `submit` stores (JSON in the missions table): everything a runner needs,
    each digest computed or checked here, never adopted."""

    mission: MissionPart
    mission_sha256: str
    snapshot: SnapshotPart
    image: str
    output: str
    profile: dict[str, str]
    """The resource profile's name and its bounds (`PROFILES`)."""
    resume: ResumePin | None
    evaluator_policy_sha256: str


class StoredMission(MissionRecord):
    """A stored record, with the row's id and when it was submitted (the `submitted` milestone)."""

    id: int
    submitted_at: str


class Ref(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")
    ref: str = Field(min_length=1, max_length=1024)


class MissionRef(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")
    ref: str = Field(min_length=1, max_length=1024)
    digest: str | None = None
    document: dict[str, Any]


class SnapshotRef(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")
    ref: str = Field(min_length=1, max_length=1024)
    sha256: str | None = None


class ResumeRef(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")
    bundle: str | None = Field(default=None, min_length=1, max_length=1024)
    digest: str | None = None


class SubmissionRequest(BaseModel):
    """What a client sends (the API body; the CLI builds the same)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")
    mission: MissionRef
    snapshot: SnapshotRef
    image: str = Field(min_length=1, max_length=512)
    output: str = Field(min_length=1, max_length=256)
    profile: str = Field(min_length=1, max_length=64)
    resume: ResumeRef | None = None


def _hex(value: str | None, field: str) -> str:
    body = (value or "").lower().removeprefix("0x").removeprefix("sha256:")
    if not value:
        raise BadInput(f"{field}: missing (a digest is required, never taken from elsewhere)", detail={"field": field})
    if not HEX64.match(body):
        raise BadInput(f"{field}: {value!r} is not 64 hex digits", detail={"field": field})
    return body


def check(
    request: SubmissionRequest,
    data_dir: Path,
    verify_pin: Any = None,
    local_files: bool = True,
    journal_url: str | None = None,
) -> MissionRecord:
    """Every check of the door, in order; returns the record to store. Writes nothing. `local_files`:
    a snapshot reference that is a local file is hashed and compared (the CLI); the service never
    opens a path a client names (it would leak which files exist, and their digests)."""
    if not IMAGE.match(request.image):
        raise BadInput(
            f"image: {request.image!r} is not pinned by digest (name@sha256:<64 hex>); a tag can move",
            detail={"field": "image"},
        )
    mission = validated(Mission, request.mission.document, "mission.document")
    claimed = _hex(request.mission.digest, "mission.digest")
    if mission.digest.hex() != claimed:
        raise Tampered(
            f"mission.digest: 0x{claimed} is not the digest of the mission sent (0x{mission.digest.hex()})",
            detail={"field": "mission.digest", "computed": "0x" + mission.digest.hex()},
        )
    snapshot = _hex(request.snapshot.sha256, "snapshot.sha256")
    local = Path(request.snapshot.ref)
    if local_files and "://" not in request.snapshot.ref and local.is_file():
        with open(local, "rb") as handle:
            actual = hashlib.file_digest(handle, "sha256").hexdigest()
        if actual != snapshot:
            raise Tampered(
                f"snapshot.sha256: {request.snapshot.ref} hashes to {actual}, not the claimed {snapshot}",
                detail={"field": "snapshot.sha256", "computed": actual},
            )
    if request.profile not in PROFILES:
        raise BadInput(
            f"profile: {request.profile!r} is not a declared resource profile ({', '.join(PROFILES)})"
            + did_you_mean(request.profile, PROFILES),
            detail={"field": "profile"},
        )
    resume: ResumePin | None = None
    if request.resume is not None:
        if (request.resume.bundle is None) != (request.resume.digest is None):
            raise BadInput(
                "resume: a resume pin is a bundle and its digest, both or neither", detail={"field": "resume"}
            )
        if request.resume.bundle is not None:
            pin = _hex(request.resume.digest, "resume.digest")
            from anchor.settings.session import Settings

            stored = Settings(data_dir=data_dir, journal_url=journal_url)  # where a pinned bundle's proof is kept
            _check_pin(pin, stored, verify_pin, mission.sha256(), mission, snapshot, request.image)
            resume = {"bundle": request.resume.bundle, "digest": pin}
    _check_output(request.output)
    taken = _output_taken(data_dir, request.output)
    if taken is not None:
        raise Conflict(
            f"output: {request.output!r} is already the output of a submitted mission"
            if taken == request.output
            else f"output: {request.output!r} would have the folder of"
            f" {taken!r}, the output of a submitted mission ('/' is '_' in a folder's name)",
            detail={"field": "output"},
        )
    document = cast("MissionDocument", mission.identity())  # the Mission just validated, as JSON
    return {
        "mission": {"ref": request.mission.ref, "digest": "0x" + claimed, "document": document},
        "mission_sha256": mission.sha256(),
        "snapshot": {"ref": request.snapshot.ref, "sha256": snapshot},
        "image": request.image,
        "output": request.output,
        "profile": {"name": request.profile, **PROFILES[request.profile]},
        "resume": resume,
        "evaluator_policy_sha256": mission.evaluator_policy_sha256,
    }


def _check_pin(
    pin: str, settings: Settings, verify_pin: Any, mission_hash: str, mission: Mission, snapshot: str, image: str
) -> None:
    """The pinned bundle must be anchored (its proof here, verified on chain by `verify_pin`) and bind
    the same snapshot, image and evaluator policy as the new submission."""
    from anchor.anchoring.proofs import store_finder

    proof = store_finder(settings)(bytes.fromhex(pin))
    if proof is None:
        raise NotAnchored(f"resume.digest: bundle 0x{pin} is not anchored here", detail={"field": "resume.digest"})
    if proof.manifest.get("kind") != "bundle":
        raise BadInput(
            f"resume.digest: 0x{pin} is a {proof.manifest.get('kind')} manifest, not a bundle",
            detail={"field": "resume.digest"},
        )
    if verify_pin is not None:
        verify_pin(proof)  # NotAnchored / Tampered from a live chain read
    pinned = proof.manifest
    for field, new in (
        ("mission_sha256", mission_hash),
        ("data_snapshot_sha256", snapshot),
        ("image", image),
        ("evaluator_policy_sha256", mission.evaluator_policy_sha256),
    ):
        if field == "image" and pinned.get("version") == 3 and "image" not in pinned:
            continue  # it ran on a host (version 3 claims no image there): nothing to compare
        if pinned.get(field) != new:
            raise BadInput(
                f"resume: the pinned bundle's {field} is {pinned.get(field)}, the new submission's {new}",
                detail={"field": f"resume.{field}"},
            )


def _db(data_dir: Path) -> sqlite3.Connection:
    private_dir(data_dir)
    path = DataDir(data_dir).missions_db
    fresh = not path.exists()
    db = sqlite3.connect(path, timeout=30, isolation_level=None)
    if fresh:
        path.chmod(PRIVATE_FILE)
    db.execute(
        "CREATE TABLE IF NOT EXISTS missions (id INTEGER PRIMARY KEY, output TEXT NOT NULL UNIQUE,"
        " record TEXT NOT NULL, submitted_at TEXT NOT NULL)"
    )
    return db


def _check_output(output: str) -> None:
    """An output identity names one folder of its own, `missions/<output>` with `/` made `_`
    (anchor.layout): `..` would be the data dir itself, `a/../b` a name that reads as a path."""
    if any(part in ("", ".", "..") for part in output.split("/")) or not output.isprintable():
        raise BadInput(
            f"output {output!r}: expected names joined by '/', none of them empty, '.' or '..', and no"
            " control characters (e.g. team/run-7)",
            detail={"field": "output"},
        )


def _output_taken(data_dir: Path, output: str) -> str | None:
    """The submitted output whose folder (`DataDir.mission`) `output` would have: itself, or `a_b` for
    `a/b`; None if no mission has it."""
    layout = DataDir(data_dir)
    if not layout.missions_db.exists():
        return None
    db = _db(data_dir)
    try:
        outputs = [str(row[0]) for row in db.execute("SELECT output FROM missions")]
    finally:
        db.close()
    if output in outputs:
        return output
    return next((o for o in outputs if layout.mission(o) == layout.mission(output)), None)


def submit(
    request: SubmissionRequest,
    data_dir: Path,
    verify_pin: Any = None,
    local_files: bool = True,
    journal_url: str | None = None,
) -> StoredMission:
    """Check, then store: returns the stored record with its id and time. The output identity is
    claimed first in the journal (`journal_url`, else the data dir's), which replicas of a service
    share: unique across them, not only in this data dir; the local table's uniqueness stays too."""
    import socket

    from anchor.journal.backends import open_journal
    from anchor.journal.submit import claim_output, release_output

    record = check(request, data_dir, verify_pin, local_files, journal_url)
    journal = open_journal(data_dir, journal_url)
    try:
        claim_output(journal, record["output"], record["mission_sha256"], f"{socket.gethostname()}:{data_dir}")
        try:
            return _store(data_dir, record)
        except BaseException:
            release_output(journal, record["output"])  # nothing of it stays claimed, or stored
            raise
    finally:
        journal.close()


def pin_verifier(settings: Settings) -> Callable[[Any], None]:
    """What every door checks a resume pin with: its proof verifies against a live read of the chain,
    under the settings' quorum (anchor.readback.checklist.leaned_on)."""

    def verify(proof: Any) -> None:
        from anchor.readback.checklist import leaned_on

        leaned_on(proof, settings)

    return verify


def submit_mission(
    settings: Settings,
    mission: Path,
    *,
    snapshot: str,
    image: str,
    output: str,
    mission_digest: str | None = None,
    snapshot_sha256: str | None = None,
    profile: str = "small",
    resume_bundle: str | None = None,
    resume_digest: str | None = None,
) -> StoredMission:
    """`anchor mission submit`: the mission file read and typed, the request built from what was given
    and checked (`submit`); returns the stored record. Raises `BadInput` naming the first field missing
    or wrong, before anything is stored."""
    from anchor.manifest.mission import load_mission

    for field, value in (("snapshot", snapshot), ("image", image), ("output", output)):
        if not value:
            raise BadInput(f"--{field} is required", detail={"field": field})
    document, _ = load_mission(mission)
    resume = (
        None if resume_bundle is None and resume_digest is None else {"bundle": resume_bundle, "digest": resume_digest}
    )
    request = SubmissionRequest.model_validate(
        {
            "mission": {"ref": str(mission), "digest": mission_digest, "document": document.identity()},
            "snapshot": {"ref": snapshot, "sha256": snapshot_sha256},
            "image": image,
            "output": output,
            "profile": profile,
            "resume": resume,
        }
    )
    return submit(request, settings.data_dir, pin_verifier(settings), journal_url=settings.journal_url)


def _store(data_dir: Path, record: MissionRecord) -> StoredMission:
    db = _db(data_dir)
    try:
        when = datetime.now(UTC).isoformat(timespec="milliseconds")  # the `submitted` milestone
        try:
            cursor = db.execute(
                "INSERT INTO missions (output, record, submitted_at) VALUES (?, ?, ?)",
                (record["output"], json.dumps(record, sort_keys=True), when),
            )
        except sqlite3.IntegrityError:
            raise Conflict(
                f"output: {record['output']!r} is already the output of a submitted mission", detail={"field": "output"}
            ) from None
        assert cursor.lastrowid is not None  # an INSERT's row
        return {"id": cursor.lastrowid, "submitted_at": when, **record}
    finally:
        db.close()


def dispatched(data_dir: Path, output: str) -> MissionRecord | None:
    """The stored record of the mission whose output identity is `output`, if one was accepted."""
    if not DataDir(data_dir).missions_db.exists():
        return None
    db = _db(data_dir)
    try:
        row = db.execute("SELECT record FROM missions WHERE output = ?", (output,)).fetchone()
    finally:
        db.close()
    return None if row is None else cast("MissionRecord", json.loads(row[0]))  # as `_store` wrote it


def submissions(data_dir: Path) -> int:
    """How many submissions are stored (what the refusal tests check stays unchanged)."""
    if not DataDir(data_dir).missions_db.exists():
        return 0
    db = _db(data_dir)
    try:
        return int(db.execute("SELECT count(*) FROM missions").fetchone()[0])
    finally:
        db.close()
