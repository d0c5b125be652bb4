"""Block-explorer links: the four built-in public chains, and the built-in pages on the local chain."""

from __future__ import annotations

from pathlib import Path

import pytest

from anchor.chain.explorer import links
from anchor.settings.model import Environment

TX = "0x" + "ab" * 32
ADDRESS = "0x5FbDB2315678afecb367f032d93F642f64180aa3"


@pytest.mark.parametrize(
    ("chain_id", "base"),
    [
        (1, "https://etherscan.io"),
        (11155111, "https://sepolia.etherscan.io"),
        (8453, "https://basescan.org"),
        (84532, "https://sepolia.basescan.org"),
    ],
)
def test_public_chains_link_tx_block_and_registry(chain_id: int, base: str) -> None:
    assert links(chain_id, tx_hash=TX, block=7, address=ADDRESS) == {
        "tx": f"{base}/tx/{TX}",
        "block": f"{base}/block/7",
        "address": f"{base}/address/{ADDRESS}",
    }


def test_the_local_chain_links_to_the_built_in_pages() -> None:
    explorer_url = Environment({"ANCHOR_EXPLORER_URL": "http://127.0.0.1:9000/"}).explorer_url
    assert links(31337, tx_hash=TX, page="/explorer/batch/0x01", explorer_url=explorer_url) == {
        "page": "http://127.0.0.1:9000/explorer/batch/0x01"
    }
    assert links(31337, tx_hash=TX) == {}
    assert links(999, tx_hash=TX) == {}  # an unknown chain: no guess


def test_local_links_follow_the_url_anchor_serve_recorded(tmp_path: Path) -> None:
    assert links(31337, page="/explorer/batch/0x01", data_dir=tmp_path) == {
        "page": "http://127.0.0.1:8000/explorer/batch/0x01"
    }
    (tmp_path / "service.json").write_text('{"public_url": "https://anchor.example.org/"}')
    assert links(31337, page="/explorer/batch/0x01", data_dir=tmp_path) == {
        "page": "https://anchor.example.org/explorer/batch/0x01"
    }
    given = Environment({"ANCHOR_EXPLORER_URL": "http://127.0.0.1:9000"}).explorer_url  # the variable still wins
    assert links(31337, page="/x", data_dir=tmp_path, explorer_url=given) == {"page": "http://127.0.0.1:9000/x"}
