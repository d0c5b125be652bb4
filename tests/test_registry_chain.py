"""The registry on a real anvil: gas targets, off-chain recomputation of every key, typed reverts."""

from __future__ import annotations

import os

import pytest
from eth_abi import encode
from eth_hash.auto import keccak

from anchor.batch.merkle import BatchTree
from anchor.chain.keys import load_signer
from anchor.errors import RegistryRevert
from anchor.session import open_chain, open_registry
from tests.conftest import Chain

LINEAGE_GAS_TARGET = 60_000
ROOT_GAS_TARGET = 48_000


def _registry(chain: Chain):  # type: ignore[no-untyped-def]
    handle = open_chain(chain.settings, start_local=False)
    return handle, open_registry(chain.settings, handle), load_signer(handle.chain_id)


def test_lineage_record_costs_at_most_60k_gas_and_every_field_is_checkable(deployed_chain: Chain) -> None:
    handle, registry, signer = _registry(deployed_chain)
    commit = bytes.fromhex("ab" * 20).ljust(32, b"\0")
    parent = bytes.fromhex("cd" * 20).ljust(32, b"\0")
    diff_hash, metric_hash = os.urandom(32), os.urandom(32)
    sent = registry.anchor_lineage(signer, commit, parent, diff_hash, metric_hash, True)
    assert sent.gas_used <= LINEAGE_GAS_TARGET, sent.gas_used

    record = registry.lineage(commit)
    assert record is not None
    assert (record.parent, record.diff_hash, record.metric_hash, record.kept, record.researcher) == (
        "0x" + parent.hex(), "0x" + diff_hash.hex(), "0x" + metric_hash.hex(), True, signer.address,
    )  # fmt: skip
    # the stored commitment, recomputed off-chain, equals the chain's storage and its pure function
    expected = keccak(
        encode(
            ["bytes32", "bytes32", "bytes32", "bytes32", "bool", "address", "uint64"],
            [commit, parent, diff_hash, metric_hash, True, signer.address, record.timestamp],
        )
    )
    functions = registry.contract.functions
    assert bytes(functions.get(commit).call()) == expected
    args = (commit, parent, diff_hash, metric_hash, True, signer.address, record.timestamp)
    assert bytes(functions.lineageHash(*args).call()) == expected
    assert functions.verifyLineage(*args).call() is True
    assert (
        functions.verifyLineage(commit, parent, diff_hash, metric_hash, False, signer.address, record.timestamp).call()
        is False
    )


def test_batch_root_costs_at_most_48k_gas_and_records_submitter_and_block(deployed_chain: Chain) -> None:
    handle, registry, signer = _registry(deployed_chain)
    root = os.urandom(32)
    sent = registry.anchor_root(signer, root)
    assert sent.gas_used <= ROOT_GAS_TARGET, sent.gas_used
    record = registry.root_record(root)
    assert record is not None
    assert (record.submitter, record.block_number) == (signer.address, sent.block_number)
    assert registry.root_tx(root, sent.block_number) == sent.tx_hash


def test_second_anchor_of_a_commit_raises_typed_revert_carrying_the_commit(deployed_chain: Chain) -> None:
    _, registry, signer = _registry(deployed_chain)
    commit = os.urandom(32)
    registry.anchor_lineage(signer, commit, b"\0" * 32, b"\0" * 32, b"\0" * 32, False)
    with pytest.raises(RegistryRevert) as info:
        registry.anchor_lineage(signer, commit, b"\1" * 32, b"\0" * 32, b"\0" * 32, True)
    assert info.value.detail == {"error": "LineageAlreadyAnchored", "args": ["0x" + commit.hex()]}


def test_second_anchor_of_a_root_raises_typed_revert_carrying_the_root(deployed_chain: Chain) -> None:
    _, registry, signer = _registry(deployed_chain)
    root = os.urandom(32)
    registry.anchor_root(signer, root)
    with pytest.raises(RegistryRevert) as info:
        registry.anchor_root(signer, root)
    assert info.value.detail == {"error": "RootAlreadyAnchored", "args": ["0x" + root.hex()]}


def test_evm_inclusion_check_agrees_with_the_python_tree(deployed_chain: Chain) -> None:
    _, registry, signer = _registry(deployed_chain)
    items = [os.urandom(32) for _ in range(37)]
    tree = BatchTree.build(items)
    registry.anchor_root(signer, tree.root)
    for item in items:
        assert registry.verify_inclusion(tree.root, tree.proof(item), item)
    tampered = bytearray(items[5])
    tampered[0] ^= 1
    assert not registry.verify_inclusion(tree.root, tree.proof(items[5]), bytes(tampered))
