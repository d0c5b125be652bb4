"""Our type-2 transactions are eth_account's, byte for byte (anchor.chain.eip1559): the effect runner
signs with them so that a flush need not import eth_account, and a difference in one byte
would be a transaction the chain refuses or, worse, one that says something else."""

from __future__ import annotations

import rlp
from eth_account import Account
from hypothesis import given, settings
from hypothesis import strategies as st

from anchor.chain.eip1559 import _rlp, signed_type2
from anchor.manifest.keccak import keccak256

_N = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141  # the order of secp256k1

keys = st.integers(min_value=1, max_value=_N - 1).map(lambda k: k.to_bytes(32, "big"))
scalars = st.one_of(st.integers(0, 300), st.integers(0, 2**64), st.integers(0, 2**256 - 1))


@settings(max_examples=150, deadline=None)
@given(
    key=keys,
    chain_id=st.integers(1, 2**32),
    nonce=st.integers(0, 2**64 - 1),
    priority=scalars,
    max_fee=scalars,
    gas=st.integers(0, 2**63),
    to=st.binary(min_size=20, max_size=20),
    data=st.binary(max_size=400),
    value=scalars,
)
def test_a_signed_type2_transaction_is_eth_accounts_byte_for_byte(
    key: bytes, chain_id: int, nonce: int, priority: int, max_fee: int, gas: int, to: bytes, data: bytes, value: int
) -> None:
    tx_hash, raw = signed_type2(
        key,
        chain_id=chain_id,
        nonce=nonce,
        priority_fee=priority,
        max_fee=max_fee,
        gas=gas,
        to="0x" + to.hex(),
        data=data,
        value=value,
    )
    theirs = Account.sign_transaction(
        {
            "type": 2,
            "chainId": chain_id,
            "nonce": nonce,
            "maxPriorityFeePerGas": priority,
            "maxFeePerGas": max_fee,
            "gas": gas,
            "to": _checksummed(to),
            "data": data,
            "value": value,
        },
        key,
    )
    assert raw == bytes(theirs.raw_transaction)
    assert tx_hash == bytes(theirs.hash) == keccak256(raw)
    assert Account.recover_transaction(raw) == Account.from_key(key).address


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.binary(max_size=80), lambda inner: st.lists(inner, max_size=6), max_leaves=20))
def test_the_rlp_encoder_agrees_with_ethereums_rlp(item: bytes | list) -> None:  # type: ignore[type-arg]
    assert _rlp(item) == rlp.encode(item)
    assert rlp.decode(_rlp(item)) == item


def test_a_field_that_cannot_be_a_transactions_is_refused() -> None:
    import pytest

    key = (1).to_bytes(32, "big")
    with pytest.raises(ValueError, match="negative"):
        signed_type2(key, chain_id=1, nonce=-1, priority_fee=0, max_fee=0, gas=0, to="0x" + "11" * 20, data=b"")
    with pytest.raises(ValueError, match="20-byte"):
        signed_type2(key, chain_id=1, nonce=0, priority_fee=0, max_fee=0, gas=0, to="0x1234", data=b"")


def _checksummed(raw: bytes) -> str:
    from anchor.manifest.keccak import checksum_address

    return checksum_address(raw.hex())
