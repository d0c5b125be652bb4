"""Write one self-contained proof file per item of a confirmed batch."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from anchor.batch.merkle import BatchTree, leaf_of
from anchor.errors import AnchorError
from anchor.proof_file import BatchPath, ChainAnchor, ProofFile, write_proof


def batch_proofs(effect: sqlite3.Row, items: list[sqlite3.Row], registry: str, code_hash: str) -> list[ProofFile]:
    """The proofs of every item of a mined root effect; the items must rebuild the anchored root."""
    digests = [bytes(item["digest"]) for item in items]
    tree = BatchTree.build(digests)
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
    proofs_dir: Path, effect: sqlite3.Row, items: list[sqlite3.Row], registry: str, code_hash: str
) -> None:
    for item, proof in zip(items, batch_proofs(effect, items, registry, code_hash), strict=True):
        write_proof(proof, proofs_dir / f"{proof.manifest_digest[2:]}.json")
        if item["proof_path"]:
            write_proof(proof, Path(item["proof_path"]))
