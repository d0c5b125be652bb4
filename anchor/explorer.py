"""Block-explorer links per chain id, so anyone can check a record without our tools. On the local
chain the built-in pages of `anchor serve` play the explorer (ANCHOR_EXPLORER_URL, default
http://127.0.0.1:8000)."""

from __future__ import annotations

import os

LOCAL_CHAIN_ID = 31337

EXPLORERS: dict[int, str] = {
    1: "https://etherscan.io",
    11155111: "https://sepolia.etherscan.io",
    8453: "https://basescan.org",
    84532: "https://sepolia.basescan.org",
}


def links(
    chain_id: int,
    *,
    tx_hash: str | None = None,
    block: int | None = None,
    address: str | None = None,
    page: str | None = None,
) -> dict[str, str]:
    """Explorer URLs for the given tx, block and address; on the local chain, the built-in `page`."""
    if chain_id == LOCAL_CHAIN_ID:
        local = os.environ.get("ANCHOR_EXPLORER_URL", "http://127.0.0.1:8000").rstrip("/")
        return {"page": f"{local}{page}"} if page else {}
    base = EXPLORERS.get(chain_id)
    if base is None:
        return {}
    out = {}
    if tx_hash:
        out["tx"] = f"{base}/tx/{tx_hash}"
    if block is not None:
        out["block"] = f"{base}/block/{block}"
    if address:
        out["address"] = f"{base}/address/{address}"
    return out
