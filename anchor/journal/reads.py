"""What the API, the explorer and the anchoring service read from the journal, as typed rows.

Why one module: the journal's tables are the store's own. Routes that wrote SQL against them (eight
statements in the records routes alone) skipped the chain filter the journal always applies, so a data
directory used on two chains mixed their batches, files and attempts on every page; and each such
statement had to be rewritten for PostgreSQL by the backend's regexes without a test of its own. Here
every query names its chain, returns frozen rows, and runs on both backends through the same tests;
tests/journal/test_journal_reads.py scans the rest of the package, api/ included, for SQL against these tables.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from anchor.journal.store import Journal
from anchor.record import Value

if TYPE_CHECKING:
    from anchor.journal.submit import Payload


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ItemRef(Value):
    """One journaled manifest: its digest, kind and state (pending, batched, confirmed)."""

    digest: bytes
    kind: str
    state: str


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class FileHit(Value):
    """A file of a journaled manifest, found by its BLAKE3."""

    item_id: int
    path: str
    digest: bytes
    identity: dict[str, Any]
    payload: Payload


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class EffectRef(Value):
    """A root or lineage effect: what the registry is (to be) asked to record, and where it landed."""

    kind: str
    key: bytes
    args: dict[str, Any]
    tx_hash: bytes | None
    block_number: int | None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class BatchRef(Value):
    """A batch: its root effect (id, state, transaction) and how many items it holds."""

    id: int
    root: bytes
    state: str
    tx_hash: bytes | None
    block_number: int | None
    items: int
    sender: str | None = None
    """Who signed its latest transaction: this journal's own key (the explorer's "this service")."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class AttemptRow(Value):
    digest: bytes
    state: str
    identity: dict[str, Any]


def _bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


def _json(text: str) -> dict[str, Any]:
    value = json.loads(text)
    return value if isinstance(value, dict) else {}


def items_with_digest(journal: Journal, chain_id: int, digest: bytes) -> list[ItemRef]:
    rows = journal.db.execute(
        "SELECT digest, kind, state FROM items WHERE chain_id = ? AND digest = ?", (chain_id, digest)
    ).fetchall()
    return [ItemRef(bytes(r["digest"]), r["kind"], r["state"]) for r in rows]


def root_of_item(journal: Journal, chain_id: int, digest: bytes) -> bytes | None:
    """The root of the batch that holds manifest `digest`, once batched."""
    row = journal.db.execute(
        "SELECT effects.key FROM items JOIN effects ON effects.id = items.effect_id"
        " WHERE items.chain_id = ? AND items.digest = ?",
        (chain_id, digest),
    ).fetchone()
    return None if row is None else bytes(row[0])


def files_with_blake3(journal: Journal, chain_id: int, blake3: bytes, confirmed: bool = False) -> list[FileHit]:
    """Every file with this BLAKE3 in a manifest of `chain_id` (only anchored ones: `confirmed`), oldest first."""
    rows = journal.db.execute(
        "SELECT items.id, items.digest, items.identity, items.payload, files.path FROM files"
        " JOIN items ON items.id = files.item_id WHERE files.blake3 = ? AND items.chain_id = ?"
        " AND (items.state = 'confirmed' OR ? = 0) ORDER BY items.id",
        (blake3, chain_id, int(confirmed)),
    ).fetchall()
    return [
        FileHit(int(r["id"]), r["path"], bytes(r["digest"]), _json(r["identity"]), cast("Payload", _json(r["payload"])))
        for r in rows
    ]


def effects_matching(journal: Journal, chain_id: int, value: bytes) -> list[EffectRef]:
    """Effects of `chain_id` whose key or transaction is `value`, or whose commit is (a lineage
    effect is keyed by keccak(researcher, commit): its commit is in its args)."""
    rows = journal.db.execute(
        "SELECT kind, key, args, tx_hash, block_number FROM effects"  # noqa: S608 - the dialect's words, no data
        f" WHERE chain_id = ? AND (key = ? OR tx_hash = ? OR {journal.dialect.json('args', 'commit')} = ?)",
        (chain_id, value, value, value.hex()),
    ).fetchall()
    return [
        EffectRef(r["kind"], bytes(r["key"]), _json(r["args"]), _bytes(r["tx_hash"]), r["block_number"]) for r in rows
    ]


def attempts_of_commit(journal: Journal, chain_id: int, commit: str) -> list[AttemptRow]:
    """The attempt manifests journaled for `commit` (40 or 64 hex digits, lower case)."""
    rows = journal.db.execute(
        "SELECT digest, state, identity FROM items"  # noqa: S608 - the dialect's words, no data
        f" WHERE chain_id = ? AND kind = 'attempt' AND {journal.dialect.json('identity', 'commit')} = ? ORDER BY id",
        (chain_id, commit),
    ).fetchall()
    return [AttemptRow(bytes(r["digest"]), r["state"], _json(r["identity"])) for r in rows]


