"""Anchor one manifest now with the key here: submit it to the journal, flush, write its proof file
(`anchor.anchoring.stamper.KeyStamper`'s work; every writer goes through a Stamper).

Idempotent: the journal knows every submitted digest, and the registry is write-once, so anchoring
the same manifest again writes nothing on chain.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anchor.errors import ChainUnreachable, JournalError
from anchor.manifest.filetree import FileTreeManifest
from anchor.proof.file import ProofFile, check_output_path, holds_it_sealed, write_proof
from anchor.record import Value
from anchor.settings.session import Settings

if TYPE_CHECKING:
    from anchor.manifest.bundle import BundleManifest


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class AnchorOutcome(Value):
    proof: ProofFile
    proof_path: Path
    already_anchored: bool
    gas_used: int | None
    file_count: int
    superseded: Path | None = None
    """Where the proof that stood at `proof_path` before (of other bytes) was kept, if there was one."""
    refreshed: tuple[Path, ...] = ()
    """Per-file proofs (`anchor prove`) rewritten against this anchor."""
    stale: tuple[Path, ...] = ()
    """Per-file proofs of files this anchor no longer holds: left as they were (they verify what the
    folder held then, and `verify` says a later stamp superseded them)."""


def keep_superseded(proof_out: Path, new_digest: str) -> Path | None:
    """Before a proof of other bytes is written at `proof_out`, keep the one there in its history
    (`<PATH>.anchor-history/<chain>-<block>-<digest>.anchor.json`): a re-stamp never silently drops the
    record of what was anchored before. Same digest, no file, or not a proof: nothing is kept.

    Kept as the very bytes, never parsed into a model and written again (a folder of 100,000 files has
    a proof of 15 MB): a hard link where the filesystem has them (every writer of a proof replaces it
    by a rename, so the link keeps the old bytes), else a byte copy. Not a move: if the new anchor fails,
    the old proof still stands where it stood. Only the three fields the name needs are read: a digest
    of hex, and a chain and block that are numbers a chain has, else the copy is named by the digest
    alone; no file name is ever made of what the file says beyond digits and hex."""
    import re
    import shutil

    from anchor.files import folder_beside
    from anchor.proof.file import proof_head
    from anchor.proof.locate import history_dir

    if not proof_out.is_file() or proof_out.is_symlink():
        return None
    _, digest, chain, block = proof_head(proof_out)  # read once for check_output_path's question too
    if not isinstance(digest, str) or re.fullmatch(r"0x[0-9a-f]{64}", digest) is None or digest == new_digest:
        return None
    numbered = all(type(n) is int and 0 <= n < 2**63 for n in (chain, block))
    history = folder_beside(history_dir(proof_out))
    # a chain or block that is no number a chain has (a string, 400 digits): kept all the same, by digest
    kept = history / (
        f"{chain}-{block}-{digest[2:14]}.anchor.json" if numbered else f"unnumbered-{digest[2:14]}.anchor.json"
    )
    if kept.exists() or kept.is_symlink():
        kept.unlink()  # kept before (a stamp that failed after it): the same record, kept again
    try:
        os.link(proof_out, kept, follow_symlinks=False)
    except OSError:
        shutil.copyfile(proof_out, kept, follow_symlinks=False)
    return kept


def refresh_file_proofs(folder: Path, outcome: AnchorOutcome) -> AnchorOutcome:
    """After a re-stamp of `folder`, its per-file proofs (`<DIR>.proofs/`) follow the new anchor for
    every file it still holds; the others are left, stale, and named."""
    from dataclasses import replace

    from anchor.anchoring.prove import single_file_proof
    from anchor.proof.locate import proofs_beside

    base = proofs_beside(folder)
    if not folder.is_dir() or not base.is_dir():
        return outcome
    held = {entry.path for entry in (outcome.proof._filetree() or FileTreeManifest(())).files}
    refreshed, stale = [], []
    for old in sorted(base.rglob("*.anchor.json")):
        rel = old.relative_to(base).as_posix().removesuffix(".anchor.json")
        if rel in held:
            write_proof(single_file_proof(outcome.proof, rel), old)
            refreshed.append(old)
        else:
            stale.append(old)
    return replace(outcome, refreshed=tuple(refreshed), stale=tuple(stale))


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
    from anchor.journal.submit import Payload, Submission
    from anchor.manifest.identity import manifest_digest

    check_output_path(proof_out)
    payload: Payload = {}
    if tree is not None:
        payload["files"] = tree.files_json()
    if annotations:
        payload["annotations"] = annotations
    # copied before the flush, which writes the new proof in its place the moment it is confirmed
    superseded = keep_superseded(proof_out, "0x" + manifest_digest(identity).hex())
    service = AnchorService.open(settings)
    try:
        extra = [Submission(other, {}, None, path) for other, path in companions]  # same batch: one transaction
        submitted = service.submit([Submission(identity, payload, idempotency_key, proof_out), *extra])[0]
        report = service.flush()
        row = service.item(submitted.digest)
        rows = [service.item(manifest_digest(other)) for other, _ in companions]
        stored = service.proof(submitted.digest)
        written = service.proof_bytes(submitted.digest)
    finally:
        service.close()
    for waited in (row, *rows):
        if waited is not None and waited["effect_id"] in report.errors:  # parked now: say why, nothing else waits
            raise report.errors[waited["effect_id"]]
        if waited is not None and waited["state"] != "confirmed" and waited["effect_failure"]:
            from anchor.errors import Conflict

            verb = "abandoned" if waited["effect_abandoned"] else "failed"
            raise Conflict(
                f"the manifest is journaled in effect #{waited['effect_id']}, which {verb} earlier:"
                f" {waited['effect_failure']} (hint: `anchor journal retry {waited['effect_id']}` once"
                " the cause is fixed, or `anchor journal status`)",
                detail={"effect": waited["effect_id"]},
            )
    if row is None or row["state"] != "confirmed" or any(r is None or r["state"] != "confirmed" for r in rows):
        raise ChainUnreachable("the manifest is journaled but not confirmed yet; run `anchor journal flush`")
    if stored is None:
        raise JournalError("the manifest is confirmed but the proof store cannot give its proof")
    proof = stored
    # the flush wrote it at `proof_out` the moment it confirmed (or `submit` did, for a manifest anchored
    # before): written again only when that write did not happen (a full disk), so its error is raised
    data = proof.dumps().encode("utf-8") if written is None else written
    if not _holds(proof_out, data) and not holds_it_sealed(proof_out, proof):
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
        superseded=superseded,
    )


def _holds(path: Path, data: bytes) -> bool:
    """Whether `path` is a regular file (not a link) with exactly `data` in it."""
    try:
        return not path.is_symlink() and path.is_file() and path.read_bytes() == data
    except OSError:
        return False


def bundle_annotations(
    manifest: BundleManifest, proof_out: Path, notes: dict[str, Any] | None = None
) -> tuple[dict[str, Any], tuple[dict[str, Any], Path] | None]:
    """(the bundle's annotations, its timing record's identity and proof path, or None without
    milestones): one rule for anchoring with the local key and through services. The milestones become
    tamper-evident in the timing record while staying outside the bundle's identity (docs/manifest.md,
    "Timing record"). `notes`: annotations of the caller's (how it ran), outside the identity."""
    from anchor.proof.locate import timing_proof_path

    annotations = {**(notes or {}), **manifest.annotations()}
    if manifest.milestones is None:
        return annotations, None
    from anchor.manifest.timing import timing_for

    timing = timing_for(manifest.digest, manifest.milestones)
    timing_out = timing_proof_path(proof_out)
    annotations["timing"] = {"digest": "0x" + timing.digest.hex(), "proof": timing_out.name}
    return annotations, (timing.identity(), timing_out)


def anchor_bundle(
    manifest: BundleManifest,
    tree: FileTreeManifest,
    settings: Settings,
    proof_out: Path,
    notes: dict[str, Any] | None = None,
) -> AnchorOutcome:
    """Anchor a result bundle and, when it has milestones, its timing record in the same batch (one
    transaction); the timing proof is written beside the bundle's (`bundle_annotations`)."""
    annotations, timing = bundle_annotations(manifest, proof_out, notes)
    companions = () if timing is None else (timing,)
    return anchor_manifest(manifest.identity(), tree, settings, proof_out, annotations, companions=companions)
