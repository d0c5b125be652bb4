"""Write one self-contained proof file per item of a confirmed batch."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from anchor.batch.merkle import BatchTree, leaf_of
from anchor.errors import AnchorError
from anchor.files import atomic_write_many, private_dir
from anchor.journal.reads import confirmed_batch_rows
from anchor.journal.store import Journal
from anchor.layout import DataDir
from anchor.proof.file import BatchPath, ChainAnchor, ProofFile


def batch_proofs(effect: sqlite3.Row, items: list[sqlite3.Row], registry: str, code_hash: str) -> list[ProofFile]:
    """The proofs of every item of a mined root effect; the items (and the batch's salt, when a
    stranger took its first root: anchor.journal.effects) must rebuild the anchored root."""
    digests = [bytes(item["digest"]) for item in items]
    salt = json.loads(effect["args"] or "{}").get("salt")
    tree = BatchTree.build(digests + ([bytes.fromhex(salt)] if salt else []))
    if tree.root != bytes(effect["key"]):
        raise AnchorError(f"journal: the items of batch {effect['id']} do not rebuild its root")
    anchor = ChainAnchor(
        chain_id=effect["chain_id"],
        registry=registry,
        code_hash=code_hash,
        tx_hash="0x" + bytes(effect["tx_hash"] or b"\0" * 32).hex(),
        block_number=int(effect["block_number"]),
    )
    root = "0x" + tree.root.hex()
    proofs = []
    for item, digest in zip(items, digests, strict=True):
        payload = json.loads(item["payload"])
        files = payload.get("files")
        proofs.append(
            ProofFile(
                manifest=json.loads(item["identity"]),
                annotations=payload.get("annotations", {}),
                files=None if files is None else tuple(files),
                manifest_digest="0x" + digest.hex(),
                batch=BatchPath(
                    item="0x" + digest.hex(),
                    leaf="0x" + leaf_of(digest).hex(),
                    proof=tuple("0x" + p.hex() for p in tree.proof(digest)),
                    root=root,
                ),
                anchor=anchor,
            )
        )
    return proofs


def write_batch_proofs(
    layout: DataDir,
    effect: sqlite3.Row,
    items: list[sqlite3.Row],
    registry: str,
    code_hash: str,
    paths: dict[int, list[Path]],
) -> dict[int, str]:
    """Write every item's proof; returns {item id: reason} for the ones that could not be written.

    Why per item: the root is on chain whatever happens here, so one proof that cannot be written (a
    symlink planted at its path, a full disk, a journal row no JSON writer can encode) must fail that
    item alone; raising would leave the effect `mined` and stop every later flush behind it."""
    private_dir(layout.proofs)
    owners: list[int] = []
    writes: list[tuple[Path, bytes]] = []
    failed: dict[int, str] = {}
    for item, proof in zip(items, batch_proofs(effect, items, registry, code_hash), strict=True):
        try:
            data = proof.dumps().encode("utf-8")
        except ValueError as exc:  # UnicodeEncodeError: a row no UTF-8 writer can encode
            failed[int(item["id"])] = f"{type(exc).__name__}: {exc}"[:500]
            continue
        targets = [layout.proof(proof.manifest_digest), *paths.get(int(item["id"]), [])]
        for target in targets:
            owners.append(int(item["id"]))
            writes.append((target, data))
    for index, error in atomic_write_many(writes).items():
        reason = error.message if isinstance(error, AnchorError) else f"{type(error).__name__}: {error}"
        failed[owners[index]] = f"{writes[index][0]}: {reason}"[:500]
    return failed


def proof_from_journal(journal: Journal, chain_id: int, digest: bytes, code_hash: str) -> ProofFile | None:
    """The proof of a confirmed item, rebuilt from the journal alone (None: not anchored here).

    Why: with replicas sharing a PostgreSQL journal, the proof file lands in the data directory of
    whichever replica flushed the batch; every other replica rebuilds the same proof, byte for byte,
    from the journal (the items of the batch give the Merkle path, the effect the transaction)."""
    found = confirmed_batch_rows(journal, chain_id, digest)
    if found is None:
        return None
    effect, items = found
    wanted = "0x" + digest.hex()
    return next(p for p in batch_proofs(effect, items, effect["registry"], code_hash) if p.manifest_digest == wanted)
