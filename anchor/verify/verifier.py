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
from anchor.manifest.filetree import FileEntry, check_relative_path, diff, hash_tree, root_from_audit_path
from anchor.manifest.identity import manifest_digest, tree_summary, validate_identity
from anchor.manifest.onchain import parse_hex32
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
    """Recompute everything the proof states from what it contains; return the batch root.

    The identity is re-validated for its kind and its digest recomputed; a listing must rebuild the
    identity's tree, a single-file audit path must lead to its root; the batch path must lead to
    `batch.root`. Raises `ProofFormatError` (or `BadInput`) naming the first field that disagrees.
    """
    identity = validate_identity(proof.manifest, "proof manifest")
    digest = manifest_digest(identity)
    if "0x" + digest.hex() != proof.manifest_digest or proof.batch.item != proof.manifest_digest:
        raise ProofFormatError(
            "proof: manifest_digest does not match its manifest", detail={"field": "manifest_digest"}
        )
    summary = tree_summary(identity)
    tree = proof.filetree()
    if tree is not None and tree.summary() != summary:
        raise ProofFormatError("proof: files do not rebuild the manifest's file tree", detail={"field": "files"})
    if proof.file is not None:
        inclusion = proof.file
        check_relative_path(inclusion.path)
        leaf = FileEntry(inclusion.path, inclusion.size, inclusion.blake3).leaf_hash()
        siblings = [_hex32(h, "file.audit_path") for h in inclusion.audit_path]
        reached = root_from_audit_path(leaf, inclusion.index, inclusion.tree_size, siblings)
        if summary is None or reached is None or reached.hex() != summary["files_root"]:
            raise ProofFormatError("proof: file.audit_path does not lead to the files root", detail={"field": "file"})
        if inclusion.tree_size != summary["file_count"]:
            raise ProofFormatError("proof: file.tree_size is not the manifest's file_count", detail={"field": "file"})
    if "0x" + leaf_of(digest).hex() != proof.batch.leaf:
        raise ProofFormatError(
            "proof: batch.leaf is not the leaf of the manifest digest", detail={"field": "batch.leaf"}
        )
    root = process_proof(digest, [_hex32(p[2:], "batch.proof") for p in proof.batch.proof])
    if "0x" + root.hex() != proof.batch.root:
        raise ProofFormatError("proof: batch.proof does not lead to batch.root", detail={"field": "batch.proof"})
    return root


def _hex32(text: str, field: str) -> bytes:
    return parse_hex32(text, f"proof {field}", ProofFormatError)


def verify_path(path: Path, proof_path: Path, settings: Settings) -> Verification:
    """Verify `path` (a tree, or one file with a single-file proof) against `proof_path`.

    The steps are numbered here and in `verify_proof_on_chain`.
    """
    # 1. Decode the proof; everything it states must follow from what it contains.
    proof = load_proof(proof_path)
    root = check_proof_consistency(proof)

    # 2. Recompute the data on disk and name every file that differs from what the proof binds.
    if proof.file is not None:
        on_disk = hash_tree(path)
        if len(on_disk.files) != 1:
            raise BadInput(f"{path}: a single-file proof verifies one file, not a directory", detail={"field": "path"})
        entry = on_disk.files[0]
        if (entry.size, entry.blake3) != (proof.file.size, proof.file.blake3):
            raise Tampered(
                f"{path}: differs from the anchored {proof.file.path}",
                detail={"changed": [proof.file.path], "added": [], "removed": []},
            )
        files = 1
    else:
        expected = proof.filetree()
        if expected is None:
            raise BadInput(f"{proof_path}: this proof binds no files to compare with {path}", detail={"field": "files"})
        changes = diff(expected, hash_tree(path))
        if changes:
            named = changes.named()
            raise Tampered(
                f"{path}: does not match the anchored manifest: {', '.join(named[:10])}"
                + (f" and {len(named) - 10} more" if len(named) > 10 else ""),
                detail={
                    "changed": list(changes.changed),
                    "added": list(changes.added),
                    "removed": list(changes.removed),
                },
            )
        files = len(expected.files)
    return verify_proof_on_chain(proof, root, settings, files=files)


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
    digest = _hex32(proof.manifest_digest[2:], "manifest_digest")
    siblings = [_hex32(p[2:], "batch.proof") for p in proof.batch.proof]

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