def _batch(row: Mapping[str, Any]) -> BatchRef:
    return BatchRef(
        int(row["id"]),
        bytes(row["key"]),
        row["state"],
        _bytes(row["tx_hash"]),
        row["block_number"],
        int(row["items"]),
        row["sender"],
    )


_BATCHES = (
    "SELECT id, key, state, tx_hash, block_number,"
    " (SELECT count(*) FROM items WHERE items.effect_id = effects.id) AS items,"
    " (SELECT sender FROM txs WHERE txs.effect_id = effects.id ORDER BY txs.id DESC LIMIT 1) AS sender FROM effects"
)


def batch(journal: Journal, chain_id: int, root: bytes) -> tuple[BatchRef | None, list[ItemRef]]:
    """A batch of `chain_id` by its root, and its items in order; (None, []) if it is not here."""
    row = journal.db.execute(
        _BATCHES + " WHERE chain_id = ? AND kind = 'root' AND key = ?", (chain_id, root)
    ).fetchone()
    if row is None:
        return None, []
    items = journal.db.execute("SELECT digest, kind, state FROM items WHERE effect_id = ? ORDER BY id", (row["id"],))
    return _batch(row), [ItemRef(bytes(r["digest"]), r["kind"], r["state"]) for r in items.fetchall()]


def batches_by_id(journal: Journal, chain_id: int, ids: set[int]) -> list[BatchRef]:
    """The root batches of `chain_id` among the effects `ids` (what holds each of a page's items)."""
    if not ids:
        return []
    where = f" WHERE chain_id = ? AND kind = 'root' AND id IN ({', '.join('?' * len(ids))})"  # noqa: S608 - marks only
    rows = journal.db.execute(_BATCHES + where, (chain_id, *sorted(ids))).fetchall()
    return [_batch(r) for r in rows]


def recent_batches(journal: Journal, chain_id: int, limit: int = 20) -> list[BatchRef]:
    rows = journal.db.execute(
        _BATCHES + " WHERE chain_id = ? AND kind = 'root' ORDER BY id DESC LIMIT ?", (chain_id, limit)
    ).fetchall()
    return [_batch(r) for r in rows]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class RecentItem(Value):
    """A journaled manifest as the explorer's home lists it: what it is (its identity), where its proof
    was written, which batch holds it and when it was journaled. Never its listing (a tree of 200,000
    files is megabytes): only the payload's annotations."""

    digest: bytes
    kind: str
    state: str
    identity: dict[str, Any]
    annotations: dict[str, Any]
    proof_path: str | None
    batch_id: int | None
    created_at: float


def recent_items(journal: Journal, chain_id: int, limit: int = 30) -> list[RecentItem]:
    """The `limit` manifests journaled last on `chain_id`, newest first."""
    rows = journal.db.execute(
        "SELECT digest, kind, state, identity, json_extract(payload, '$.annotations') AS annotations, effect_id,"
        " created_at, (SELECT min(path) FROM proof_paths WHERE proof_paths.item_id = items.id) AS proof_path"
        " FROM items WHERE chain_id = ? ORDER BY id DESC LIMIT ?",
        (chain_id, limit),
    ).fetchall()
    return [
        RecentItem(
            bytes(r["digest"]),
            r["kind"],
            r["state"],
            _json(r["identity"]),
            _json(r["annotations"]) if r["annotations"] else {},
            r["proof_path"],
            r["effect_id"],
            float(r["created_at"]),
        )
        for r in rows
    ]


