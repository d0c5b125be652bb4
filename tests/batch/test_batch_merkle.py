"""The batch tree is OpenZeppelin's StandardMerkleTree, checked against OpenZeppelin's own JS tool."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from anchor.batch.merkle import BatchTree, process_proof
from anchor.errors import BadInput

ROOT = Path(__file__).resolve().parents[2]


def _items(n: int, salt: int = 0) -> list[bytes]:
    import blake3

    return [blake3.blake3(f"{salt}:{i}".encode()).digest() for i in range(n)]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 33, 100])
def test_root_and_every_proof_match_openzeppelin_js_tool(n: int) -> None:
    items = _items(n)
    out = subprocess.run(
        ["node", str(ROOT / "tests" / "js" / "oz_tree.mjs"), json.dumps(["0x" + i.hex() for i in items])],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    reference = json.loads(out.stdout)
    tree = BatchTree.build(items)
    assert "0x" + tree.root.hex() == reference["root"]
    for item in items:
        assert ["0x" + p.hex() for p in tree.proof(item)] == reference["proofs"]["0x" + item.hex()]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=32, max_size=32), min_size=1, max_size=64, unique=True), st.data())
def test_every_proof_verifies_and_fails_for_any_other_item(items: list[bytes], data: st.DataObject) -> None:
    tree = BatchTree.build(items)
    for item in items:
        assert process_proof(item, tree.proof(item)) == tree.root
    outsider = data.draw(st.binary(min_size=32, max_size=32).filter(lambda b: b not in items))
    assert process_proof(outsider, tree.proof(items[0])) != tree.root


def test_batch_refuses_duplicates_empty_and_wrong_sizes() -> None:
    with pytest.raises(BadInput, match="twice"):
        BatchTree.build([b"\x01" * 32, b"\x01" * 32])
    with pytest.raises(BadInput, match="at least one"):
        BatchTree.build([])
    with pytest.raises(BadInput, match="32 bytes"):
        BatchTree.build([b"\x01" * 31])
