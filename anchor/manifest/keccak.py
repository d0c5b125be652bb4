"""keccak256, the EVM's hash, from pycryptodome directly.

Why not `eth_hash.auto`: it picks a backend at import and costs ~60 ms of start-up, and the read path
(`anchor verify`, `lookup`, the API's GET routes) must start fast. pycryptodome is the backend eth_hash
would pick here anyway, so the bytes are the same; tests/test_vectors.py pins them."""

from __future__ import annotations

from Crypto.Hash import keccak as _keccak


def keccak256(data: bytes) -> bytes:
    return _keccak.new(digest_bits=256, data=data).digest()
