"""Retract what was anchored: a root its submitter anchored, or a lineage record of a commit
its researcher anchored. One entry, `retract`, for every door (`anchor retract`, `anchor.retract`).

Why a retraction and not a deletion: the registry is write-once, and science keeps retracted papers
readable. A retraction marks the record on chain with the block it was written in, and its event
carries the 32-byte digest of the reason: keccak256 of its UTF-8 text, so `cast keccak "TEXT"` checks
it. The text itself stays off chain, in the proof file's history (`annotations.retractions`): a
verdict shows it only when it hashes to the digest on chain (the file is anyone's to edit).

Only the record's owner can retract it: the registry keys every record by its submitter or researcher,
so a stranger's retraction reverts (tested in forge and on anvil). A root anchored through a service is
the service's record: its operator, whose key submitted it, is the one who can retract it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anchor.errors import BadInput, Conflict, NotAnchored
from anchor.record import Value

if TYPE_CHECKING:
    from anchor.settings.session import Settings

MAX_REASON = 2000
"""Characters of a reason: a sentence or a paragraph, not a paper (the proof file carries it)."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Retraction(Value):
    """What `retract` wrote: which record, why, in which transaction, and where the reason's text went."""

    kind: str
    """"root" (a stamped path's batch root) or "lineage" (a research commit's record)."""
    key: str
    reason: str
    reason_digest: str
    by: str
    chain_id: int
    registry: str
    tx_hash: str
    block_number: int
    gas_used: int
    proof: Path | None

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "key": self.key,
            "reason": self.reason,
            "reason_digest": self.reason_digest,
            "by": self.by,
            "chain_id": self.chain_id,
            "registry": self.registry,
            "tx_hash": self.tx_hash,
            "block_number": self.block_number,
            "gas_used": self.gas_used,
            "proof": None if self.proof is None else str(self.proof),
        }


def reason_digest(reason: str) -> bytes:
    """keccak256 of the reason's UTF-8 text (what `cast keccak "TEXT"` prints)."""
    from anchor.manifest.keccak import keccak256

    return keccak256(reason.encode())


def retract(settings: Settings, target: str | Path, reason: str, whole_batch: bool = False) -> Retraction:
    """Retract the record behind `target`: a path (its proof found as `anchor verify` finds it) or a proof
    file retracts that proof's root; a full research commit (40 or 64 hex) retracts its lineage record.
    A root anchors its whole batch: when the proof's Merkle path shows other items under it, the
    retraction reaches them too, irreversibly, so it is refused unless `whole_batch` says that is meant.
    Raises `BadInput` (no reason, a target that is neither, a batch not meant whole), `NotAnchored`
    (nothing on chain to retract), `Conflict` (not the caller's record, or retracted already)."""
    text = (reason or "").strip()
    if not text:
        raise BadInput(
            'reason: say why, in words (hint: a reason such as "the metric leaked")', detail={"field": "reason"}
        )
    if len(text) > MAX_REASON:
        raise BadInput(f"reason: at most {MAX_REASON} characters ({len(text)} given)", detail={"field": "reason"})
    given = str(target)
    if re.fullmatch(r"(0x)?([0-9a-fA-F]{40}|[0-9a-fA-F]{64})", given) and not Path(given).exists():
        return _retract_lineage(settings, given.removeprefix("0x").lower(), text)
    if re.fullmatch(r"(0x)?[0-9a-fA-F]{7,63}", given) and not Path(given).exists():
        raise BadInput(
            f"{given}: a commit is retracted by its full id (40 or 64 hex), never a prefix", detail={"field": "target"}
        )
    return _retract_root(settings, Path(given), text, whole_batch)


