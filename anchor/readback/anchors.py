"""Verify a proof stamped through services: every receipt checked, every anchor read on its own chain,
and the verdict given by one counting rule (`--require any|all|N`, default any; docs/calendar.md), the
same for a pending proof and a complete one, whether or not `anchor upgrade` ran.

The rule: `--require` counts distinct anchors, distinct (chain id, registry, transaction, root); a copy
of an anchor under another name is listed "same transaction as ...", and counts once. An anchor
counts for a service (for `all`, and in "the account of SERVICE") only when the file holds that
service's receipt for this manifest and the anchor's on-chain submitter is the account the service
publishes (`/v1/service` `submitter`); otherwise its service label is free text in an unsigned file:
it is listed "unconfirmed: named in the file" and counts as an anchor of its submitter only. `all`
asks every service the file names (its receipts, and those down at stamp time) for a confirmed anchor.

A receipt proves acceptance only, so it never makes a verdict pass: an anchor does. A pending service
is asked for its complete proof (read, never written: `anchor upgrade` writes it); what it answers is
read on chain like every anchor. Short of the requirement: `Pending` (exit 14) naming each service, or
the first failed anchor's own error.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from anchor.errors import AnchorError, BadInput, Pending, PolicyMismatch
from anchor.proof.file import PendingProof, ProofFile, ServiceAnchor, pending_error
from anchor.proof.receipt import Receipt, check_receipt
from anchor.readback.verdict_json import AnchorRow, PendingRow
from anchor.readback.verifier import (
    Verification,
    agreed_on_chain,
    check_data,
    check_manifest_and_listing,
    check_proof_consistency,
)
from anchor.settings.session import Settings


def required_count(require: str, total: int) -> int:
    """How many anchors `--require` asks for: any (1), all (every service named), or N."""
    if require == "any":
        return 1
    if require == "all":
        return max(1, total)
    if require.isdigit() and int(require) >= 1:
        return int(require)
    raise BadInput(f"require {require!r}: expected any, all, or a number of anchors (1, 2, ...)",
                   detail={"field": "require"})  # fmt: skip


def refuse_unmeetable(require: str, total: int) -> None:
    """`PolicyMismatch` (exit 10, 412) when `--require N` asks for more anchors than the proof can ever
    hold (`total`: verified, failed and pending together): no upgrade will bring the rest, so it is not
    `Pending`, and never a silent OK (a key-here proof, one anchor, passed `--require 2` unremarked)."""
    needed = required_count(require, total)
    if require.isdigit() and needed > total:  # a number asked for: `any` and `all` are met by what there is
        raise PolicyMismatch(
            f"require {require}: the proof holds {total} anchor{'' if total == 1 else 's'}, {needed} needed"
            " (each service stamped through gives one: stamp through more services to meet it)",
            detail={"field": "require", "anchors": total, "needed": needed},
        )


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
    from anchor.readback.endpoints import settings_for_chain

    single = proof.with_anchor(anchor)
    chain_settings = settings_for_chain(settings, anchor.anchor.chain_id,
                                        None if anchor.service == "local key" else anchor.service)  # fmt: skip
    named = trusted(registries, anchor.anchor.registry)
    verdict = agreed_on_chain(single, check_proof_consistency(single), chain_settings, files, named, quorum)
    return verdict.model_copy(update={"service": anchor.service})


def _key(verdict: Verification) -> tuple[int, str, str, str]:
    """What makes an anchor distinct: its chain, registry, transaction and root, as read on chain."""
    return (verdict.chain_id, verdict.registry.lower(), verdict.tx_hash.lower(), verdict.root.lower())


def _publishes(info: dict[str, Any] | None, verdict: Verification) -> bool:
    """Whether the service's own /v1/service names the account, chain and registry the chain shows."""
    if info is None:
        return False
    submitter, registry = info.get("submitter"), info.get("registry")
    return (isinstance(submitter, str) and submitter.lower() == verdict.submitter.lower()
            and info.get("chain_id") == verdict.chain_id
            and isinstance(registry, str) and registry.lower() == verdict.registry.lower())  # fmt: skip


