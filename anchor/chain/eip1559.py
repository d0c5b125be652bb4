"""A type-2 (EIP-1559) transaction, encoded and signed with libsecp256k1 (coincurve) and keccak alone.

Why not eth_account here: importing it costs about a second (eth_keyfile pulls in py_ecc, which builds
BLS pairing tables at import), and every `anchor journal flush`, `stamp` or service flush paid it to sign
one transaction. A type-2 transaction is nine fields in RLP; the signature is libsecp256k1's
recoverable ECDSA over keccak256(0x02 || rlp(fields)), which is deterministic (RFC 6979) and low-s, as
EIP-2 requires. `rlp` (the package) is not used because its import pulls in eth_utils (a quarter of a
second); the encoder below covers byte strings and lists of them, the only shapes a transaction has.

tests/chain/test_eip1559.py holds the bytes to eth_account's: the same raw transaction, byte for byte, for
generated fields, and Ethereum's `rlp` decoding it back."""

from __future__ import annotations

from anchor.manifest.keccak import keccak256

__all__ = ["signed_type2"]


def _rlp(item: bytes | list[bytes | list[bytes]]) -> bytes:
    """Ethereum's RLP for a byte string or a (nested) list of them (the Yellow Paper, appendix B)."""
    if isinstance(item, bytes):
        if len(item) == 1 and item[0] < 0x80:
            return item
        return _length(len(item), 0x80) + item
    body = b"".join(_rlp(x) for x in item)  # type: ignore[arg-type]
    return _length(len(body), 0xC0) + body


def _length(size: int, offset: int) -> bytes:
    if size < 56:
        return bytes([offset + size])
    raw = size.to_bytes((size.bit_length() + 7) // 8, "big")
    return bytes([offset + 55 + len(raw)]) + raw


def _int(value: int) -> bytes:
    """A scalar as RLP wants it: big-endian, no leading zero bytes, 0 as the empty string."""
    if value < 0:
        raise ValueError("a transaction field cannot be negative")
    return value.to_bytes((value.bit_length() + 7) // 8, "big")


def signed_type2(
    secret: bytes,
    *,
    chain_id: int,
    nonce: int,
    priority_fee: int,
    max_fee: int,
    gas: int,
    to: str,
    data: bytes,
    value: int = 0,
) -> tuple[bytes, bytes]:
    """(tx hash, raw signed transaction) of an EIP-1559 transaction with an empty access list."""
    from coincurve import PrivateKey

    address = bytes.fromhex(to.lower().removeprefix("0x"))
    if len(address) != 20:
        raise ValueError("a transaction's `to` is a 20-byte address")
    fields: list[bytes | list[bytes]] = [
        _int(chain_id),
        _int(nonce),
        _int(priority_fee),
        _int(max_fee),
        _int(gas),
        address,
        _int(value),
        data,
        [],
    ]
    signature = PrivateKey(secret).sign_recoverable(keccak256(b"\x02" + _rlp(fields)), hasher=None)
    r, s, parity = signature[:32], signature[32:64], signature[64]
    raw = b"\x02" + _rlp([*fields, _int(parity), _int(int.from_bytes(r, "big")), _int(int.from_bytes(s, "big"))])
    return keccak256(raw), raw
