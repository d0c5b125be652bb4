"""Write tests/vectors/receipt.json from public tools only: the EIP-712 hash computed here by hand from
the standard (keccak and ABI words, no Anchor code, no eth_account), the signature made by Foundry's
`cast wallet sign --no-hash`. Run once when the receipt format changes: `python -m tests.vectors.generate_receipts`.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from eth_hash.auto import keccak

from tests.conftest import ROOT

HERE = Path(__file__).parent
DOMAIN_TYPE = "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)"
RECEIPT_TYPE = "Receipt(bytes32 manifestDigest,uint64 acceptedAt,string service)"
KEY = "0x" + keccak(b"anchor receipt golden vector key").hex()  # a test key of our own, published here

CASES = [
    ("local chain", 31337, "0x5FbDB2315678afecb367f032d93F642f64180aa3", "11" * 32, 1796000000, "service A"),
    (
        "base sepolia",
        84532,
        "0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0",
        "ab" * 32,
        1800000000,
        "https://anchor.example.org",
    ),
    ("epoch zero, empty-ish name", 1, "0x0000000000000000000000000000000000000001", "00" * 32, 0, " "),
]


def word(value: int) -> bytes:
    return value.to_bytes(32, "big")


def signing_hash(
    chain_id: int, registry: str, digest: str, accepted_at: int, service: str
) -> tuple[bytes, bytes, bytes]:
    domain = keccak(
        keccak(DOMAIN_TYPE.encode())
        + keccak(b"Anchor receipt")
        + keccak(b"1")
        + word(chain_id)
        + word(int(registry, 16))
    )
    struct = keccak(
        keccak(RECEIPT_TYPE.encode()) + bytes.fromhex(digest) + word(accepted_at) + keccak(service.encode())
    )
    return domain, struct, keccak(b"\x19\x01" + domain + struct)


def cast(*args: str) -> str:
    out = subprocess.run(
        [str(ROOT / "node_modules" / ".bin" / "cast"), *args], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def main() -> None:
    signer = cast("wallet", "address", "--private-key", KEY)
    cases: list[dict[str, Any]] = []
    for name, chain_id, registry, digest, accepted_at, service in CASES:
        domain, struct, final = signing_hash(chain_id, registry, digest, accepted_at, service)
        signature = cast("wallet", "sign", "--no-hash", "--private-key", KEY, "0x" + final.hex())
        cases.append(
            {
                "name": name,
                "input": {
                    "chain_id": chain_id,
                    "registry": registry,
                    "manifest_digest": "0x" + digest,
                    "accepted_at": accepted_at,
                    "service": service,
                },
                "domain_separator": "0x" + domain.hex(),
                "struct_hash": "0x" + struct.hex(),
                "signing_hash": "0x" + final.hex(),
                "signer": signer,
                "signature": signature,
            }
        )
    document = {"kind": "receipt", "receipt_version": 1, "key": KEY, "cases": cases}
    (HERE / "receipt.json").write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
