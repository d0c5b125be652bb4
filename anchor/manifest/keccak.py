"""keccak256, the EVM's hash, from safe-pysha3's C extension directly.

Why not `eth_hash.auto`: it picks a backend at import and costs ~60 ms of start-up, and the read path
(`anchor verify`, `lookup`, the API's GET routes) must start fast. Why not pycryptodome (eth_hash's
backend here): its ctypes wrapper costs 10.5 us a call against 1.8 us, and a service hashes five
times per anchored item (Merkle leaves and nodes) and twice per receipt. The bytes are the same;
tests/manifest/test_vectors.py pins them, and tests/registry/test_abi.py compares with eth_hash.

Why `_pysha3` and not its wrapper `sha3`: the wrapper only re-exports the extension's functions after
importing hashlib to add SHA-3 names to it, and hashlib's OpenSSL binding cost 3.8 ms of every verify's
start; nothing on the read path uses hashlib."""

from __future__ import annotations

from _pysha3 import keccak_256


def keccak256(data: bytes) -> bytes:
    return bytes(keccak_256(data).digest())


def checksum_address(address: str) -> str:
    """EIP-55 mixed-case form of a 20-byte hex address (what web3 returns and users paste)."""
    body = address.lower().removeprefix("0x")
    if len(body) != 40 or any(c not in "0123456789abcdef" for c in body):
        raise ValueError(f"not a 20-byte address: {address!r}")
    digest = keccak256(body.encode()).hex()
    return "0x" + "".join(c.upper() if int(h, 16) >= 8 else c for c, h in zip(body, digest[:40], strict=True))
