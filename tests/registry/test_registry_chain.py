"""The registry on a real anvil: gas targets, off-chain recomputation of every key, typed reverts."""

from __future__ import annotations

import dataclasses
import os

import pytest
from eth_abi import encode
from eth_hash.auto import keccak

from anchor.batch.merkle import BatchTree
from anchor.chain.keys import load_signer
from anchor.chain.open import open_chain, open_registry
from anchor.errors import RegistryRevert
from tests.conftest import Chain

LINEAGE_GAS_TARGET = 50_000  # registry v2 (receipt gasUsed, anvil cancun, optimizer 200)
SIGNED_GAS_TARGET = 58_000
ROOT_GAS_TARGET = 46_500  # registry v3: roots keyed by (submitter, root)
RESEARCHER_KEY = "0x" + "5e" * 32  # a researcher of this test only: it never pays for anything


def _registry(chain: Chain):  # type: ignore[no-untyped-def]
    handle = open_chain(chain.settings, start_local=False)
    return handle, open_registry(chain.settings, handle), load_signer(handle.chain_id)


def _commitment(researcher: str, commit: bytes, parent: bytes, diff: bytes, metric: bytes, kept: bool, t: int) -> bytes:
    """v2's stored commitment, recomputed off chain: keccak over every field, researcher first."""
    types = ["address", "bytes32", "bytes32", "bytes32", "bytes32", "bool", "uint64"]
    return keccak(encode(types, [researcher, commit, parent, diff, metric, kept, t]))


def test_lineage_record_costs_at_most_50k_gas_and_every_field_is_checkable(deployed_chain: Chain) -> None:
    handle, registry, signer = _registry(deployed_chain)
    assert registry.version == "4.0.0"
    commit = bytes.fromhex("ab" * 20).ljust(32, b"\0")
    parent = bytes.fromhex("cd" * 20).ljust(32, b"\0")
    diff_hash, metric_hash = os.urandom(32), os.urandom(32)
    sent = registry.anchor_lineage(signer, commit, parent, diff_hash, metric_hash, True)
    assert sent.gas_used <= LINEAGE_GAS_TARGET, sent.gas_used

    record = registry.lineage(commit, signer.address)
    assert record is not None
    assert (record.parent, record.diff_hash, record.metric_hash, record.kept, record.researcher) == (
        "0x" + parent.hex(),
        "0x" + diff_hash.hex(),
        "0x" + metric_hash.hex(),
        True,
        signer.address,
    )
    # the slot holds the commitment's high 160 bits and, beside it, the block the record was written in
    # (and the block of its retraction: none yet)
    expected = _commitment(signer.address, commit, parent, diff_hash, metric_hash, True, record.timestamp)
    functions = registry.contract.functions
    stored, block, retracted = functions.lineageRecord(signer.address, commit).call()
    assert (bytes(stored), block, retracted) == (expected[:20], sent.block_number, 0)
    args = (signer.address, commit, parent, diff_hash, metric_hash, True, record.timestamp)
    assert bytes(functions.lineageHash(*args).call()) == expected
    assert functions.verifyLineage(*args).call() is True
    assert functions.verifyLineage(*args[:5], False, record.timestamp).call() is False


def test_a_signed_record_is_relayed_under_its_signer_for_at_most_58k_gas(deployed_chain: Chain) -> None:
    """The researcher signs (EIP-712, computed here by eth-account), the relayer pays: the record is the
    researcher's, and our typed-data digest is the contract's own `lineageDigest`."""
    import time

    from eth_account import Account

    from anchor.chain.keys import Signer
    from anchor.chain.signed import LineageFields, digest, recover

    handle, registry, relayer = _registry(deployed_chain)
    researcher = Signer(Account.from_key(RESEARCHER_KEY), "test")
    commit, parent = os.urandom(32), os.urandom(32)
    fields = LineageFields(
        researcher.address, commit, parent, os.urandom(32), os.urandom(32), True, int(time.time()) + 3600
    )
    on_chain = registry.contract.functions.lineageDigest(
        researcher.address, commit, parent, fields.diff_hash, fields.metric_hash, True, fields.deadline
    ).call()
    assert bytes(on_chain) == digest(handle.chain_id, registry.address, fields)
    signed = researcher.sign_lineage(handle.chain_id, registry.address, fields)
    assert recover(handle.chain_id, registry.address, signed) == researcher.address
    sent = registry.anchor_signed(relayer, signed)
    assert sent.gas_used <= SIGNED_GAS_TARGET, sent.gas_used
    record = registry.lineage(commit, researcher.address)
    assert record is not None and record.researcher == researcher.address
    assert registry.lineage(commit, relayer.address) is None  # the payer has no record


