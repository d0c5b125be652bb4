"""Block-explorer links per chain id, so anyone can check a record without our tools."""

from __future__ import annotations

EXPLORERS: dict[int, str] = {
    1: "https://etherscan.io",
    11155111: "https://sepolia.etherscan.io",
    8453: "https://basescan.org",
    84532: "https://sepolia.basescan.org",
}


def links(
    chain_id: int, *, tx_hash: str | None = None, block: int | None = None, address: str | None = None
) -> dict[str, str]:
    """Explorer URLs for the given tx, block and address; empty for a chain without a known explorer."""
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
