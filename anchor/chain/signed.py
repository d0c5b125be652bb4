"""Lineage records and their retractions, signed by the researcher (EIP-712), which anyone may carry to
the registry.

Why: had the researcher been whoever paid the gas, a service relaying writes for many researchers would
erase who they were. A signed record names its researcher by signature: the relayer (the REST API,
`anchor journal flush`) pays and never holds the researcher's key. The domain binds chain id and registry
address and the message a deadline, so a signature cannot be replayed on another chain, another
registry or after its deadline; write-once storage makes a replay on the same registry a no-op. A
retraction is another primary type (`LineageRetraction`), so no lineage signature can be replayed as one.

The typed data is exactly `AnchorRegistry.lineageDigest` and `retractionDigest` (tests compare them on anvil).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from anchor.errors import BadInput
from anchor.manifest import eip712
from anchor.record import Value

DOMAIN_NAME = "AnchorRegistry"
DOMAIN_VERSION = "4"
LINEAGE_TYPE = [
    {"name": "researcher", "type": "address"},
    {"name": "commit", "type": "bytes32"},
    {"name": "parent", "type": "bytes32"},
    {"name": "diffHash", "type": "bytes32"},
    {"name": "metricHash", "type": "bytes32"},
    {"name": "kept", "type": "bool"},
    {"name": "deadline", "type": "uint256"},
]
RETRACTION_TYPE = [
    {"name": "researcher", "type": "address"},
    {"name": "commit", "type": "bytes32"},
    {"name": "reason", "type": "bytes32"},
    {"name": "deadline", "type": "uint256"},
]


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class LineageFields(Value):
    researcher: str
    commit: bytes
    parent: bytes
    diff_hash: bytes
    metric_hash: bytes
    kept: bool
    deadline: int


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class SignedLineage(Value):
    fields: LineageFields
    v: int
    r: bytes
    s: bytes

    def to_json(self) -> dict[str, Any]:
        f = self.fields
        return {
            "researcher": f.researcher,
            "commit": f.commit.hex(),
            "parent": f.parent.hex(),
            "diff_hash": f.diff_hash.hex(),
            "metric_hash": f.metric_hash.hex(),
            "kept": f.kept,
            "deadline": f.deadline,
            "v": self.v,
            "r": self.r.hex(),
            "s": self.s.hex(),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SignedLineage:
        """Decode (from the journal or a client); raises `BadInput` naming the field. Every field is
        checked for its EIP-712 type before anything signs, recovers or encodes it: a deadline of -1,
        2**256 or 1e300, a researcher that is no address, or "kept": "false" (which `bool()` reads as
        true) used to reach the encoder and answer 500."""
        try:
            fields = LineageFields(
                _address(data["researcher"], "researcher"),
                _b32(data["commit"], "commit"),
                _b32(data["parent"], "parent"),
                _b32(data["diff_hash"], "diff_hash"),
                _b32(data["metric_hash"], "metric_hash"),
                _strict_bool(data["kept"], "kept"),
                _uint(data["deadline"], "deadline", 256),
            )
            return cls(fields, _uint(data["v"], "v", 8), _b32(data["r"], "r"), _b32(data["s"], "s"))
        except KeyError as exc:
            raise BadInput(f"signed lineage: missing field {exc.args[0]}", detail={"field": exc.args[0]}) from None


def _address(value: object, field: str) -> str:
    if not (isinstance(value, str) and re.fullmatch(r"0x[0-9a-fA-F]{40}", value)):
        raise BadInput(f"signed lineage: {field} must be a 0x-prefixed 20-byte address", detail={"field": field})
    return value


def _strict_bool(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise BadInput(f"signed lineage: {field} must be true or false", detail={"field": field})
    return value


def _uint(value: object, field: str, bits: int) -> int:
    """A JSON integer that fits uint<bits> (never a bool, a float or a string of digits)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << bits:
        raise BadInput(f"signed lineage: {field} must be an integer from 0 to 2**{bits} - 1", detail={"field": field})
    return value


def _b32(value: object, field: str) -> bytes:
    if not (isinstance(value, str) and re.fullmatch(r"(0[xX])?[0-9a-fA-F]{64}", value)):
        raise BadInput(f"signed lineage: {field} must be 32 bytes of hex", detail={"field": field})
    return bytes.fromhex(value[-64:])