def test_a_signature_for_another_chain_or_after_its_deadline_is_refused_with_a_typed_error(
    deployed_chain: Chain,
) -> None:
    import time

    from eth_account import Account

    from anchor.chain.keys import Signer
    from anchor.chain.signed import LineageFields

    handle, registry, relayer = _registry(deployed_chain)
    researcher = Signer(Account.from_key(RESEARCHER_KEY), "test")
    fields = LineageFields(
        researcher.address,
        os.urandom(32),
        os.urandom(32),
        os.urandom(32),
        os.urandom(32),
        True,
        int(time.time()) + 3600,
    )
    elsewhere = researcher.sign_lineage(8453, registry.address, fields)
    with pytest.raises(RegistryRevert) as info:
        registry.anchor_signed(relayer, elsewhere)
    assert info.value.detail["error"] == "WrongSigner"
    assert info.value.detail["args"][0] == researcher.address.lower()
    expired = researcher.sign_lineage(handle.chain_id, registry.address, dataclasses.replace(fields, deadline=1))
    with pytest.raises(RegistryRevert) as info:
        registry.anchor_signed(relayer, expired)
    assert info.value.detail == {"error": "SignatureExpired", "args": [1]}


def test_batch_root_costs_at_most_46500_gas_and_records_submitter_and_block(deployed_chain: Chain) -> None:
    handle, registry, signer = _registry(deployed_chain)
    root = os.urandom(32)
    sent = registry.anchor_root(signer, root)
    assert sent.gas_used <= ROOT_GAS_TARGET, sent.gas_used
    record = registry.root_record(root, signer.address)
    assert record is not None
    assert (record.submitter, record.block_number) == (signer.address, sent.block_number)
    assert registry.root_tx(root, sent.block_number) == sent.tx_hash
    assert registry.submitter_of(root, sent.tx_hash) == signer.address  # how a proof names its submitter
    # without a submitter: the earliest, found by its events (which name the transaction too)
    assert registry.root_record(root) == dataclasses.replace(record, tx_hash=sent.tx_hash)
    assert registry.root_record_of_tx(root, sent.tx_hash) == dataclasses.replace(record, tx_hash=sent.tx_hash)


def test_second_anchor_of_a_commit_raises_typed_revert_carrying_researcher_and_commit(deployed_chain: Chain) -> None:
    _, registry, signer = _registry(deployed_chain)
    commit = os.urandom(32)
    registry.anchor_lineage(signer, commit, b"\0" * 32, b"\0" * 32, b"\0" * 32, False)
    with pytest.raises(RegistryRevert) as info:
        registry.anchor_lineage(signer, commit, b"\1" * 32, b"\0" * 32, b"\0" * 32, True)
    assert info.value.detail == {
        "error": "LineageAlreadyAnchored",
        "args": [signer.address.lower(), "0x" + commit.hex()],
    }


def test_second_anchor_of_a_root_raises_typed_revert_carrying_the_submitter_and_root(deployed_chain: Chain) -> None:
    _, registry, signer = _registry(deployed_chain)
    root = os.urandom(32)
    registry.anchor_root(signer, root)
    with pytest.raises(RegistryRevert) as info:
        registry.anchor_root(signer, root)
    assert info.value.detail == {"error": "RootAlreadyAnchored", "args": [signer.address.lower(), "0x" + root.hex()]}


def test_evm_inclusion_check_agrees_with_the_python_tree(deployed_chain: Chain) -> None:
    _, registry, signer = _registry(deployed_chain)
    items = [os.urandom(32) for _ in range(37)]
    tree = BatchTree.build(items)
    registry.anchor_root(signer, tree.root)
    for item in items:
        assert registry.verify_inclusion(tree.root, tree.proof(item), item, signer.address)
    tampered = bytearray(items[5])
    tampered[0] ^= 1
    assert not registry.verify_inclusion(tree.root, tree.proof(items[5]), bytes(tampered), signer.address)
    assert not registry.verify_inclusion(tree.root, tree.proof(items[5]), items[5], "0x" + "ba" * 20)  # not theirs
