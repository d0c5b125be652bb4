"""Verify a file or directory against a proof file and a live chain read.

On failure every function here raises an `AnchorError`: `Tampered` (names the files),
`ProofFormatError` (the proof is inconsistent), `NotAnchored`, `DeploymentMismatch` (the address does
not hold our registry: no answer is given), `ChainUnreachable`. It never writes anything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from anchor.batch.merkle import leaf_of, process_proof
from anchor.errors import BadInput, NotAnchored, NotDeployed, ProofFormatError, Tampered
from anchor.manifest.filetree import diff, hash_tree
from anchor.proof_file import ProofFile, load_proof
from anchor.session import Settings, open_chain


class Verification(BaseModel):
    """A successful verification, backed by a live chain read at `read_at_block`."""

    model_config = ConfigDict(frozen=True)

    verified: Literal[True] = True
    manifest_digest: str
    root: str
    chain_id: int
    registry: str
    tx_hash: str
    anchored_block: int
    read_at_block: int
    files: int

    def to_json(self) -> dict[str, object]:
        return self.model_dump()


def check_proof_consistency(proof: ProofFile) -> bytes:
    """Recompute digest, leaf and root from the proof's own manifest; return the root.

    Raises `ProofFormatError` if any stored value disagrees with what it should be.
    """
    manifest = proof.filetree()
    digest = manifest.digest
    if "0x" + digest.hex() != proof.manifest_digest or proof.batch.item != proof.manifest_digest:
        raise ProofFormatError(
            "proof: manifest_digest does not match its manifest", detail={"field": "manifest_digest"}
        )
    if "0x" + leaf_of(digest).hex() != proof.batch.leaf:
        raise ProofFormatError(
            "proof: batch.leaf is not the leaf of the manifest digest", detail={"field": "batch.leaf"}
        )
    root = process_proof(digest, [bytes.fromhex(p[2:]) for p in proof.batch.proof])
    if "0x" + root.hex() != proof.batch.root:
        raise ProofFormatError("proof: batch.proof does not lead to batch.root", detail={"field": "batch.proof"})
    return root


def verify_path(path: Path, proof_path: Path, settings: Settings) -> Verification:
    """Verify `path` against `proof_path`; the steps are numbered below."""
    # 1. Decode the proof; its manifest, digest, leaf and root must agree with each other.
    proof = load_proof(proof_path)
    root = check_proof_consistency(proof)

    # 2. Recompute the data on disk and name every file that differs from the proof's manifest.
    changes = diff(proof.filetree(), hash_tree(path))
    if changes:
        named = [*changes.changed, *changes.added, *changes.removed]
        raise Tampered(
            f"{path}: does not match the anchored manifest: {', '.join(named[:10])}"
            + (f" and {len(named) - 10} more" if len(named) > 10 else ""),
            detail={"changed": list(changes.changed), "added": list(changes.added), "removed": list(changes.removed)},
        )
    return verify_proof_on_chain(proof, root, settings, files=len(proof.filetree().files))


def verify_proof_on_chain(proof: ProofFile, root: bytes, settings: Settings, files: int) -> Verification:
    """Steps 3–5: the registry's code, the root's existence and the inclusion, read live from the chain."""
    from anchor.chain.deployment import load_deployment
    from anchor.chain.registry import Registry

    # 3. Reach the chain the proof names; refuse an RPC endpoint of another chain.
    handle = open_chain(settings)
    if handle.chain_id != proof.anchor.chain_id:
        raise BadInput(
            f"the proof is for chain {proof.anchor.chain_id}, the RPC endpoint serves chain {handle.chain_id}",
            detail={"field": "anchor.chain_id"},
        )
    # 4. The code at the address must be our registry: the recorded deployment's hash when we have one
    #    for that address, and always the pinned runtime hash (checked inside Registry).
    recorded_hash = proof.anchor.code_hash
    try:
        deployment = load_deployment(settings.data_dir, handle.chain_id)
        if deployment.address.lower() == proof.anchor.registry.lower():
            recorded_hash = deployment.code_hash
    except NotDeployed:
        pass
    registry = Registry(handle.w3, handle.chain_id, proof.anchor.registry, recorded_hash)
    digest = bytes.fromhex(proof.manifest_digest[2:])
    siblings = [bytes.fromhex(p[2:]) for p in proof.batch.proof]

    # 5. The root must be anchored and the registry itself must accept the inclusion proof.
    record = registry.root_record(root)
    read_at = registry.checked_block()
    if record is None:
        raise NotAnchored(
            f"root {proof.batch.root} is not anchored on chain {handle.chain_id} (read at block {read_at})",
            detail={"root": proof.batch.root, "read_at_block": read_at},
        )
    if not registry.verify_inclusion(root, siblings, digest):
        raise ProofFormatError("the registry rejects the inclusion proof", detail={"field": "batch.proof"})
    return Verification(
        manifest_digest=proof.manifest_digest,
        root=proof.batch.root,
        chain_id=handle.chain_id,
        registry=registry.address,
        tx_hash=registry.root_tx(root, record.block_number) or proof.anchor.tx_hash,
        anchored_block=record.block_number,
        read_at_block=read_at,
        files=files,
    )
