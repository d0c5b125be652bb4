"""The registry's one address on every chain: CREATE2 through the deterministic deployment proxy.

Why: a registry deployed with CREATE lands at an address fixed by its deployer's key and nonce, so every
operator's registry was another address and a colleague had to be told which one to trust, out of band.
Sent through the deterministic deployment proxy (Arachnid's, at 0x4e59b448…956C on anvil, Ethereum,
Base, OP, Arbitrum and their testnets) with a fixed salt, the registry's address is

    keccak256(0xff ‖ proxy ‖ salt ‖ keccak256(init code))[12:]

a function of the committed init code alone (`cast create2 --deployer PROXY --salt SALT --init-code
CODE` computes the same): the same on every chain, whoever deploys it. A verifier that finds code
there whose keccak256 is the committed runtime hash knows it is this registry, with nothing handed over.

On a chain without the proxy, its keyless install transaction is public (signed once with r = s =
0x22…22, so that nobody holds the key of its sender): fund the sender with `PROXY_INSTALL_COST` and
anyone can broadcast it; it is pre-EIP-155, so it installs the proxy at the same address on every chain.
"""

from __future__ import annotations

from functools import cache

from anchor.manifest.keccak import keccak256

PROXY = "0x4e59b44847b379578588920cA78FbF26c0B4956C"
"""The deterministic deployment proxy: calldata = salt (32 bytes) ‖ init code; it CREATE2s the code."""
SALT = bytes(32)
"""The canonical deployment's salt: zero, so `--salt 0x00…00` reproduces the address by hand."""
PROXY_DEPLOYER = "0x3fAB184622Dc19b6109349B94811493BF2a45362"
"""The one-time sender of the proxy's keyless install transaction (recovered from it, tested)."""
PROXY_INSTALL_TX = bytes.fromhex(
    "f8a58085174876e800830186a08080b853604580600e600039806000f350fe7fffffffffffffffffffffffffffffffffffff"
    "ffffffffffffffffffffffffffe03601600081602082378035828234f58015156039578182fd5b8082525050506014600cf3"
    "1ba02222222222222222222222222222222222222222222222222222222222222222a0222222222222222222222222222222"
    "2222222222222222222222222222222222"
)
"""The proxy's published install transaction: nonce 0, gas price 100 gwei, gas 100,000, no chain id."""
PROXY_INSTALL_COST = 100 * 10**9 * 100_000
"""What its sender must hold for the install to be mined: gas price x gas limit (0.01 ETH)."""
PROXY_RUNTIME = bytes.fromhex(
    "7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffe03601600081602082378035828234f580151560"
    "39578182fd5b8082525050506014600cf3"
)
"""The proxy's runtime code (69 bytes): what its install transaction's init code returns (tested)."""


def create2_address(deployer: str, salt: bytes, init_code: bytes) -> str:
    """EIP-1014: keccak256(0xff ‖ deployer ‖ salt ‖ keccak256(init_code))[12:], checksummed."""
    from anchor.chain.abi import checksum_address

    raw = keccak256(b"\xff" + bytes.fromhex(deployer[2:]) + salt + keccak256(init_code))[12:]
    return checksum_address("0x" + raw.hex())


def init_code() -> bytes:
    """The registry's committed creation code (it takes no constructor arguments)."""
    from anchor.chain.artifact import shipped_build

    return bytes.fromhex(shipped_build()["bytecode"])


@cache
def canonical_address() -> str:
    """Where the registry is on every chain that has the proxy."""
    return create2_address(PROXY, SALT, init_code())


def canonical_code_hash() -> str:
    """The runtime code hash a verifier expects at `canonical_address()`."""
    from anchor.chain.artifact import runtime_code_hash

    return runtime_code_hash()


def is_canonical(address: str) -> bool:
    return address.lower() == canonical_address().lower()
