"""`verify PATH`: the one entry that reads a proof file, complete or pending, with one anchor or several,
and gives the verdict (steps 1-8; `verifier` holds the single-anchor steps, `anchors` the rest)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from anchor.proof.file import PendingProof, ProofFile
from anchor.readback.anchors import refuse_unmeetable, trusted, verify_anchors
from anchor.readback.verifier import Verification, check_milestones, check_resume_pin, verify_proof
from anchor.settings.session import Settings


def verify_path(
    path: Path, found: ProofFile | PendingProof, proof_path: Path, settings: Settings,
    registries: tuple[str, ...] = (), quorum: int | None = None, require: str = "any",
    configured: tuple[str, ...] = (), find: Callable[[bytes], ProofFile | None] | None = None,
) -> Verification:  # fmt: skip
    """Verify `path` (a tree, or one file with a single-file proof) against the proof `found`, as read
    from `proof_path` (`load_any`: decoded once, everything it states following from what it contains).

    The steps are numbered here and in `verifier._on_one_endpoint`; the chain steps run against every read
    endpoint and need `quorum` of them to agree (anchor.readback.quorum). `registries`: the addresses
    trusted besides the deployment records (`--registry`, repeatable), each for the anchor naming it. A
    proof stamped through services (receipts, several anchors) is checked anchor by anchor against
    `require` (anchor.readback.anchors), pending or complete alike: one counting rule, whether or not
    `anchor upgrade` ran. `configured`: the service URLs given now (any other came from the file).
    `find`: the proof store, for the timing record and resume pin a bundle names.
    """
    if isinstance(found, PendingProof):  # `Pending` unless the services' anchors meet `require` already
        return verify_anchors(path, found, str(proof_path), settings, registries, quorum, require, configured)
    proof = found
    registry = trusted(registries, proof.anchor.registry)
    if not (proof.anchors or proof.receipts or proof.service):  # one anchor: the one verdict of every door
        verdict = verify_proof(proof, settings, data=path, proof_name=str(proof_path), registry=registry,
                               quorum=quorum, beside=proof_path.parent, find=find)  # fmt: skip
        refuse_unmeetable(require, 1)  # after the verdict: a tampered file is told as tampered first
        return verdict
    verdict = verify_anchors(path, proof, str(proof_path), settings, registries, quorum, require, configured)
    # 7. A bundle's milestones: the ones its anchored timing record binds, or said to be unverified.
    verdict = check_milestones(verdict, proof, proof_path.parent, settings, registry, find, quorum)
    # 8. A resumed bundle's pin: anchored, and the same mission, snapshot, image and policy.
    check_resume_pin(proof.manifest, settings, registry, quorum=quorum, find=find)
    return verdict