def _message(fields: LineageFields) -> dict[str, Any]:
    return {
        "researcher": fields.researcher,
        "commit": fields.commit,
        "parent": fields.parent,
        "diffHash": fields.diff_hash,
        "metricHash": fields.metric_hash,
        "kept": fields.kept,
        "deadline": fields.deadline,
    }


def typed_data(chain_id: int, registry: str, fields: LineageFields) -> dict[str, Any]:
    """The full EIP-712 message (what wallets and `cast wallet sign --data` take)."""
    return eip712.typed_data(DOMAIN_NAME, DOMAIN_VERSION, chain_id, registry, "Lineage", LINEAGE_TYPE, _message(fields))


def digest(chain_id: int, registry: str, fields: LineageFields) -> bytes:
    """`AnchorRegistry.lineageDigest`: the EIP-712 hash a researcher signs (anchor.manifest.eip712)."""
    return eip712.signing_hash(
        DOMAIN_NAME, DOMAIN_VERSION, chain_id, registry, "Lineage", LINEAGE_TYPE, _message(fields)
    )


def sign_lineage(account: Any, chain_id: int, registry: str, fields: LineageFields) -> SignedLineage:
    """Sign with an eth-account `LocalAccount` (RFC 6979, low s, v in {27, 28}, as the registry requires)."""
    signed = account.unsafe_sign_hash(digest(chain_id, registry, fields))
    return SignedLineage(fields, int(signed.v), int(signed.r).to_bytes(32, "big"), int(signed.s).to_bytes(32, "big"))


def recover(chain_id: int, registry: str, signed: SignedLineage) -> str:
    """The address the signature recovers to; refuses malleable (high-s) or malformed signatures, as
    the registry does, so a relayer never journals a record the registry would refuse."""
    try:
        return eip712.recover(digest(chain_id, registry, signed.fields), signed.v, signed.r, signed.s)
    except ValueError as exc:
        raise BadInput(f"signed lineage: {exc}", detail={"field": "signature"}) from None


def signed_lineage(
    researcher: Any, chain_id: int, registry: str, fields: tuple[bytes, bytes, bytes, bytes, bool]
) -> Any:
    """The researcher's EIP-712 signature over one lineage record, valid for the signer's `ttl_s`
    (ANCHOR_SIGNATURE_TTL_S, default 7 days: a record journaled now is still accepted by a flush next week)."""
    import time

    commit, parent, diff_hash, metric_hash, kept = fields
    deadline = int(time.time()) + researcher.ttl_s
    record = LineageFields(researcher.address, commit, parent, diff_hash, metric_hash, kept, deadline)
    return researcher.sign_lineage(chain_id, registry, record)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class SignedRetraction(Value):
    """A researcher's signed retraction of their lineage record of `commit`, for anyone to relay."""

    researcher: str
    commit: bytes
    reason: bytes
    deadline: int
    v: int
    r: bytes
    s: bytes


def retraction_digest(
    chain_id: int, registry: str, researcher: str, commit: bytes, reason: bytes, deadline: int
) -> bytes:
    """`AnchorRegistry.retractionDigest`: the EIP-712 hash a researcher signs to retract a record."""
    message = {"researcher": researcher, "commit": commit, "reason": reason, "deadline": deadline}
    return eip712.signing_hash(
        DOMAIN_NAME, DOMAIN_VERSION, chain_id, registry, "LineageRetraction", RETRACTION_TYPE, message
    )


def sign_retraction(
    account: Any, chain_id: int, registry: str, commit: bytes, reason: bytes, ttl_s: int
) -> SignedRetraction:
    """Sign a retraction with an eth-account `LocalAccount`, valid for `ttl_s` (ANCHOR_SIGNATURE_TTL_S)."""
    import time

    deadline = int(time.time()) + ttl_s
    signed = account.unsafe_sign_hash(retraction_digest(chain_id, registry, account.address, commit, reason, deadline))
    return SignedRetraction(
        account.address,
        commit,
        reason,
        deadline,
        int(signed.v),
        int(signed.r).to_bytes(32, "big"),
        int(signed.s).to_bytes(32, "big"),
    )
