"""Idempotent submission: the same manifest twice is one record; one idempotency key with other
content (manifest or annotations) is a conflict that reveals nothing of the first submission. The
digest is always computed here, from the identity, and everything accepted is checked to be writable
into a proof file later (valid Unicode, bounded depth and size), so no accepted item can fail at
confirmation."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from anchor.errors import Conflict
from anchor.ingest.untrusted_json import MAX_ANNOTATION_BYTES, check_encodable
from anchor.journal.store import Journal, index_files, now
from anchor.manifest.identity import manifest_digest
from anchor.manifest.listed import ListedFile
from anchor.record import Value


class Payload(TypedDict, total=False):
    """What a journaled manifest's proofs will carry beside it (the `items.payload` JSON)."""

    files: list[ListedFile]
    """The listing, when the manifest is a file tree's."""
    annotations: dict[str, object]
    """What the submitter asked to be written beside the manifest, bound to nothing."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Submission(Value):
    identity: dict[str, Any]
    payload: Payload
    idempotency_key: str | None = None
    proof_path: Path | None = None
    own_annotations: bool = False
    """A submission from a client of the service: if the manifest is already journaled with other
    annotations, it is refused (409) rather than answered with someone else's display data."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Submitted(Value):
    item_id: int
    digest: bytes
    state: str
    duplicate: bool
    created_at: float = 0.0
    """When the item was first journaled (a repeat keeps the first time): what a receipt signs."""


def submit_many(journal: Journal, chain_id: int, submissions: Sequence[Submission]) -> list[Submitted]:
    """Record submissions in one durable transaction. Raises `Conflict` on a reused idempotency key."""
    # the kinds' models are built on first use, not at import (the CLI's import budget)
    from anchor.manifest.decode import validate_identity

    prepared = []
    for sub in submissions:
        identity = validate_identity(sub.identity)
        check_encodable(identity, "manifest")
        check_encodable(sub.payload.get("annotations", {}), "annotations", max_bytes=MAX_ANNOTATION_BYTES)
        prepared.append((sub, identity, manifest_digest(identity)))
    for attempt in range(3):
        try:
            return _record(journal, chain_id, prepared)
        except journal.IntegrityError:  # a concurrent submission of the same manifest (PostgreSQL)
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _record(
    journal: Journal, chain_id: int, prepared: list[tuple[Submission, dict[str, Any], bytes]]
) -> list[Submitted]:
    results = []
    with journal.tx(submission=True) as db:
        for sub, identity, digest in prepared:
            if sub.idempotency_key is not None:
                row = db.execute(
                    "SELECT id, digest, state, payload, created_at FROM items"
                    " WHERE chain_id = ? AND idempotency_key = ?",
                    (chain_id, sub.idempotency_key),
                ).fetchone()
                if row is not None and (
                    bytes(row["digest"]) != digest
                    or json.loads(row["payload"]).get("annotations", {}) != sub.payload.get("annotations", {})
                ):
                    raise Conflict(  # nothing of the earlier submission: the key may be someone's guess
                        "this idempotency key was already used for other content", detail={"field": "idempotency_key"}
                    )
                if row is not None:
                    _add_proof_path(db, row["id"], sub.proof_path)
                    results.append(Submitted(row["id"], digest, row["state"], True, float(row["created_at"])))
                    continue
            row = db.execute(
                "SELECT id, state, payload, created_at FROM items WHERE chain_id = ? AND digest = ?", (chain_id, digest)
            ).fetchone()
            given = sub.payload.get("annotations") or {}
            if (
                row is not None
                and sub.own_annotations
                and given
                and given != json.loads(row["payload"]).get("annotations", {})
            ):
                raise Conflict(  # nothing of the earlier submission's annotations is revealed
                    "this manifest was already submitted with other annotations: they stay as first given (display"
                    " data only; the anchor is the same); submit it without annotations for its receipt",
                    detail={"field": "annotations"},
                )
            if row is not None:  # the same manifest from another place: its proof goes there too
                _add_proof_path(db, row["id"], sub.proof_path)
                results.append(Submitted(row["id"], digest, row["state"], True, float(row["created_at"])))
                continue
            created = now()
            inserted = db.execute(
                "INSERT INTO items (chain_id, digest, kind, identity, payload, idempotency_key, state, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, 'pending', ?) RETURNING id",  # proof paths: the proof_paths table
                (
                    chain_id,
                    digest,
                    identity["kind"],
                    json.dumps(identity, sort_keys=True),
                    json.dumps(sub.payload, sort_keys=True),
                    sub.idempotency_key,
                    created,
                ),
            )
            item_id = int(inserted.fetchone()[0])
            _add_proof_path(db, item_id, sub.proof_path)
            index_files(db, item_id, sub.payload.get("files") or [])
            results.append(Submitted(item_id, digest, "pending", False, created))
    return results


def _add_proof_path(db: Any, item_id: int, path: Path | None) -> None:
    if path is not None:
        db.execute("INSERT INTO proof_paths (item_id, path) VALUES (?, ?) ON CONFLICT DO NOTHING", (item_id, str(path)))


def proof_paths(db: Any, item_ids: Sequence[int]) -> dict[int, list[Path]]:
    """Where each item's proof is to be written, besides the data directory's own copy."""
    out: dict[int, list[Path]] = {}
    for item_id in item_ids:
        rows = db.execute("SELECT path FROM proof_paths WHERE item_id = ? ORDER BY rowid", (item_id,))
        out[item_id] = [Path(row[0]) for row in rows]
    return out


def submit(journal: Journal, chain_id: int, submission: Submission) -> Submitted:
    return submit_many(journal, chain_id, [submission])[0]


def claim_output(journal: Journal, output: str, mission_sha256: str, by: str) -> None:
    """Claim a mission's output identity for good; `Conflict` naming it if anyone sharing this journal
    claimed it before (the insert is the check: two replicas racing for one cannot both win)."""
    with journal.tx() as db:
        taken = db.execute(
            "INSERT INTO mission_outputs (output, mission_sha256, claimed_at, claimed_by) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (output) DO NOTHING RETURNING output",
            (output, mission_sha256, now(), by),
        ).fetchone()
    if taken is None:
        raise Conflict(f"output: {output!r} is already the output of a submitted mission", detail={"field": "output"})


def release_output(journal: Journal, output: str) -> None:
    """Undo `claim_output` when the submission it was for could not be stored after all."""
    with journal.tx() as db:
        db.execute("DELETE FROM mission_outputs WHERE output = ?", (output,))