def verify_anchors(
    path: Path, found: ProofFile | PendingProof, proof_name: str, settings: Settings, registries: tuple[str, ...],
    quorum: int | None, require: str, configured: tuple[str, ...] = (),
) -> Verification:  # fmt: skip
    """Every anchor and receipt of `found` (complete or pending); passes when `require` anchors count.
    `configured`: the service URLs the user gave now (`--service`, ANCHOR_SERVICE_URLS); any other URL
    came from the file, and each line naming one says so."""
    from anchor.errors import ServiceError
    from anchor.readback.services import Service, fetch_anchor, service_info

    # 1. The file on its own: manifest, listing, batch path, every receipt's signature, the data.
    if isinstance(found, ProofFile):
        check_proof_consistency(found)
    else:
        check_manifest_and_listing(found)
    receipts = tuple(found.receipts or ())
    check_receipts(receipts, found.manifest_digest)
    files = check_data(path, found, proof_name)
    # 2. Each service the receipts name: who it is (its receipt key must have signed the receipt, its
    #    funded account confirms its anchors), and its anchor when the file holds none from it.
    in_file = found.all_anchors() if isinstance(found, ProofFile) else []
    infos: dict[str, dict[str, Any] | None] = {}
    silent: set[str] = set()
    fetched: list[ServiceAnchor] = []
    for receipt in receipts:
        if settings.offline:  # no socket: a receipt stands on its own signature, its anchor on its seal
            infos[receipt.url] = None
            silent.add(receipt.url)
            continue
        try:
            info = service_info(Service(receipt.url), retries=0)
        except (ServiceError, BadInput):
            infos[receipt.url] = None  # down: the receipt stands on its own signature, its anchors unconfirmed
            silent.add(receipt.url)
            continue
        history = info.get("receipt_signers")
        check_receipt(receipt, found.manifest_digest, str(info.get("receipt_signer")),
                      history if isinstance(history, list) else None)  # fmt: skip
        infos[receipt.url] = info
        if any(a.service == receipt.url for a in in_file):
            continue
        try:  # read on chain below, under the verifier's trust, not here as well
            anchor = fetch_anchor(receipt, found, settings, check=False)
        except (ServiceError, BadInput):
            silent.add(receipt.url)
            continue
        if anchor is not None:
            fetched.append(anchor)
    # 3. Every anchor on its own chain, under the verifier's trust and quorum.
    rows: list[AnchorRow] = []
    counted: list[Verification] = []
    failures: list[AnchorError] = []
    seen: dict[tuple[int, str, str, str], str] = {}
    confirmed: set[str] = set()
    held = {r.url for r in receipts}
    base = found if isinstance(found, ProofFile) else None
    for anchor in [*in_file, *fetched]:
        single = base if base is not None else found.anchored(anchor)  # type: ignore[union-attr]
        row: AnchorRow = {"service": anchor.service, "chain_id": anchor.anchor.chain_id,
                               "registry": anchor.anchor.registry, "in_file": anchor not in fetched,
                               "from_file": anchor.service not in configured}  # fmt: skip
        try:
            verdict = check_one_anchor(single, anchor, files, settings, registries, quorum)
        except AnchorError as exc:
            failures.append(exc)
            rows.append({**row, "ok": False, "error": exc.to_dict()})
            continue
        row.update({"ok": True, "chain_id": verdict.chain_id, "registry": verdict.registry,
                    "submitter": verdict.submitter, "anchored_at": verdict.anchored_at, "block": verdict.anchored_block,
                    "finality": verdict.finality, "tx_hash": verdict.tx_hash})  # fmt: skip
        # 4. Distinct anchors: a copy of one under another name counts once.
        key = _key(verdict)
        if key in seen:
            rows.append({**row, "duplicate_of": seen[key], "confirmed": False})
            continue
        seen[key] = anchor.service
        # 5. A service's anchor only when the file holds its receipt and the chain names its account.
        #    Offline no service can be asked: its anchor counts as its own when its receipt (signature
        #    checked above) names the chain and registry the sealed anchor shows, and the row says so.
        sure = anchor.service in held and (
            _publishes(infos.get(anchor.service), verdict)
            or (settings.offline and _receipt_names(receipts, anchor.service, verdict))
        )
        if sure and settings.offline:
            row["confirmed_by"] = "its signed receipt (offline: the service's own account is not asked)"
        if sure:
            confirmed.add(anchor.service)
        rows.append({**row, "confirmed": sure})
        counted.append(verdict.model_copy(update={"service": anchor.service if sure else None}))
    # 6. The requirement, counted over distinct anchors; `all`: every service the file names, confirmed.
    named = list(dict.fromkeys([*(r.url for r in receipts), *(found.unreached or ())]))
    pending = [{**_pending_row(r), "from_file": r.url not in configured, "answered": r.url not in silent}
               for r in receipts if r.url not in confirmed]  # fmt: skip
    pending += [{"service": url, "state": "unreached", "from_file": url not in configured}
                for url in found.unreached or () if url not in confirmed]  # fmt: skip
    total = len(counted) + len(failures) + len(pending)
    needed = required_count(require, total)
    if require == "all":
        met = bool(counted) and not failures and all(url in confirmed for url in named)
        needed = max(len(named), len(counted) + len(failures), 1)
    else:
        met = len(counted) >= needed
    if met:
        first = next((v for v in counted if v.service is not None), counted[0])
        return first.model_copy(update={"anchors": rows, "pending": pending or None, "required": require})
    said = f"require {require}: {len(counted)} of {total} anchors verified, {needed} needed"
    if not failures:
        refuse_unmeetable(require, total)
    if failures:
        first_failure = failures[0]
        raise type(first_failure)(f"{first_failure.message} ({said})",
                                  detail={**first_failure.detail, "anchors": rows, "pending": pending})  # fmt: skip
    waiting = ", ".join(str(p["service"]) + (" (named by the file)" if p["from_file"] else "") for p in pending)
    if not counted and isinstance(found, PendingProof):
        error = pending_error(found, proof_name)
        said_where = "; ".join(
            f"pending at {p['service']}" + (" (named by the file)" if p["from_file"] else "")
            + (f" since {p['since']}, receipt signed by {p['signer']}" if p["state"] == "pending"
               else ", down at stamp time")
            + ("" if p.get("answered", True) else " (not reachable now: it could not be asked for its anchor)")
            for p in pending
        ) or "no service has accepted it yet"  # fmt: skip
        raise Pending(f"{proof_name}: not anchored yet: {said_where}; complete it with `anchor upgrade {proof_name}`"
                      " after the service's next batch",
                      detail={**error.detail, "anchors": rows, "pending": pending})  # fmt: skip
    raise Pending(f"{proof_name}: {said}; the others are pending: {waiting or 'none named'}"
                  f" (run `anchor upgrade {proof_name}`)", detail={"anchors": rows, "pending": pending})  # fmt: skip


def _receipt_names(receipts: tuple[Receipt, ...], service: str, verdict: Verification) -> bool:
    """Whether `service`'s receipt in the file names the chain and registry the verdict read."""
    return any(r.url == service and r.chain_id == verdict.chain_id and r.registry.lower() == verdict.registry.lower()
               for r in receipts)  # fmt: skip


def _pending_row(receipt: Receipt) -> PendingRow:
    return {"service": receipt.url, "state": "pending", "since": _when(receipt.accepted_at), "signer": receipt.signer,
            "chain_id": receipt.chain_id, "registry": receipt.registry}  # fmt: skip
