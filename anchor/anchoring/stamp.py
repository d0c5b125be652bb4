"""Anchor one file tree or manifest now: submit it to the journal, flush, write its proof file.

Idempotent: the journal knows every submitted digest, and the registry is write-once, so anchoring
the same manifest again writes nothing on chain.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anchor.errors import ChainUnreachable
from anchor.manifest.exclude import Rules
from anchor.manifest.filetree import FileTreeManifest, hash_tree
from anchor.manifest.hashing import Progress
from anchor.proof.file import ProofFile, check_output_path, load_proof, write_proof
from anchor.proof.locate import default_proof_path
from anchor.settings.session import Settings

if TYPE_CHECKING:
    from anchor.manifest.bundle import BundleManifest


@dataclass(frozen=True, slots=True)
class AnchorOutcome:
    proof: ProofFile
    proof_path: Path
    already_anchored: bool
    gas_used: int | None
    file_count: int


def anchor_path(
    path: Path,
    settings: Settings,
    proof_out: Path | None = None,
    rules: Rules | None = None,
    symlinks: str = "refuse",
    progress: Progress | None = None,
) -> AnchorOutcome:
    """Anchor the file-tree manifest of `path`; bad input is refused before anything is sent or written."""
    proof_out = proof_out or default_proof_path(path)
    check_output_path(proof_out)
    tree = hash_tree(path, rules, symlinks, progress)
    return anchor_manifest(tree.identity(), tree, settings, proof_out)


def anchor_manifest(
    identity: dict[str, Any],
    tree: FileTreeManifest | None,
    settings: Settings,
    proof_out: Path,
    annotations: dict[str, Any] | None = None,
    idempotency_key: str | None = None,
    companions: tuple[tuple[dict[str, Any], Path], ...] = (),
) -> AnchorOutcome:
    """Submit one manifest to the journal, flush, and write its proof to `proof_out`.

    A manifest already confirmed in the journal is not sent again ("already anchored"); neither is
    one whose batch root the registry already holds.
    """
    from anchor.anchoring.service import AnchorService
    from anchor.journal.submit import Submission
    from anchor.manifest.identity import manifest_digest

    check_output_path(proof_out)
    payload: dict[str, Any] = {}
    if tree is not None:
        payload["files"] = tree.files_json()
    if annotations:
        payload["annotations"] = annotations
    service = AnchorService.open(settings)
    try:
        extra = [Submission(other, {}, None, path) for other, path in companions]  # same batch: one transaction
        submitted = service.submit([Submission(identity, payload, idempotency_key, proof_out), *extra])[0]
        report = service.flush()
        row = service.item(submitted.digest)
        rows = [service.item(manifest_digest(other)) for other, _ in companions]
    finally:
        service.close()
    if row is None or row["state"] != "confirmed" or any(r is None or r["state"] != "confirmed" for r in rows):
        raise ChainUnreachable("the manifest is journaled but not confirmed yet; run `anchor journal flush`")
    proof = load_proof(settings.proofs_dir / f"{submitted.digest.hex()}.json")
    write_proof(proof, proof_out)
    sent_now = row["effect_id"] in report.signed or (
        row["effect_id"] in report.confirmed and row["effect_id"] not in report.adopted and not submitted.duplicate
    )
    return AnchorOutcome(
        proof,
        proof_out,
        already_anchored=not sent_now,
        gas_used=row["gas_used"] if sent_now else None,
        file_count=0 if tree is None else len(tree.files),
    )


def anchor_bundle(
    manifest: BundleManifest,
    tree: FileTreeManifest,
    settings: Settings,
    proof_out: Path,
    notes: dict[str, Any] | None = None,
) -> AnchorOutcome:
    """Anchor a result bundle and, when it has milestones, its timing record in the same batch: the
    milestones become tamper-evident while staying outside the bundle's identity (docs/manifest.md,
    "Timing record"). The timing proof is written beside the bundle's (`<name>.timing.anchor.json`).
    `notes`: annotations of the caller's (how it ran), carried in the proof, outside the identity."""
    annotations = {**(notes or {}), **manifest.annotations()}
    companions: tuple[tuple[dict[str, Any], Path], ...] = ()
    if manifest.milestones is not None:
        from anchor.manifest.timing import timing_for

        timing = timing_for(manifest.digest, manifest.milestones)
        timing_out = proof_out.with_name(proof_out.name.removesuffix(".anchor.json") + ".timing.anchor.json")
        annotations["timing"] = {"digest": "0x" + timing.digest.hex(), "proof": timing_out.name}
        companions = ((timing.identity(), timing_out),)
    return anchor_manifest(manifest.identity(), tree, settings, proof_out, annotations, companions=companions)
