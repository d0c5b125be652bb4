"""What the journal holds, read and mended without a chain or a key: the counts and recent effects
`anchor journal status` prints, and the two verbs that settle a failed effect (`retry`, `abandon`).

The store's own queries: no settings, no proof files, no signer."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypedDict

from anchor.errors import BadInput
from anchor.journal.store import Journal, now
from anchor.record import Value


class RecentEffect(TypedDict):
    """One of the latest effects (a root or a lineage record the registry is asked to write)."""

    id: int
    kind: str
    key: str
    state: str
    tx_hash: str | None
    block_number: int | None
    gas_used: int | None


class ProofError(TypedDict):
    """An item anchored whose proof file could not be written, and why."""

    item: int
    manifest_digest: str
    error: str


class FailedEffect(TypedDict):
    """An effect the registry refused: its reason, who sent it, whether it was abandoned."""

    id: int
    kind: str
    key: str
    reason: str
    commit: str | None
    sender: str | None
    abandoned: bool


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Status(Value):
    chain_id: int
    items: dict[str, int]
    effects: dict[str, int]
    recent: list[RecentEffect]
    proof_errors: list[ProofError]
    failed: list[FailedEffect]
    """Effects the registry refused, parked with their reason until `journal retry` or `abandon`."""

    def to_json(self) -> dict[str, object]:
        return {
            "chain_id": self.chain_id,
            "items": self.items,
            "effects": self.effects,
            "recent": self.recent,
            "proof_errors": self.proof_errors,
            "failed": self.failed,
        }


def journal_status(journal: Journal, chain_id: int, recent: int = 5) -> Status:
    """What is pending, in flight and confirmed on `chain_id`: the journal alone, no key and no write."""
    db = journal.db
    items = journal.item_counts(chain_id)
    effects = dict(
        db.execute("SELECT state, count(*) FROM effects WHERE chain_id = ? GROUP BY state", (chain_id,)).fetchall()
    )
    rows = db.execute(
        "SELECT id, kind, key, state, tx_hash, block_number, gas_used FROM effects WHERE chain_id = ?"
        " ORDER BY id DESC LIMIT ?",
        (chain_id, recent),
    ).fetchall()
    failed = db.execute(
        "SELECT id, kind, key, args, failure, abandoned_at,"
        " (SELECT sender FROM txs WHERE txs.effect_id = effects.id ORDER BY txs.id DESC LIMIT 1) AS sender"
        " FROM effects WHERE chain_id = ? AND failure IS NOT NULL ORDER BY id",
        (chain_id,),
    ).fetchall()
    unwritten = db.execute(
        "SELECT id, digest, proof_error FROM items WHERE chain_id = ? AND proof_error IS NOT NULL ORDER BY id",
        (chain_id,),
    ).fetchall()
    return Status(
        chain_id,
        {state: items.get(state, 0) for state in ("pending", "batched", "confirmed")},
        {
            **{state: effects.get(state, 0) for state in ("intent", "signed", "broadcast", "mined", "confirmed")},
            "failed": sum(1 for r in failed if r["abandoned_at"] is None),
            "abandoned": sum(1 for r in failed if r["abandoned_at"] is not None),
        },
        [
            {
                "id": r["id"],
                "kind": r["kind"],
                "key": "0x" + bytes(r["key"]).hex(),
                "state": r["state"],
                "tx_hash": None if r["tx_hash"] is None else "0x" + bytes(r["tx_hash"]).hex(),
                "block_number": r["block_number"],
                "gas_used": r["gas_used"],
            }
            for r in rows
        ],
        [
            {"item": r["id"], "manifest_digest": "0x" + bytes(r["digest"]).hex(), "error": r["proof_error"]}
            for r in unwritten
        ],
        [
            {
                "id": r["id"],
                "kind": r["kind"],
                "key": "0x" + bytes(r["key"]).hex(),
                "reason": r["failure"],
                "commit": json.loads(r["args"]).get("commit"),
                "sender": r["sender"],
                "abandoned": r["abandoned_at"] is not None,
            }
            for r in failed
        ],
    )


def journal_chains(journal: Journal) -> list[int]:
    """The chains the journal holds items or effects of, in order: what a read of the journal alone
    (`journal status`, `retry`, `abandon`) shows without asking any endpoint which chain it serves."""
    rows = journal.db.execute(
        "SELECT chain_id FROM item_counts WHERE n > 0 UNION SELECT chain_id FROM effects ORDER BY chain_id"
    ).fetchall()
    return [int(row[0]) for row in rows]


def retry_effect(journal: Journal, chain_id: int, effect_id: int) -> None:
    """Resume a failed effect from its intent (after the cause is fixed: a new signature, a
    registry). The next flush re-checks the chain before signing, so nothing is ever sent twice."""
    with journal.tx() as db:
        row = _failed_effect(db, chain_id, effect_id, "retry")
        db.execute("UPDATE txs SET state = 'dropped' WHERE effect_id = ? AND state != 'mined'", (row["id"],))
        db.execute(
            "UPDATE effects SET failure = NULL, state = 'intent', updated_at = ? WHERE id = ?", (now(), row["id"])
        )


def abandon_effect(journal: Journal, chain_id: int, effect_id: int) -> None:
    """Close a failed effect for good. Nothing is deleted: the effect, its reason and its items stay
    in the journal (status counts it as abandoned) and are never sent."""
    with journal.tx() as db:
        row = _failed_effect(db, chain_id, effect_id, "abandon")
        db.execute("UPDATE effects SET abandoned_at = ?, updated_at = ? WHERE id = ?", (now(), now(), row["id"]))


def _failed_effect(db: Any, chain_id: int, effect_id: int, verb: str) -> Any:
    row = db.execute(
        "SELECT id, failure, abandoned_at, state FROM effects WHERE id = ? AND chain_id = ?", (effect_id, chain_id)
    ).fetchone()
    if row is None:
        raise BadInput(
            f"no effect #{effect_id} on chain {chain_id} (see `anchor journal status`)", detail={"field": "id"}
        )
    if row["failure"] is None or row["abandoned_at"] is not None:
        state = "abandoned" if row["abandoned_at"] is not None else f"{row['state']}, not failed"
        done = "abandoned" if verb == "abandon" else "retried"
        raise BadInput(f"effect #{effect_id} is {state}: only a failed effect can be {done}", detail={"field": "id"})
    return row


def has_open_work(journal: Journal) -> bool:
    """Anything a flush would do: an item not yet confirmed, or an effect still to drive. Read by a
    service replica at start-up: a replica killed mid-flush leaves work that no later submission may
    come to kick."""
    row = journal.db.execute(
        "SELECT EXISTS (SELECT 1 FROM items WHERE state != 'confirmed')"
        " OR EXISTS (SELECT 1 FROM effects WHERE state != 'confirmed' AND failure IS NULL)"
    ).fetchone()
    return bool(row[0])


def item_state(journal: Journal, chain_id: int, digest: bytes) -> str | None:
    """The state of the item of `digest` on `chain_id` (pending, batched, confirmed), None if unknown."""
    row = journal.db.execute("SELECT state FROM items WHERE chain_id = ? AND digest = ?", (chain_id, digest)).fetchone()
    return None if row is None else str(row["state"])


def pending_items(journal: Journal, chain_id: int) -> int:
    """Items of `chain_id` waiting for a batch: the public calendar's queue."""
    return journal.item_counts(chain_id).get("pending", 0)
