"""keccak256, the EVM's hash, from pycryptodome directly.

Why not `eth_hash.auto`: it picks a backend at import and costs ~60 ms of start-up, and the read path
(`anchor verify`, `lookup`, the API's GET routes) must start fast. pycryptodome is the backend eth_hash
would pick here anyway, so the bytes are the same; tests/test_vectors.py pins them."""

from __future__ import annotations

from Crypto.Hash import keccak as _keccak


def keccak256(data: bytes) -> bytes:
    return _keccak.new(digest_bits=256, data=data).digest()


def checksum_address(address: str) -> str:
    """EIP-55 mixed-case form of a 20-byte hex address (what web3 returns and users paste)."""
    body = address.lower().removeprefix("0x")
    if len(body) != 40 or any(c not in "0123456789abcdef" for c in body):
        raise ValueError(f"not a 20-byte address: {address!r}")
    digest = keccak256(body.encode()).hex()
    return "0x" + "".join(c.upper() if int(h, 16) >= 8 else c for c, h in zip(body, digest[:40], strict=True))
