"""Verify a proof stamped through services: every receipt checked, every anchor read on its own chain,
and the verdict given by a policy (`--require any|all|N`, default any; docs/calendar.md).

A receipt proves acceptance only, so it never makes a verdict pass: an anchor does. A pending proof
(no anchor yet) is the `Pending` verdict, exit 14, which names each service, since when and the
receipt key, unless a service already has the complete proof: then that anchor is checked against
the chain and the verdict says `anchor upgrade` will write it (verify itself never writes).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from anchor.errors import AnchorError, BadInput, Pending
from anchor.proof.file import PendingProof, ProofFile, ServiceAnchor, pending_error
from anchor.proof.receipt import Receipt, check_receipt
from anchor.settings.session import Settings
from anchor.verify.verifier import (
    Verification,
    agreed_on_chain,
    check_data,
    check_manifest_and_listing,
    check_proof_consistency,
)


def required_count(require: str, total: int) -> int:
    """How many anchors `--require` asks for: any (1), all (every service named), or N."""
    if require == "any":
        return 1
    if require == "all":
        return max(1, total)
    if require.isdigit() and int(require) >= 1:
        return int(require)
    raise BadInput(f"--require {require!r}: expected any, all, or a number of anchors (1, 2, ...)",
                   detail={"field": "require"})  # fmt: skip


def trusted(registries: tuple[str, ...], claimed: str) -> str | None:
    """The registry to trust for an anchor: the one given that it names, else (several given, none its
    own) the first, which `trusted_registry` then refuses by name; none given: the deployment record."""
    for named in registries:
        if named.lower() == claimed.lower():
            return named
    return registries[0] if registries else None


def _when(timestamp: int) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")


def check_receipts(receipts: tuple[Receipt, ...], digest: str) -> None:
    """Offline: each receipt is for this digest and its signature recovers to the signer it names."""
    for receipt in receipts:
        check_receipt(receipt, digest)


def check_one_anchor(
    proof: ProofFile, anchor: ServiceAnchor, files: int, settings: Settings, registries: tuple[str, ...],
    quorum: int | None,
) -> Verification:  # fmt: skip
    """One anchor of the file, read from the endpoints serving its chain."""
    from anchor.verify.endpoints import settings_for_chain

    single = proof.with_anchor(anchor)
    chain_settings = settings_for_chain(settings, anchor.anchor.chain_id)
    named = trusted(registries, anchor.anchor.registry)
    verdict = agreed_on_chain(single, check_proof_consistency(single), chain_settings, files, named, quorum)
    return verdict.model_copy(update={"service": anchor.service})


def verify_anchors(
    path: Path, proof: ProofFile, proof_name: str, settings: Settings, registries: tuple[str, ...],
    quorum: int | None, require: str,
) -> Verification:  # fmt: skip
    """Every anchor and receipt of `proof`; passes when `require` anchors verify."""
    check_proof_consistency(proof)  # the manifest, its listing and the first batch path
    check_receipts(proof.receipts or (), proof.manifest_digest)
    files = check_data(path, proof, proof_name)
    rows: list[dict[str, Any]] = []
    passed: list[Verification] = []
    failures: list[AnchorError] = []
    for anchor in proof.all_anchors():
        try:
            verdict = check_one_anchor(proof, anchor, files, settings, registries, quorum)
        except AnchorError as exc:
            failures.append(exc)
            rows.append({"service": anchor.service, "ok": False, "chain_id": anchor.anchor.chain_id,
                         "registry": anchor.anchor.registry, "error": exc.to_dict()})  # fmt: skip
            continue
        passed.append(verdict)
        rows.append({
            "service": anchor.service, "ok": True, "chain_id": verdict.chain_id, "registry": verdict.registry,
            "submitter": verdict.submitter, "anchored_at": verdict.anchored_at, "block": verdict.anchored_block,
            "finality": verdict.finality,
        })  # fmt: skip
    anchored = {a.service for a in proof.all_anchors()}
    pending = [_pending_row(r) for r in proof.receipts or () if r.url not in anchored]
    pending += [{"service": url, "state": "unreached"} for url in proof.unreached or ()]
    needed = required_count(require, len(rows) + len(pending))
    if len(passed) >= needed:
        return passed[0].model_copy(update={"anchors": rows, "pending": pending or None, "required": require})
    said = f"--require {require}: {len(passed)} of {len(rows) + len(pending)} anchors verified, {needed} needed"
    if failures:
        first = failures[0]
        raise type(first)(f"{first.message} ({said})", detail={**first.detail, "anchors": rows, "pending": pending})
    raise Pending(f"{proof_name}: {said}; the others are pending: "
                  + ", ".join(str(p["service"]) for p in pending) + f" (run `anchor upgrade {proof_name}`)",
                  detail={"anchors": rows, "pending": pending})  # fmt: skip


def _pending_row(receipt: Receipt) -> dict[str, Any]:
    return {"service": receipt.url, "state": "pending", "since": _when(receipt.accepted_at), "signer": receipt.signer,
            "chain_id": receipt.chain_id, "registry": receipt.registry}  # fmt: skip


def verify_pending(
    path: Path, pending: PendingProof, proof_name: str, settings: Settings, registries: tuple[str, ...],
    quorum: int | None,
) -> Verification:  # fmt: skip
    """A proof no upgrade has completed: the data and the receipts are checked; each service that
    answers is asked for its signing key (a receipt signed by another key is forged) and for the
    complete proof. Raises `Pending` (exit 14) unless one service has anchored it."""
    from anchor.errors import ServiceError
    from anchor.verify.services import Service, fetch_anchor, service_info

    check_manifest_and_listing(pending)
    check_receipts(pending.receipts, pending.manifest_digest)
    files = check_data(path, pending, proof_name)
    for receipt in pending.receipts:
        try:
            info = service_info(Service(receipt.url), retries=0)
        except (ServiceError, BadInput):
            continue  # down: the receipt stands on its own signature
        history = info.get("receipt_signers")
        check_receipt(receipt, pending.manifest_digest, str(info.get("receipt_signer")),
                      history if isinstance(history, list) else None)  # fmt: skip
        try:  # read on chain below, under the verifier's trust, not here as well
            anchor = fetch_anchor(receipt, pending, settings, check=False)
        except (ServiceError, BadInput):
            continue
        if anchor is None:
            continue
        verdict = check_one_anchor(pending.anchored(anchor), anchor, files, settings, registries, quorum)
        return verdict.model_copy(update={
            "anchors": [{"service": anchor.service, "ok": True, "chain_id": verdict.chain_id,
                         "registry": verdict.registry, "submitter": verdict.submitter,
                         "anchored_at": verdict.anchored_at, "block": verdict.anchored_block,
                         "in_file": False}],
        })  # fmt: skip
    raise pending_error(pending, proof_name)
