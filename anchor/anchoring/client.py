"""Client mode: stamp through anchoring services that hold the funded key (docs/calendar.md).

The file bytes and their listing never leave this machine: a service gets the manifest identity (and,
for a bundle, its annotations) and answers with a signed receipt at once. The proof written at once is
*pending*; `anchor upgrade` fetches each service's complete proof after its next batch and checks it
against the chain before it writes anything. Several services give several anchors in one file; one
that is down is skipped with a warning and submitted to again at upgrade.

Every call carries an idempotency key derived from the digest, so a retry after a timeout is the same
record, never a second one.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anchor.errors import AnchorError, BadInput, ServiceError
from anchor.manifest.listed import ListedFile
from anchor.proof.file import PendingProof, ProofFile, ServiceAnchor, load_any, write_proof
from anchor.proof.receipt import Receipt, check_receipt, parse_receipt
from anchor.readback.services import URL_PATTERN, Service, call, clean_url, error_of, fetch_anchor, service_info
from anchor.record import Value
from anchor.settings.model import Environment

log = logging.getLogger("anchor.progress")


def services_from(
    urls: Sequence[str] | None,
    allow_insecure_token: bool = False,
    given_as: str | None = None,
    env: Environment | None = None,
) -> list[Service]:
    """`--service URL` (repeatable), else ANCHOR_SERVICE_URLS (comma-separated). The token comes from
    ANCHOR_SERVICE_TOKEN: one token for these configured services, or `URL=TOKEN` pairs separated by
    commas. Tokens are never taken from the command line (where `ps` shows them), and never sent over
    plain http to a host other than this machine unless `allow_insecure_token`. `env`: the settings
    model these variables come from (the defaults when None)."""
    env = Environment() if env is None else env
    given = list(urls or []) or list(env.service_urls)
    given_as = given_as or ("services" if urls else "ANCHOR_SERVICE_URLS")
    tokens = _tokens(env)
    found = []
    for url in given:
        clean = clean_url(url, given_as)
        token = tokens.get(clean, tokens.get("*"))
        if token and not allow_insecure_token and not _private_way(clean):
            raise BadInput(
                f"{given_as} {clean}: the token would travel in clear over plain http to another host, where anyone on"
                " the way can read it (hint: use https://, or allow_insecure_token if you accept that)",
                detail={"field": "services", "service": clean, "inputs": ["allow_insecure_token"]},
            )
        found.append(Service(clean, token))
    if len({s.url for s in found}) != len(found):
        raise BadInput("services: the same service is named twice", detail={"field": "services"})
    return found


def _private_way(url: str) -> bool:
    """Whether a token sent to `url` stays private on the way: https, or plain http to this machine."""
    import ipaddress
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme == "https":
        return True
    host = (parts.hostname or "").strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _tokens(env: Environment) -> dict[str, str]:
    """ANCHOR_SERVICE_TOKEN, by service URL ("*": one token for every configured service)."""
    if env.service_token is None:
        return {}
    raw = env.service_token.get_secret_value()
    pairs = [part.strip() for part in raw.split(",") if part.strip()]
    if len(pairs) == 1 and not re.match(r"^https?://", pairs[0]):
        return {"*": pairs[0]}
    tokens = {}
    for pair in pairs:
        url, sep, token = pair.rpartition("=")
        if not sep or not URL_PATTERN.match(url) or not token:
            raise BadInput(
                "ANCHOR_SERVICE_TOKEN: one token, or URL=TOKEN pairs separated by commas",
                detail={"field": "ANCHOR_SERVICE_TOKEN"},
            )
        tokens[url.rstrip("/")] = token
    return tokens


def submit_to(service: Service, identity: dict[str, Any], annotations: dict[str, Any] | None = None) -> Receipt:
    """Send one identity (never a listing) and return the checked receipt. Without a token, a public
    calendar (`anchor serve --calendar`) takes it on /v1/calendar."""
    from anchor.manifest.identity import manifest_digest

    digest = "0x" + manifest_digest(identity).hex()
    info = service_info(service)
    if service.token is None and not info.get("calendar"):
        raise ServiceError(
            f"{service.url}: no token for this service (set ANCHOR_SERVICE_TOKEN), and it is not a public calendar",
            detail={"service": service.url},
        )
    if service.token is None:
        status, data = call(service, "POST", "/v1/calendar", {"manifest": identity}, key=f"stamp-{digest[2:]}")
    else:
        body: dict[str, Any] = {"manifest": identity, **({"annotations": annotations} if annotations else {})}
        status, data = call(service, "POST", "/v1/manifests", body, key=f"stamp-{digest[2:]}", auth=True)
    if status != 202 or not isinstance(data, dict):
        raise error_of(service, status, data, "the submission was refused")
    receipt = parse_receipt(data.get("receipt"), service.url)
    check_receipt(receipt, digest, str(info["receipt_signer"]))
    if receipt.chain_id != info.get("chain_id") or receipt.registry.lower() != str(info.get("registry")).lower():
        raise ServiceError(
            f"{service.url}: the receipt names another chain or registry than /v1/service",
            detail={"service": service.url},
        )
    return receipt


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class StampOutcome(Value):
    proof_path: Path
    digest: str
    receipts: tuple[Receipt, ...]
    failed: dict[str, str]
    """Services that did not take it now, and why (submitted to again by `anchor upgrade`)."""
    file_count: int


def submit_everywhere(
    services: Sequence[Service], identity: dict[str, Any], annotations: dict[str, Any] | None = None
) -> tuple[list[Receipt], dict[str, str]]:
    """Every service at once; (receipts, {url: why not}) in the order the services were given."""

    def one(service: Service) -> Receipt | AnchorError:
        try:
            return submit_to(service, identity, annotations)
        except AnchorError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=min(8, len(services))) as pool:
        results = list(pool.map(one, services))
    receipts = [r for r in results if isinstance(r, Receipt)]
    failed = {s.url: r.message for s, r in zip(services, results, strict=True) if isinstance(r, AnchorError)}
    return receipts, failed


def stamp_through(
    identity: dict[str, Any],
    files: list[ListedFile] | None,
    services: Sequence[Service],
    proof_out: Path,
    annotations: dict[str, Any] | None = None,
) -> StampOutcome:
    """Submit to every service and write the pending proof (or add the receipts to the proof already
    there for the same bytes). Nothing is written unless at least one service gave a receipt."""
    from anchor.anchoring.stamp import keep_superseded
    from anchor.manifest.identity import manifest_digest
    from anchor.proof.file import check_output_path

    if not services:
        raise BadInput("no service: give --service URL (or set ANCHOR_SERVICE_URLS)", detail={"field": "services"})
    check_output_path(proof_out)
    digest = "0x" + manifest_digest(identity).hex()
    receipts, failed = submit_everywhere(services, identity, annotations)
    if not receipts:
        raise ServiceError(
            "no service took it; nothing was written: "
            + "; ".join(f"{u}: {w.removeprefix(f'{u}: ')}" for u, w in failed.items()),
            detail={"services": failed},
        )
    for url, why in failed.items():
        log.warning("warning: %s did not take it (%s); `anchor upgrade` submits to it again", url, why)
    existing = _existing(proof_out, digest)
    if existing is None:
        keep_superseded(proof_out, digest)
        written: ProofFile | PendingProof = PendingProof(
            manifest=identity,
            annotations=annotations or {},
            files=None if files is None else tuple(files),
            manifest_digest=digest,
            receipts=tuple(receipts),
            unreached=tuple(failed) or None,
        )
    else:
        written = _merged(existing, receipts, failed)
    write_proof(written, proof_out)
    return StampOutcome(proof_out, digest, tuple(receipts), failed, len(files or []))


def _existing(proof_out: Path, digest: str) -> ProofFile | PendingProof | None:
    if not proof_out.is_file():
        return None
    try:
        found = load_any(proof_out)
    except BadInput:
        return None
    return found if found.manifest_digest == digest else None


def _merged(existing: ProofFile | PendingProof, receipts: list[Receipt], failed: dict[str, str]) -> Any:
    """The proof already there, with these receipts instead of older ones from the same services."""
    fresh = {r.url for r in receipts}
    kept = [r for r in existing.receipts or () if r.url not in fresh]
    unreached = [u for u in existing.unreached or () if u not in fresh] + [u for u in failed if u not in fresh]
    return existing.model_copy(
        update={"receipts": tuple(kept + receipts), "unreached": tuple(dict.fromkeys(unreached)) or None}
    )


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Upgraded(Value):
    proof_path: Path
    digest: str
    added: tuple[ServiceAnchor, ...]
    """Anchors this upgrade added (each checked against the chain first)."""
    still_pending: tuple[str, ...]
    failed: dict[str, str]
    complete: bool
    """Every service the file names has its anchor in the file: nothing is pending any more."""
    not_contacted: tuple[str, ...] = ()
    """Services the file lists as down at stamp time that are not configured now: never sent a token
    (the file is unsigned; whoever edited it could have named their own server). Printed, not contacted."""
    errors: dict[str, AnchorError] = field(default_factory=dict)
    """The typed error behind each of `failed`'s words, for a door to say in its own (`said_as`)."""


