"""EIP-712 typed data, once: the encoding both signed formats use, a service's receipts
(anchor.proof.receipt) and a researcher's lineage records (anchor.chain.signed).

Why one module: the two copies differed in how they got to the same 32 bytes (one through
eth-account's generic encoder, 0.3 ms and a 1.25 s import; one by hand), so a fix to one was not a fix
to the other. Here the standard's definition, for the static types these formats use (address, bool,
uintN, bytes32, string): hashStruct(s) = keccak(typeHash ‖ enc(field)…), each field one 32-byte word
(a string by its keccak), and the signing hash keccak(0x19 0x01 ‖ domainSeparator ‖ hashStruct).
Golden vectors (tests/vectors/receipt.json) and the registry contract itself (on anvil) check it.
"""

from __future__ import annotations

import functools
from typing import Any

from anchor.manifest.keccak import keccak256

DOMAIN_TYPE = [
    {"name": "name", "type": "string"},
    {"name": "version", "type": "string"},
    {"name": "chainId", "type": "uint256"},
    {"name": "verifyingContract", "type": "address"},
]
HALF_ORDER = 0x7FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF5D576E7357A4501DDFE92F46681B20A0
"""secp256k1's n / 2: a signature with a larger s is the malleable twin, refused (as the registry does)."""


def type_string(primary: str, fields: list[dict[str, str]]) -> str:
    return f"{primary}({','.join(f['type'] + ' ' + f['name'] for f in fields)})"


@functools.lru_cache(maxsize=64)
def _hashed(text: str) -> bytes:
    return keccak256(text.encode())


def word(kind: str, value: Any) -> bytes:
    """One field as its 32-byte encoding (the static types the formats here use)."""
    if kind == "string":
        return _hashed(str(value))
    if kind == "bytes32":
        raw = value if isinstance(value, bytes) else bytes.fromhex(str(value).removeprefix("0x"))
        if len(raw) != 32:
            raise ValueError("bytes32: 32 bytes")
        return raw
    if kind == "address":
        return int(str(value), 16).to_bytes(32, "big")
    if kind == "bool":
        return (1 if value else 0).to_bytes(32, "big")
    if kind.startswith("uint"):
        return int(value).to_bytes(32, "big")
    raise ValueError(f"EIP-712 type {kind!r} is not one these formats use")


def struct_hash(primary: str, fields: list[dict[str, str]], message: dict[str, Any]) -> bytes:
    body = b"".join(word(f["type"], message[f["name"]]) for f in fields)
    return keccak256(_hashed(type_string(primary, fields)) + body)


@functools.lru_cache(maxsize=256)
def domain_separator(name: str, version: str, chain_id: int, registry: str) -> bytes:
    domain = {"name": name, "version": version, "chainId": chain_id, "verifyingContract": registry.lower()}
    return struct_hash("EIP712Domain", DOMAIN_TYPE, domain)


def signing_hash(
    name: str,
    version: str,
    chain_id: int,
    registry: str,
    primary: str,
    fields: list[dict[str, str]],
    message: dict[str, Any],
) -> bytes:
    """The 32 bytes a signer signs: keccak(0x19 0x01 ‖ domainSeparator ‖ hashStruct(message))."""
    return keccak256(
        b"\x19\x01" + domain_separator(name, version, chain_id, registry) + struct_hash(primary, fields, message)
    )


def typed_data(
    name: str,
    version: str,
    chain_id: int,
    registry: str,
    primary: str,
    fields: list[dict[str, str]],
    message: dict[str, Any],
) -> dict[str, Any]:
    """The full message, as wallets and `cast wallet sign --data` take it."""
    return {
        "types": {"EIP712Domain": DOMAIN_TYPE, primary: fields},
        "primaryType": primary,
        "domain": {"name": name, "version": version, "chainId": chain_id, "verifyingContract": registry},
        "message": message,
    }


def recover(hashed: bytes, v: int, r: bytes, s: bytes) -> str:
    """The checksummed address that signed `hashed`; `ValueError` for a malleable (high-s), malformed
    or unrecoverable signature."""
    from coincurve import PublicKey

    from anchor.manifest.keccak import checksum_address

    if int.from_bytes(s, "big") > HALF_ORDER or v not in (27, 28) or len(r) != 32 or len(s) != 32:
        raise ValueError("malformed signature (high s or bad v)")
    try:
        public = PublicKey.from_signature_and_message(r + s + bytes([v - 27]), hashed, hasher=None)
    except Exception as exc:  # noqa: BLE001 - whatever libsecp256k1 says, the signature does not recover
        raise ValueError("the signature does not recover") from exc
    return checksum_address(keccak256(public.format(compressed=False)[1:])[-20:].hex())
