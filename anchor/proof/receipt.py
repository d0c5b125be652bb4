"""Signed receipts: what an anchoring service accepted, and when, signed at once (docs/calendar.md).

Why: a client without a funded key sends its manifest to a service (a calendar, as OpenTimestamps
calls it) and should leave with evidence at once, not after the next batch is mined. The service signs
EIP-712 typed data binding the manifest digest, the time it accepted it and its own name, in a domain
bound to the chain id and registry it anchors on. The receipt key is not the funded key: a leaked
receipt key lets someone forge receipts (which prove acceptance only) and never spend gas.

A receipt proves acceptance, not anchoring: a service may sign and never anchor, or anchor late.
The complete proof (`anchor upgrade`) is checked against the chain and needs no trust in the service.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from anchor.errors import BadInput, ProofFormatError
from anchor.record import Record, RecordError, check

RECEIPT_DOMAIN = "Anchor receipt"
RECEIPT_VERSION = "1"
RECEIPT_TYPE = [
    {"name": "manifestDigest", "type": "bytes32"},
    {"name": "acceptedAt", "type": "uint64"},
    {"name": "service", "type": "string"},
]


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Receipt(Record):
    """One service's signed acceptance of one manifest. `url` is where the client reached the service
    (not signed: it is where `anchor upgrade` asks again); everything else is signed."""

    url: str = check(max_length=2000)
    service: str = check(max_length=200)
    """The name the service signs under (ANCHOR_SERVICE_NAME)."""
    signer: str = check(pattern=r"^0x[0-9a-fA-F]{40}$")
    """The receipt key's address, as the service publishes it at /v1/service."""
    manifest_digest: str = check(pattern=r"^0x[0-9a-f]{64}$")
    chain_id: int = check(gt=0, lt=1 << 64)
    registry: str = check(pattern=r"^0x[0-9a-fA-F]{40}$")
    accepted_at: int = check(ge=0, lt=1 << 64)
    """Unix seconds: when the service first accepted this manifest."""
    signature: str = check(pattern=r"^0x[0-9a-f]{130}$")

    def _typed_data(self) -> dict[str, Any]:
        return typed_data(self.chain_id, self.registry, self.manifest_digest, self.accepted_at, self.service)


def _message(digest: str, accepted_at: int, service: str) -> dict[str, Any]:
    return {"manifestDigest": bytes.fromhex(digest[2:]), "acceptedAt": accepted_at, "service": service}


def typed_data(chain_id: int, registry: str, digest: str, accepted_at: int, service: str) -> dict[str, Any]:
    """The full EIP-712 message (what `cast wallet sign --data` and wallets take)."""
    from anchor.manifest import eip712

    return eip712.typed_data(
        RECEIPT_DOMAIN,
        RECEIPT_VERSION,
        chain_id,
        registry,
        "Receipt",
        RECEIPT_TYPE,
        _message(digest, accepted_at, service),
    )


def signing_hash(chain_id: int, registry: str, digest: str, accepted_at: int, service: str) -> bytes:
    """The EIP-712 hash a receipt signs (anchor.manifest.eip712, the one encoder: its domain separator
    and type hash cached, as a service signs one on every submission; the golden vectors check the
    bytes, and that cast signs the same hash)."""
    from anchor.manifest import eip712

    return eip712.signing_hash(
        RECEIPT_DOMAIN,
        RECEIPT_VERSION,
        chain_id,
        registry,
        "Receipt",
        RECEIPT_TYPE,
        _message(digest, accepted_at, service),
    )


def recover_receipt(receipt: Receipt) -> str:
    """The address the receipt's signature recovers to (checksummed); a malformed or malleable
    signature is `ProofFormatError` naming the service."""
    from anchor.manifest import eip712

    raw = bytes.fromhex(receipt.signature[2:])
    hashed = signing_hash(
        receipt.chain_id, receipt.registry, receipt.manifest_digest, receipt.accepted_at, receipt.service
    )
    try:
        return eip712.recover(hashed, raw[64], raw[:32], raw[32:64])
    except ValueError as exc:
        raise ProofFormatError(f"receipt from {receipt.url}: {exc}", detail=_where(receipt, "signature")) from None


def check_receipt(
    receipt: Receipt, digest: str, published_signer: str | None = None, history: list[dict[str, Any]] | None = None
) -> None:
    """Refuse, naming the service, a receipt for another digest, one whose signature does not recover
    to the signer it names (altered after signing, or forged), or one signed by a key the service does
    not publish (`published_signer`, read from its /v1/service when it answers). A key the service
    retired (`history`: {address, since, until}) stands for the receipts it signed while in use only:
    a receipt it signed dated after its retirement is forged (a leaked old key cannot sign new ones)."""
    if receipt.manifest_digest != digest:
        raise ProofFormatError(
            f"receipt from {receipt.url}: it is for manifest {receipt.manifest_digest}, not {digest}",
            detail=_where(receipt, "manifest_digest"),
        )
    recovered = recover_receipt(receipt)
    if recovered.lower() != receipt.signer.lower():
        raise ProofFormatError(
            f"receipt from {receipt.url}: the signature recovers to {recovered}, not the signer it names"
            f" ({receipt.signer}): altered after signing, or forged",
            detail=_where(receipt, "signature"),
        )
    if published_signer is not None and published_signer.lower() != receipt.signer.lower():
        if _retired_key_in_use(receipt, history or []):
            return
        raise ProofFormatError(
            f"receipt from {receipt.url}: signed by {receipt.signer}, but the service publishes {published_signer}"
            " as its receipt key: forged",
            detail=_where(receipt, "signer"),
        )


def _retired_key_in_use(receipt: Receipt, history: list[dict[str, Any]]) -> bool:
    """Whether the receipt's signer is a key the service published as retired, and the receipt is dated
    within the time that key was its receipt key."""
    for entry in history:
        if not isinstance(entry, dict) or str(entry.get("address", "")).lower() != receipt.signer.lower():
            continue
        since, until = entry.get("since"), entry.get("until")
        if isinstance(since, int) and isinstance(until, int) and since <= receipt.accepted_at < until:
            return True
    return False


def parse_receipt(data: object, url: str) -> Receipt:
    """A receipt as a service sent it, typed (`BadInput` naming the service and the field)."""
    if not isinstance(data, dict):
        raise BadInput(f"{url}: the service sent no receipt", detail={"service": url, "field": "receipt"})
    try:
        return Receipt.model_validate({**data, "url": url})
    except RecordError as exc:
        field = exc.field if exc.loc else "receipt"
        raise BadInput(f"{url}: receipt field '{field}': {exc.msg}", detail={"service": url, "field": field}) from None


def _where(receipt: Receipt, field: str) -> dict[str, Any]:
    return {"service": receipt.url, "field": f"receipts.{field}"}


SERVICE_NAME = re.compile(r"^[\x20-\x7e]{1,200}$")
"""A service name: printable ASCII, so a verdict line can quote it as it was signed."""