def _retract_root(settings: Settings, target: Path, text: str, whole_batch: bool) -> Retraction:
    from anchor.chain.keys import load_signer
    from anchor.chain.open import open_chain
    from anchor.chain.presets import chain_name
    from anchor.chain.registry import Registry
    from anchor.manifest.onchain import parse_hex32
    from anchor.proof.file import PendingProof, load_any, write_proof
    from anchor.proof.locate import proof_of
    from anchor.readback.checklist import refuse_retired, trusted_registry

    proof_path = proof_of(target)
    proof = load_any(proof_path)
    if isinstance(proof, PendingProof):
        raise NotAnchored(
            f"{proof_path}: pending, nothing is on chain to retract yet (hint: anchor upgrade first)",
            detail={"file": str(proof_path)},
        )
    refuse_retired(proof)
    others = len(proof.batch.proof) > 1 or set(proof.batch.proof) - _companion_leaves(proof_path, proof)
    if others and not whole_batch:  # before any chain is opened, any key read
        raise BadInput(
            f"{target}: its root {proof.batch.root} anchors at least one other result of the same batch (its"
            f" Merkle path has {len(proof.batch.proof)} sibling hashes), and a retraction is of the root: every"
            " result in the batch would read as retracted, irreversibly (hint: --whole-batch, if that is meant)",
            detail={"field": "whole_batch", "root": proof.batch.root},
        )
    handle = open_chain(settings)
    if handle.chain_id != proof.anchor.chain_id:
        raise BadInput(
            f"the proof is for {chain_name(proof.anchor.chain_id)}, the RPC endpoint serves"
            f" {chain_name(handle.chain_id)}",
            detail={"field": "anchor.chain_id"},
        )
    code_hash, _ = trusted_registry(proof, settings, handle.chain_id, None)
    registry = Registry(handle.rpc, handle.chain_id, proof.anchor.registry, code_hash)
    root = parse_hex32(proof.batch.root[2:], "batch.root")
    record = registry.root_record_of_tx(root, proof.anchor.tx_hash)
    if record is None:
        raise NotAnchored(
            f"root {proof.batch.root} is not anchored by the transaction the proof names",
            detail={"root": proof.batch.root},
        )
    signer = load_signer(handle.chain_id, settings.keystore, settings.env)
    if record.submitter.lower() != signer.address.lower():
        raise Conflict(
            f"root {proof.batch.root} was anchored by {record.submitter}, and your key is {signer.address}: only"
            " its submitter can retract it (a proof stamped through a service: ask that service's operator)",
            detail={"submitter": record.submitter, "signer": signer.address},
        )
    if record.retracted_block:
        raise Conflict(
            f"root {proof.batch.root} was retracted already, in block {record.retracted_block}",
            detail={"retracted_block": record.retracted_block},
        )
    digest = reason_digest(text)
    sent = registry.retract_root(signer, root, digest)
    outcome = Retraction(
        "root",
        proof.batch.root,
        text,
        "0x" + digest.hex(),
        signer.address,
        handle.chain_id,
        registry.address,
        sent.tx_hash,
        sent.block_number,
        sent.gas_used,
        proof_path,
    )
    recorded = proof.annotations.get("retractions")
    history = list(recorded) if isinstance(recorded, list) else []
    entry = {k: v for k, v in outcome.to_json().items() if k not in ("proof", "kind", "key", "gas_used")}
    annotations = {**(proof.annotations or {}), "retractions": [*history, entry]}
    write_proof(proof.model_copy(update={"annotations": annotations}), proof_path)
    return outcome


def _companion_leaves(proof_path: Path, proof: Any) -> set[str]:
    """Leaves of the same result anchored beside it under the same root: a result bundle and its own
    timing record are one batch of two (`anchor bundle --anchor`), so retracting either is retracting that
    one result. The pair is checked (the timing record binds the bundle's digest, each proof consistent),
    so an edited file beside it cannot pass another result's leaf off as the companion."""
    from anchor.proof.file import ProofFile, load_any
    from anchor.proof.locate import timing_proof_path
    from anchor.readback.checklist import check_proof_consistency

    name = proof_path.name
    is_timing = name.endswith(".timing.anchor.json")
    other = (
        proof_path.with_name(name.removesuffix(".timing.anchor.json") + ".anchor.json")
        if is_timing
        else timing_proof_path(proof_path)
    )
    if not other.is_file():
        return set()
    found = load_any(other)
    if not isinstance(found, ProofFile) or found.batch.root != proof.batch.root:
        return set()
    timing, bundle = (proof, found) if is_timing else (found, proof)
    if timing.manifest.get("kind") != "timing" or "0x" + str(timing.manifest.get("bundle")) != bundle.manifest_digest:
        return set()
    check_proof_consistency(found)  # its leaf is its own manifest's, on a path to this root
    return {found.batch.leaf}


def _retract_lineage(settings: Settings, commit: str, text: str) -> Retraction:
    from anchor.chain.keys import load_researcher, load_signer
    from anchor.chain.open import open_chain, open_registry
    from anchor.manifest.onchain import commit_key

    handle = open_chain(settings)
    registry = open_registry(settings, handle)
    signer = load_signer(handle.chain_id, settings.keystore, settings.env)
    researcher = load_researcher(settings.env)
    owner = researcher or signer
    key = commit_key(commit)
    record = registry.lineage(key, owner.address)
    if record is None:
        raise NotAnchored(
            f"commit {commit} has no lineage record by {owner.address} on this chain's registry"
            " (only its researcher can retract it)",
            detail={"commit": commit},
        )
    if record.retracted_block:
        raise Conflict(
            f"commit {commit}'s record was retracted already, in block {record.retracted_block}",
            detail={"retracted_block": record.retracted_block},
        )
    digest = reason_digest(text)
    if researcher is not None and researcher.address.lower() != signer.address.lower():
        signed = researcher.sign_retraction(handle.chain_id, registry.address, key, digest)
        sent = registry.retract_signed(signer, signed)  # the researcher signs, our key relays and pays
    else:
        sent = registry.retract_lineage(signer, key, digest)
    return Retraction(
        "lineage",
        "0x" + key.hex(),
        text,
        "0x" + digest.hex(),
        owner.address,
        handle.chain_id,
        registry.address,
        sent.tx_hash,
        sent.block_number,
        sent.gas_used,
        None,
    )


def dumps(outcome: Retraction) -> str:
    return json.dumps(outcome.to_json(), indent=2, sort_keys=True)