def upgrade(proof_path: Path, settings: Any, services: Sequence[Service] = ()) -> Upgraded:
    """Fetch every receipt's complete proof, check it against the chain (consistency, the root on the
    registry the receipt names, the registry's code), add it, and submit again to the services that
    were down, only where the user sends tokens now: `services` (configured: --service or
    ANCHOR_SERVICE_URLS, each with its own token), or a service whose receipt the file holds (with a
    token named for its URL only). The file is rewritten atomically, only if something was added;
    nothing else in it changes."""
    found = load_any(proof_path)
    digest = found.manifest_digest
    from anchor.readback.checklist import check_service_anchor

    have = {a.service for a in found.all_anchors()} if isinstance(found, ProofFile) else set()
    added: list[ServiceAnchor] = []
    waiting: list[str] = []
    failed: dict[str, str] = {}
    errors: dict[str, AnchorError] = {}
    for receipt in found.receipts or ():
        if receipt.url in have:
            continue
        try:
            anchor = fetch_anchor(receipt, found, settings)
            if anchor is not None:  # read on chain before it is written in
                check_service_anchor(found, anchor, settings, receipt.registry)
        except AnchorError as exc:
            failed[receipt.url], errors[receipt.url] = exc.message, exc
            continue
        if anchor is None:
            waiting.append(receipt.url)
        else:
            added.append(anchor)
    new_receipts: list[Receipt] = []
    unreached = list(found.unreached or ())
    configured, named = {s.url: s for s in services}, _tokens(settings.env)
    held = {r.url for r in found.receipts or ()}
    retry = [configured.get(u) or Service(u, named.get(u)) for u in unreached if u in configured or u in held]
    ignored = tuple(u for u in unreached if u not in configured and u not in held)
    if retry:
        new_receipts, still_failed = submit_everywhere(retry, found.manifest, found.annotations or None)
        failed.update(still_failed)
        waiting += [r.url for r in new_receipts]
        unreached = [*still_failed, *ignored]
    anchored = have | {a.service for a in added}
    receipts = [*(found.receipts or ()), *new_receipts]
    if not added and not new_receipts and unreached == list(found.unreached or ()):
        complete = isinstance(found, ProofFile) and not unreached and all(r.url in anchored for r in receipts)
        return Upgraded(proof_path, digest, (), tuple(waiting), failed, complete, ignored, errors)
    updated = _with_anchors(found, added, new_receipts, unreached)
    write_proof(updated, proof_path)
    complete = isinstance(updated, ProofFile) and not unreached and all(r.url in anchored for r in receipts)
    return Upgraded(proof_path, digest, tuple(added), tuple(waiting), failed, complete, ignored, errors)


