"""Anchor a manifest: put its digest in a batch, anchor the root once, write the proof file.

Idempotent by construction: the root is a pure function of the manifest and the registry is
write-once, so anchoring the same manifest again finds the existing root and writes nothing on chain.
(Batching many manifests per root, with a crash-safe journal, is the journal's job.)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anchor.batch.merkle import BatchTree, leaf_of
from anchor.errors import RegistryRevert
from anchor.manifest.filetree import FileTreeManifest, hash_tree
from anchor.manifest.identity import manifest_digest
from anchor.proof_file import BatchPath, ChainAnchor, ProofFile, check_output_path, write_proof
from anchor.session import Settings, open_chain, open_registry


@dataclass(frozen=True, slots=True)
class AnchorOutcome:
    proof: ProofFile
    proof_path: Path
    already_anchored: bool
    gas_used: int | None
    file_count: int


def default_proof_path(path: Path) -> Path:
    """`<path>.anchor.json` beside the data, as sigstore writes `<file>.sigstore.json`."""
    return path.with_name(path.name + ".anchor.json")


def anchor_path(path: Path, settings: Settings, proof_out: Path | None = None) -> AnchorOutcome:
    """Anchor the file-tree manifest of `path`; bad input is refused before anything is sent or written."""
    proof_out = proof_out or default_proof_path(path)
    check_output_path(proof_out)
    tree = hash_tree(path)
    return anchor_manifest(tree.identity(), tree, settings, proof_out)


def anchor_manifest(
    identity: dict[str, Any],
    tree: FileTreeManifest | None,
    settings: Settings,
    proof_out: Path,
    annotations: dict[str, Any] | None = None,
) -> AnchorOutcome:
    """Anchor one manifest identity in a batch of one and write its proof (with the listing of `tree`)."""
    from anchor.chain.keys import load_signer

    check_output_path(proof_out)
    item = manifest_digest(identity)
    batch = BatchTree.build([item])
    root = batch.root

    handle = open_chain(settings)
    registry = open_registry(settings, handle)
    record = registry.root_record(root)
    gas_used = None
    if record is None:
        signer = load_signer(handle.chain_id, settings.keystore)
        try:
            gas_used = registry.anchor_root(signer, root).gas_used
        except RegistryRevert as exc:  # a concurrent writer anchored it first: same outcome
            if exc.detail.get("error") != "RootAlreadyAnchored":
                raise
        record = registry.root_record(root)
    assert record is not None, "root missing right after anchoring"
    tx_hash = registry.root_tx(root, record.block_number)
    proof = ProofFile(
        manifest=identity,
        annotations=annotations or {},
        files=None if tree is None else tuple(tree.files_json()),
        manifest_digest="0x" + item.hex(),
        batch=BatchPath(
            item="0x" + item.hex(),
            leaf="0x" + leaf_of(item).hex(),
            proof=tuple("0x" + p.hex() for p in batch.proof(item)),
            root="0x" + root.hex(),
        ),
        anchor=ChainAnchor(
            chain_id=handle.chain_id,
            registry=registry.address,
            code_hash=registry.code_hash,
            tx_hash=tx_hash or "0x" + "00" * 32,
            block_number=record.block_number,
        ),
    )
    write_proof(proof, proof_out)
    write_proof(proof, settings.proofs_dir / f"{item.hex()}.json")
    return AnchorOutcome(proof, proof_out, gas_used is None, gas_used, 0 if tree is None else len(tree.files))
