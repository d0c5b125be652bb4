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
from typing import Any

from anchor.errors import Conflict
from anchor.ingest.untrusted_json import MAX_ANNOTATION_BYTES, check_encodable
from anchor.journal.store import Journal, index_files, now
from anchor.manifest.identity import manifest_digest, validate_identity


@dataclass(frozen=True, slots=True)
class Submission:
    identity: dict[str, Any]
    payload: dict[str, Any]  # {"files": [...]} and/or {"annotations": {...}}: what proofs carry
    idempotency_key: str | None = None
    proof_path: Path | None = None


@dataclass(frozen=True, slots=True)
class Submitted:
    item_id: int
    digest: bytes
    state: str
    duplicate: bool


def submit_many(journal: Journal, chain_id: int, submissions: Sequence[Submission]) -> list[Submitted]:
    """Record submissions in one durable transaction. Raises `Conflict` on a reused idempotency key."""
    prepared = []
    for sub in submissions:
        identity = validate_identity(sub.identity)
        check_encodable(identity, "manifest")
        check_encodable(sub.payload.get("annotations", {}), "annotations", max_bytes=MAX_ANNOTATION_BYTES)
        prepared.append((sub, identity, manifest_digest(identity)))
    results = []
    with journal.tx() as db:
        for sub, identity, digest in prepared:
            if sub.idempotency_key is not None:
                row = db.execute(
                    "SELECT id, digest, state, payload FROM items WHERE chain_id = ? AND idempotency_key = ?",
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
                    results.append(Submitted(row["id"], digest, row["state"], True))
                    continue
            row = db.execute(
                "SELECT id, state FROM items WHERE chain_id = ? AND digest = ?", (chain_id, digest)
            ).fetchone()
            if row is not None:
                results.append(Submitted(row["id"], digest, row["state"], True))
                continue
            cursor = db.execute(
                "INSERT INTO items (chain_id, digest, kind, identity, payload, idempotency_key, proof_path, state,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?)",
                (
                    chain_id, digest, identity["kind"], json.dumps(identity, sort_keys=True),
                    json.dumps(sub.payload, sort_keys=True), sub.idempotency_key,
                    None if sub.proof_path is None else str(sub.proof_path), now(),
                ),
            )  # fmt: skip
            item_id = int(cursor.lastrowid or 0)
            index_files(db, item_id, sub.payload.get("files") or [])
            results.append(Submitted(item_id, digest, "pending", False))
    return results


def submit(journal: Journal, chain_id: int, submission: Submission) -> Submitted:
    return submit_many(journal, chain_id, [submission])[0]