def _with_anchors(
    found: ProofFile | PendingProof, added: list[ServiceAnchor], receipts: list[Receipt], unreached: list[str]
) -> ProofFile | PendingProof:
    all_receipts = tuple(found.receipts or ()) + tuple(receipts)
    if isinstance(found, ProofFile):
        return found.model_copy(
            update={
                "anchors": tuple(found.anchors or ()) + tuple(added) or None,
                "receipts": all_receipts or None,
                "unreached": tuple(unreached) or None,
            }
        )
    if not added:
        return found.model_copy(update={"receipts": all_receipts, "unreached": tuple(unreached) or None})
    first, *rest = added
    return found.anchored(first).model_copy(
        update={
            "anchors": tuple(rest) or None,
            "receipts": all_receipts or None,
            "unreached": tuple(unreached) or None,
        }
    )


def relay_lineage(service: Service, researcher: Any, fields: tuple[bytes, bytes, bytes, bytes, bool]) -> int:
    """Sign one lineage record with the researcher's own key, for the service's chain and registry,
    and have the service relay it (it pays; it never sees the key). Returns the service's effect id."""
    from anchor.chain.signed import signed_lineage

    info = service_info(service)
    signed = signed_lineage(researcher, int(info["chain_id"]), str(info["registry"]), fields)
    commit = fields[0]
    status, data = call(service, "POST", "/v1/lineage", signed.to_json(), key=f"lineage-{commit.hex()}", auth=True)
    if status != 202 or not isinstance(data, dict):
        raise error_of(service, status, data, "the lineage record was not relayed")
    return int(data.get("effect", 0))


def upgrade_when_anchored(
    proofs: Sequence[Path], settings: Any, wait_s: float, poll_s: float = 1.0
) -> dict[Path, Upgraded | AnchorError]:
    """`upgrade` each proof until it is complete or `wait_s` has passed (saying once what it waits for):
    what a run does at its end, so that its proofs are complete when it says it is done."""
    import time

    deadline = time.monotonic() + wait_s
    results: dict[Path, Upgraded | AnchorError] = {}
    open_ = list(proofs)
    said = False
    while open_:
        for path in list(open_):
            try:
                results[path] = done = upgrade(path, settings)
            except AnchorError as exc:
                results[path] = exc
                open_.remove(path)
                continue
            if done.complete:
                open_.remove(path)
        if not open_ or time.monotonic() >= deadline:
            break
        if not said:
            log.info("waiting up to %.0f s for the services' next batch (%d proofs pending)", wait_s, len(open_))
            said = True
        time.sleep(poll_s)
    return results


def stamp_bundle_through(
    manifest: Any, tree: Any, services: Sequence[Service], proof_out: Path, notes: dict[str, Any] | None = None
) -> StampOutcome:
    """`anchor.anchoring.stamp.anchor_bundle` through services: the bundle's timing record (when it has
    milestones) is stamped too, its pending proof beside the bundle's (`bundle_annotations`)."""
    from anchor.anchoring.stamp import bundle_annotations

    annotations, timing = bundle_annotations(manifest, proof_out, notes)
    if timing is not None:
        stamp_through(timing[0], None, services, timing[1])
    return stamp_through(manifest.identity(), tree.files_json(), services, proof_out, annotations)
