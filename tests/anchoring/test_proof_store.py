"""The proof store: a batch kept once, each item's proof derived on demand, byte for byte the
file a data dir used to keep per item; an edited store never changes a proof it gives."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from anchor.anchoring.proofs import _path_in_tree, proof_from_journal, store_finder, tree_bytes
from anchor.anchoring.service import AnchorService
from anchor.batch.merkle import BatchTree
from anchor.journal.submit import Submission
from anchor.proof.file import ChainAnchor
from tests.conftest import Chain
from tests.journal_helpers import unique_submissions

ANCHOR = ChainAnchor(
    chain_id=31337, registry="0x" + "ab" * 20, code_hash="0x" + "cd" * 32, tx_hash="0x" + "ef" * 32, block_number=7
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=32, max_size=32), min_size=1, max_size=40, unique=True), st.data())
def test_the_path_read_from_a_tree_file_is_the_trees_own(items: list[bytes], data: st.DataObject) -> None:
    tree = BatchTree.build(items)
    stored = tree_bytes(tree, ANCHOR)
    for item in items:
        found = _path_in_tree(stored, item)
        assert found is not None and found[1] == tree.proof(item) and found[2] == tree.root
    stranger = data.draw(st.binary(min_size=32, max_size=32).filter(lambda b: b not in items))
    assert _path_in_tree(stored, stranger) is None
    assert _path_in_tree(stored[:-1], items[0]) is None  # a truncated file holds nothing


def _anchored(chain: Chain, tmp_path: Path, n: int) -> tuple[list[bytes], Path, dict[bytes, bytes]]:
    """n items anchored in one batch, each with a copy of its proof asked for: the bytes the flush wrote
    there, per item, as every proof file used to be written (the store must give the same bytes)."""
    subs = [
        Submission(s.identity, s.payload, None, tmp_path / f"asked-{i}.anchor.json")
        for i, s in enumerate(unique_submissions(n, tag="store"))
    ]
    service = AnchorService.open(chain.settings)
    try:
        done = service.submit(subs)
        service.flush()
    finally:
        service.close()
    before = {d.digest: (tmp_path / f"asked-{i}.anchor.json").read_bytes() for i, d in enumerate(done)}
    return [d.digest for d in done], tmp_path / "asked-0.anchor.json", before


def test_a_batch_is_kept_once_and_each_proof_is_the_file_it_used_to_be(fresh_chain: Chain, tmp_path: Path) -> None:
    digests, copy, before = _anchored(fresh_chain, tmp_path, 5)
    data = fresh_chain.data_dir
    [tree] = (data / "batches").rglob("*.tree")
    head, _, nodes = tree.read_bytes().partition(b"\n")
    assert json.loads(head)["nodes"] == 9 and len(nodes) == 9 * 32  # 2n-1 nodes, nothing per item
    assert not (data / "proofs").exists()
    assert copy.is_file()  # the copy the user asked for is still written
    service = AnchorService.open(fresh_chain.settings)
    try:
        for digest in digests:
            derived = service.proof(digest)
            assert derived is not None and derived.dumps().encode() == before[digest]
            rebuilt = proof_from_journal(service.journal, service.chain_id, digest, service.registry.code_hash)
            assert rebuilt is not None and rebuilt.dumps().encode() == before[digest]
        assert service.proof(os.urandom(32)) is None
    finally:
        service.close()
    found = store_finder(fresh_chain.settings)(digests[3])  # the CLI's reader: the same bytes
    assert found is not None and found.dumps().encode() == before[digests[3]]


def test_an_edited_tree_file_never_changes_a_proof_it_gives(fresh_chain: Chain, tmp_path: Path) -> None:
    """Whoever writes the data dir edits the store: a node flipped, the file cut short, the header's code
    hash replaced. The proof given is still the journal's (a path that does not lead to the journal's
    root is not used; a code hash that is not the registry's is not either)."""
    digests, _, before = _anchored(fresh_chain, tmp_path, 6)
    [tree] = (fresh_chain.data_dir / "batches").rglob("*.tree")
    original = tree.read_bytes()
    head, _, nodes = original.partition(b"\n")
    edited_head = json.loads(head) | {"code_hash": "0x" + "00" * 32}
    edits = {
        "a flipped node": head + b"\n" + nodes[:40] + bytes([nodes[40] ^ 1]) + nodes[41:],
        "a cut": original[:-32],
        "another code hash": json.dumps(edited_head).encode() + b"\n" + nodes,
        "not a tree": b"{}",
    }
    for what, edited in edits.items():
        tree.write_bytes(edited)
        service = AnchorService.open(fresh_chain.settings)
        try:
            for digest in digests:
                given_back = service.proof(digest)
                assert given_back is not None and given_back.dumps().encode() == before[digest], what
        finally:
            service.close()


def test_a_data_dir_from_before_the_batch_store_is_still_read(fresh_chain: Chain, tmp_path: Path) -> None:
    digests, _, before = _anchored(fresh_chain, tmp_path, 2)
    for tree in (fresh_chain.data_dir / "batches").rglob("*.tree"):
        tree.unlink()
    old = fresh_chain.settings.layout.proof(digests[1])
    old.parent.mkdir(parents=True)
    old.write_bytes(before[digests[1]])
    (fresh_chain.data_dir / "journal.sqlite").rename(tmp_path / "journal-elsewhere.sqlite")
    found = store_finder(fresh_chain.settings)(digests[1])
    assert found is not None and found.dumps().encode() == before[digests[1]]
    assert store_finder(fresh_chain.settings)(digests[0]) is None  # no file, no journal: not anchored here


def test_a_service_gives_back_the_proofs_of_its_last_flush_as_built_and_holds_no_older_ones(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """What a flush built is given again without reading the store (a stamp of 100,000 files decoded 15 MB
    for it), and only the last flush's: a flusher that runs for days must not hold every proof it wrote."""
    first, second = unique_submissions(2, tag="built")
    service = AnchorService.open(fresh_chain.settings)
    try:
        [one] = service.submit([first])
        service.flush()
        built = service.proof_bytes(one.digest)
        stored = store_finder(fresh_chain.settings)(one.digest)
        assert built is not None and stored is not None and built == stored.dumps().encode()
        [two] = service.submit([second])
        service.flush()
        assert service.proof_bytes(one.digest) is None and service.proof_bytes(two.digest) is not None
        again = service.proof(one.digest)  # from the store now, the same proof
        assert again is not None and again.dumps().encode() == built
    finally:
        service.close()
