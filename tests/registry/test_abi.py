"""The hand-written ABI codec and keccak of the read path (anchor.chain.abi, anchor.manifest.keccak) give
the bytes eth_abi, eth_hash and eth_utils give, for every function and event of the registry;
and a read of the registry (verify, lookup, the journal's status) imports none of web3's stack."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from eth_abi import decode as eth_decode
from eth_abi import encode as eth_encode
from eth_hash.auto import keccak
from eth_utils import function_signature_to_4byte_selector, to_checksum_address
from hypothesis import given, settings
from hypothesis import strategies as st

from anchor.chain import abi
from anchor.chain.artifact import CONTRACTS
from anchor.manifest.keccak import keccak256
from tests.conftest import Chain

WEB3_STACK = ("web3", "eth_account", "py_ecc", "eth_abi", "eth_utils", "eth_keyfile", "aiohttp")


def _value(kind: str, draw: st.DrawFn) -> object:
    if kind == "address":
        return to_checksum_address(draw(st.binary(min_size=20, max_size=20)))
    if kind == "bool":
        return draw(st.booleans())
    if kind.startswith("uint"):
        return draw(st.integers(0, 2 ** int(kind[4:]) - 1))
    if kind.endswith("[]"):
        return [draw(st.binary(min_size=32, max_size=32)) for _ in range(draw(st.integers(0, 5)))]
    return draw(st.binary(min_size=int(kind[5:]), max_size=int(kind[5:])))


@st.composite
def calls(draw: st.DrawFn) -> tuple[abi.Function, list[object]]:
    version = draw(st.sampled_from(sorted(CONTRACTS)))
    function = draw(st.sampled_from(sorted(abi.interface(version).functions.values(), key=lambda f: f.name)))
    return function, [_value(kind, draw) for kind in function.inputs]


@settings(max_examples=300, deadline=None)
@given(calls())
def test_call_data_is_eth_abis_for_every_registry_function(call: tuple[abi.Function, list[object]]) -> None:
    function, args = call
    signature = f"{function.name}({','.join(function.inputs)})"
    assert function.call_data(*args) == function_signature_to_4byte_selector(signature) + eth_encode(
        list(function.inputs), args
    )


@settings(max_examples=300, deadline=None)
@given(calls())
def test_answers_decode_as_eth_abi_decodes_them(call: tuple[abi.Function, list[object]]) -> None:
    function, args = call
    kinds = [k for k in function.inputs if not k.endswith("[]")]  # answers are static words (and string)
    values = [a for k, a in zip(function.inputs, args, strict=True) if not k.endswith("[]")]
    data = eth_encode(kinds, values)
    theirs = [
        to_checksum_address(v) if k == "address" else v for k, v in zip(kinds, eth_decode(kinds, data), strict=True)
    ]
    assert abi.decode(kinds, data) == theirs  # addresses checksummed, as web3's contract calls give them
    text = eth_encode(["string"], ["anchor registry ✓ 2.0.0"])
    assert abi.decode(["string"], text) == ["anchor registry ✓ 2.0.0"]


def test_a_short_or_overrunning_answer_is_refused_not_padded() -> None:
    with pytest.raises(ValueError, match="too short"):
        abi.decode(["address", "uint48", "uint48"], bytes(64))
    overrun = (32).to_bytes(32, "big") + (100).to_bytes(32, "big") + b"abc".ljust(32, b"\0")
    with pytest.raises(ValueError, match="past its end"):
        abi.decode(["string"], overrun)
    with pytest.raises(TypeError):
        abi.encode(["int256"], [1])  # not a type the registry uses: a bug here, never guessed


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.binary(min_size=20, max_size=20))
def test_keccak_and_checksums_are_eth_hash_and_eth_utils(data: bytes, address: bytes) -> None:
    assert keccak256(data) == keccak(data)
    assert abi.checksum_address("0x" + address.hex()) == to_checksum_address(address)


def test_event_topics_and_arguments_match_the_abi_signatures() -> None:
    event = abi.interface("4.0.0").events["LineageAnchored"]
    assert event.topic == "0x" + keccak(b"LineageAnchored(address,bytes32,bytes32,bytes32,bytes32,bool,uint64)").hex()
    who, commit, parent = to_checksum_address(os.urandom(20)), os.urandom(32), os.urandom(32)
    diff, metric = os.urandom(32), os.urandom(32)
    log = {
        "topics": [event.topic, "0x" + bytes(12).hex() + who[2:].lower(), "0x" + commit.hex(), "0x" + parent.hex()],
        "data": "0x" + eth_encode(["bytes32", "bytes32", "bool", "uint64"], [diff, metric, True, 1_700_000_000]).hex(),
    }
    assert event.args(log) == {
        "researcher": who,
        "commit": commit,
        "parent": parent,
        "diffHash": diff,
        "metricHash": metric,
        "kept": True,
        "timestamp": 1_700_000_000,
    }
    with pytest.raises(ValueError, match="not a RootAnchored"):
        abi.interface("4.0.0").events["RootAnchored"].args(log)
    retracted = abi.interface("4.0.0").events["RootRetracted"]
    assert retracted.topic == "0x" + keccak(b"RootRetracted(bytes32,address,bytes32)").hex()
    reason = keccak(b"the metric leaked")
    log = {
        "topics": [retracted.topic, "0x" + commit.hex(), "0x" + bytes(12).hex() + who[2:].lower()],
        "data": "0x" + reason.hex(),
    }
    assert retracted.args(log) == {"root": commit, "submitter": who, "reason": reason}


SLOW_TO_IMPORT = ("pydantic", "pydantic_core", "typer", "pathspec", "concurrent.futures.process")
"""Not web3, but 10-140 ms each of a read's 250 ms: the proof formats are `anchor.record` records, option
values are converted by click (no validation library), exclusion rules and worker pools load when used."""


@pytest.mark.chain
def test_verify_lookup_and_status_import_nothing_of_web3(deployed_chain: Chain, tmp_path: Path) -> None:
    """`python -X importtime -m anchor verify FILE`: each read in a fresh interpreter, and
    what it imported, from its own -X importtime listing: nothing of web3, and none of the libraries
    that cost a read its budget (pydantic among them)."""
    from tests.cli import ANCHOR_BIN

    target = tmp_path / "result.txt"
    target.write_text("0.93\n")
    deployed_chain.cli("stamp", str(target), check=True)
    python = str(Path(ANCHOR_BIN).with_name("python"))
    reads = [["verify", str(target)], ["verify", str(target), "--json"], ["lookup", str(target)], ["journal", "status"]]
    for argv in reads:
        run = subprocess.run(
            [python, "-X", "importtime", "-m", "anchor", *argv],
            env=deployed_chain.env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert run.returncode == 0, (argv, run.stderr[-2000:])
        imported = {line.split("|")[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}
        assert len(imported) > 100  # the listing is really there
        heavy = sorted(m for m in imported if m.split(".")[0] in WEB3_STACK or m in SLOW_TO_IMPORT)
        assert heavy == [], (argv, heavy[:10])
    verdict = json.loads(deployed_chain.cli("verify", str(target), "--json", check=True).stdout)
    assert verdict["verified"] is True and verdict["submitter"].startswith("0x")
    assert verdict["submitter"] == to_checksum_address(verdict["submitter"])
    assert sys.modules.get("anchor.chain.rpc") is not None


@pytest.mark.chain
def test_journal_submit_flush_and_stamp_import_no_signing_library(deployed_chain: Chain, tmp_path: Path) -> None:
    """`journal submit` journals a manifest and signs nothing, yet opening the service loaded the
    signer through eth_account and web3 for the genesis check: 1.2 s of its 1.7 s was py_ecc computing
    BLS pairing constants. Then the flush that signs paid the same second, and so did `stamp`. Now the
    effect protocol estimates, signs (anchor.chain.eip1559) and sends through the JSON-RPC client: none
    of the three imports web3 or eth_account, and the flush anchors the item with the key the address
    was derived for, verified."""
    from tests.cli import ANCHOR_BIN

    target, other = tmp_path / "result.txt", tmp_path / "other.txt"
    target.write_text("0.93\n")
    other.write_text("0.94\n")
    python = str(Path(ANCHOR_BIN).with_name("python"))
    for argv in (["journal", "submit", str(target)], ["journal", "flush"], ["stamp", str(other)]):
        run = subprocess.run(
            [python, "-X", "importtime", "-m", "anchor", *argv],
            env=deployed_chain.env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, (argv, run.stderr[-2000:])
        imported = {line.split("|")[-1].strip() for line in run.stderr.splitlines() if line.startswith("import time:")}
        assert len(imported) > 100
        assert sorted(m for m in imported if m.split(".")[0] in WEB3_STACK) == [], argv
    for path in (target, other):
        verdict = json.loads(deployed_chain.cli("verify", str(path), "--json", check=True).stdout)
        assert verdict["verified"] is True and verdict["submitter"] == "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 2**256 - 1))
def test_a_keys_address_is_the_one_eth_account_derives_and_a_non_key_is_refused(number: int) -> None:
    """The signer's address now comes from coincurve and keccak (no eth_account until it signs): it must
    be eth_account's for every key, and what is not a secp256k1 key (0, the group order or above, not
    32 bytes) must be refused as eth_account refuses it."""
    from eth_account import Account

    from anchor.chain.keys import address_of

    secret = number.to_bytes(32, "big")
    order = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
    if number >= order:
        with pytest.raises(ValueError):
            address_of(secret)
        with pytest.raises(Exception):  # noqa: B017, PT011 - eth_account's own error type varies
            Account.from_key(secret)
        return
    assert address_of(secret) == Account.from_key(secret).address
    for bad in (bytes(32), order.to_bytes(32, "big"), secret[:31]):
        with pytest.raises(ValueError):
            address_of(bad)