def search(journal: Journal, chain_id: int, query: str, limit: int = 50) -> dict[str, Any]:
    """What the explorer's search finds for `query`: a manifest digest or a batch root (0x + 64 hex),
    a submitter (0x + 40 hex: the batches its transactions anchored), else a path in any record's
    listing (exact, or its file name). Bounded: at most `limit` of each."""
    import re

    q = query.strip()
    found: dict[str, Any] = {"items": [], "batches": []}
    if re.fullmatch(r"0x[0-9a-fA-F]{64}", q):
        key = bytes.fromhex(q[2:])
        found["items"] = [
            dict(r)
            for r in journal.db.execute(
                "SELECT id, digest, kind, state, effect_id FROM items WHERE chain_id = ? AND digest = ?",
                (chain_id, key),
            ).fetchall()
        ]
        found["batches"] = [
            _batch(r)
            for r in journal.db.execute(
                _BATCHES + " WHERE chain_id = ? AND kind = 'root' AND (key = ? OR tx_hash = ?)", (chain_id, key, key)
            ).fetchall()
        ]
    elif re.fullmatch(r"0x[0-9a-fA-F]{40}", q):
        by_sender = " WHERE chain_id = ? AND kind = 'root' AND id IN (SELECT effect_id FROM txs WHERE lower(sender)"
        found["batches"] = [
            _batch(r)
            for r in journal.db.execute(
                _BATCHES + by_sender + " = lower(?)) ORDER BY id DESC LIMIT ?",
                (chain_id, q, limit),  # noqa: S608 - fixed text
            ).fetchall()
        ]
    elif q:
        pattern = '%"path": ' + json.dumps(q).replace("%", "\\%").replace("_", "\\_") + "%"
        name = "%/" + q.replace("%", "\\%").replace("_", "\\_") + '"%'
        found["items"] = [
            dict(r)
            for r in journal.db.execute(
                "SELECT id, digest, kind, state, effect_id FROM items WHERE chain_id = ?"
                " AND (payload LIKE ? ESCAPE '\\' OR payload LIKE ? ESCAPE '\\') ORDER BY id DESC LIMIT ?",
                (chain_id, pattern, name, limit),
            ).fetchall()
        ]
    return found


def confirmed_batch_rows(journal: Journal, chain_id: int, digest: bytes) -> tuple[Any, list[Any]] | None:
    """The root effect and items (whole rows, as the proof writer takes them) of the confirmed batch
    that holds manifest `digest`; None when it is not anchored here."""
    item = journal.db.execute(
        "SELECT effect_id FROM items WHERE chain_id = ? AND digest = ? AND state = 'confirmed'", (chain_id, digest)
    ).fetchone()
    if item is None:
        return None
    effect = journal.db.execute("SELECT * FROM effects WHERE id = ?", (item["effect_id"],)).fetchone()
    items = journal.db.execute("SELECT * FROM items WHERE effect_id = ? ORDER BY id", (item["effect_id"],)).fetchall()
    return effect, items


def item_with_effect(journal: Journal, chain_id: int, digest: bytes) -> Any:
    """The item of `digest` with its effect's state, gas and transaction (None when unknown)."""
    return journal.db.execute(
        "SELECT items.*, effects.state AS effect_state, effects.gas_used, effects.tx_hash AS effect_tx,"
        " effects.failure AS effect_failure, effects.abandoned_at AS effect_abandoned"
        " FROM items LEFT JOIN effects ON effects.id = items.effect_id WHERE items.chain_id = ? AND digest = ?",
        (chain_id, digest),
    ).fetchone()


def record_proof_errors(journal: Journal, errors: Mapping[int, str | None]) -> None:
    """Why each item's proof file could not be written (None: it was).

    Only the rows whose value changes are written. Setting NULL over NULL for every item of a batch
    was a third of the items table's bloat on PostgreSQL (each UPDATE is a new row version and new
    entries in every index) and 4,096 statements a full batch's flush; a stored error is rare, and the
    partial index `items_proof_error` finds the few there are."""
    failed = [(error, item) for item, error in errors.items() if error is not None]
    with journal.tx() as db:
        stored = {int(r[0]) for r in db.execute("SELECT id FROM items WHERE proof_error IS NOT NULL").fetchall()}
        cleared = [(item,) for item, error in errors.items() if error is None and item in stored]
        if failed:
            db.executemany("UPDATE items SET proof_error = ? WHERE id = ?", failed)
        if cleared:
            db.executemany("UPDATE items SET proof_error = NULL WHERE id = ?", cleared)


def ping(journal: Journal) -> str:
    """A round trip to the journal; its backend's name ("sqlite" or "postgresql")."""
    journal.db.execute("SELECT count(*) FROM meta").fetchone()
    return journal.backend


def confirmed_item(journal: Journal, digest: bytes, chain_id: int | None = None) -> tuple[Any, Any] | None:
    """(root effect, item) of manifest `digest` confirmed here (on `chain_id`, else the latest on any
    chain); None when it is not. By (chain, digest), the items' unique index, whatever the journal's size."""
    chains = (
        [chain_id]
        if chain_id is not None
        else [row[0] for row in journal.db.execute("SELECT DISTINCT chain_id FROM effects").fetchall()]
    )
    found = None
    for chain in chains:
        item = journal.db.execute(
            "SELECT * FROM items WHERE chain_id = ? AND digest = ? AND state = 'confirmed'", (chain, digest)
        ).fetchone()
        if item is not None and (found is None or item["id"] > found["id"]):
            found = item
    if found is None:
        return None
    effect = journal.db.execute("SELECT * FROM effects WHERE id = ?", (found["effect_id"],)).fetchone()
    return effect, found
