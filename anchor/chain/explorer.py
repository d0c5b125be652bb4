"""Block-explorer links per chain id, so anyone can check a record without our tools. On the local
chain the built-in pages of `anchor serve` play the explorer, at the service's public URL: the one
`anchor serve` recorded in the data directory (service.json), else ANCHOR_EXPLORER_URL, else
http://127.0.0.1:8000."""

from __future__ import annotations

import json
from pathlib import Path

from anchor.chain.presets import PRESETS
from anchor.layout import DataDir

LOCAL_CHAIN_ID = 31337

EXPLORERS: dict[int, str] = {chain_id: p.explorer for chain_id, p in PRESETS.items() if p.explorer is not None}


DEFAULT_SERVICE_URL = "http://127.0.0.1:8000"


def service_record(data_dir: Path) -> Path:
    return DataDir(data_dir).service_record


def local_explorer(data_dir: Path | None = None, explorer_url: str | None = None) -> str:
    """Where the built-in explorer pages are served for this data directory: `explorer_url`
    (ANCHOR_EXPLORER_URL) when given, else the public URL `anchor serve` recorded, else the default."""
    if explorer_url:
        return explorer_url
    if data_dir is not None:
        try:
            return str(json.loads(service_record(data_dir).read_text())["public_url"]).rstrip("/")
        except (OSError, ValueError, KeyError, TypeError):
            pass
    return DEFAULT_SERVICE_URL


def links(
    chain_id: int,
    *,
    tx_hash: str | None = None,
    block: int | None = None,
    address: str | None = None,
    page: str | None = None,
    data_dir: Path | None = None,
    explorer_url: str | None = None,
) -> dict[str, str]:
    """Explorer URLs for the given tx, block and address; on the local chain, the built-in `page`
    (served at `explorer_url`, ANCHOR_EXPLORER_URL, or where `anchor serve` recorded)."""
    if chain_id == LOCAL_CHAIN_ID:
        return {"page": f"{local_explorer(data_dir, explorer_url)}{page}"} if page else {}
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
