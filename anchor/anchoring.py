"""Anchor one file or directory: hash it, put its manifest digest in a batch, anchor the root once.

Idempotent by construction: the root is a pure function of the manifest, and the registry is
write-once, so anchoring the same bytes again finds the existing root and writes nothing on chain.
(Batching many manifests per root, with a crash-safe journal, is the journal's job.)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from anchor.batch.merkle import BatchTree
from anchor.errors import RegistryRevert
from anchor.manifest.filetree import FileTreeManifest, hash_tree
from anchor.proof_file import BatchPath, ChainAnchor, ProofFile, check_output_path, write_proof
from anchor.session import Settings, open_chain, open_registry


@dataclass(frozen=True, slots=True)
class AnchorOutcome:
    manifest: FileTreeManifest
    proof: ProofFile
    proof_path: Path
    already_anchored: bool
    gas_used: int | None


def default_proof_path(path: Path) -> Path:
    """`<path>.anchor.json` beside the data, as sigstore writes `<file>.sigstore.json`."""
    return path.with_name(path.name + ".anchor.json")


def anchor_path(path: Path, settings: Settings, proof_out: Path | None = None) -> AnchorOutcome:
    """Anchor `path` and write its proof file. Bad input is refused before anything is sent or written."""
    from anchor.chain.keys import load_signer

    proof_out = proof_out or default_proof_path(path)
    check_output_path(proof_out)
    manifest = hash_tree(path)
    item = manifest.digest
    batch = BatchTree.build([item])
    root = batch.root

    handle = open_chain(settings)
    registry = open_registry(settings, handle)
    record = registry.root_record(root)
    gas_used = None
    if record is None:
        signer = load_signer(handle.chain_id, settings.keystore)
        try:
            sent = registry.anchor_root(signer, root)
            gas_used = sent.gas_used
        except RegistryRevert as exc:
            if exc.detail.get("error") != "RootAlreadyAnchored":
                raise
        record = registry.root_record(root)
    already = gas_used is None
    assert record is not None, "root missing right after anchoring"
    tx_hash = registry.root_tx(root, record.block_number)
    from anchor.batch.merkle import leaf_of

    proof = ProofFile(
        manifest=manifest.to_json(),
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
    return AnchorOutcome(manifest, proof, proof_out, already, gas_used)
