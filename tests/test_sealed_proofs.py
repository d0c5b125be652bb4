"""Sealed proofs verify with no network, against one trusted block hash; every edit of the sealed
section, a hostile receipt proof, another transaction's receipt or another emitter is refused by name.
The production decoder and walker (anchor.sealing.rlp, .mpt) are held to Ethereum's `rlp` and `trie` by
tests/test_sealing_rlp.py and tests/test_sealing_mpt.py; tests/reference_impl.py reads the same bytes
with a decoder and a trie walker written from docs/manifest.md alone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from anchor.chain.canonical import canonical_address
from anchor.errors import ExitCode
from tests import reference_impl as ref
from tests.cli import ANCHOR_BIN
from tests.conftest import Chain, anvil, lookalike_registry

VECTORS = Path(__file__).parent / "vectors" / "sealed"
GOLDEN_BLOCK = "2:0x1723685d556beb264e849a1430f6f1b2f57e276cc37f15fd773b42d1b28b7294"


def _offline(work: Path, *args: str, data: Path) -> subprocess.CompletedProcess[str]:
    """`anchor verify --offline` in a network namespace of its own with no interface up (as root, as CI
    runs): any socket it opened to a chain or a service would fail, so passing proves it opened none."""
    env = {"PATH": "/usr/bin:/bin", "ANCHOR_DATA_DIR": str(data), "HOME": str(data)}
    env.update({k: v for k, v in os.environ.items() if k == "PYTHONPATH"})  # a worktree's copy of the code
    return subprocess.run(["unshare", "--net", str(ANCHOR_BIN), "verify", *args, "--offline"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_the_golden_sealed_proof_verifies_offline_and_the_reference_implementation_agrees(tmp_path: Path) -> None:
    work = tmp_path / "v"
    shutil.copytree(VECTORS, work)
    said = _offline(work, "work", "--trusted-blocks", "trusted-blocks.txt", data=tmp_path / "d")
    assert said.returncode == ExitCode.OK, said.stderr
    assert "that block 2 of local development chain (31337) is 0x1723685d" in said.stdout
    proof = json.loads((VECTORS / "work.anchor.json").read_text())
    block, timestamp, submitter = ref.sealed_anchor(proof["anchor"]["sealed"], GOLDEN_BLOCK.split(":")[1],
                                                   proof["batch"]["root"], canonical_address())  # fmt: skip
    verdict = json.loads(_offline(work, "work", "--trusted-block", GOLDEN_BLOCK, "--json", data=tmp_path / "d").stdout)
    assert (
        (verdict["anchored_block"], verdict["submitter"].lower())
        == (block, submitter)
        == (2, verdict["submitter"].lower())
    )
    from datetime import UTC, datetime

    assert verdict["anchored_at"] == datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")
    missing = _offline(work, "work", data=tmp_path / "d")
    assert (
        missing.returncode == ExitCode.BAD_INPUT
        and "error[bad_input]: --trusted-block: none for block 2" in missing.stderr
    )
    assert "then trust it: --trusted-block 2:0x1723685d" in missing.stderr


def _flip(hex_text: str, at: int) -> str:
    digits = list(hex_text)
    digits[at] = "0" if digits[at] != "0" else "1"
    return "".join(digits)


@pytest.mark.parametrize(
    ("field", "where"),
    [("header", 2 + 2 * 40), ("header", -2), ("receipt", -4), ("receipt", 2 + 2 * 5), ("proof", 2 + 2 * 60)],
)
def test_one_flipped_byte_anywhere_in_the_sealed_section_is_refused_by_name(
    tmp_path: Path, field: str, where: int
) -> None:
    work = tmp_path / "v"
    shutil.copytree(VECTORS, work)
    proof = json.loads((work / "work.anchor.json").read_text())
    sealed = proof["anchor"]["sealed"]
    if field == "proof":
        sealed["proof"][0] = _flip(sealed["proof"][0], where)
    else:
        sealed[field] = _flip(sealed[field], where)
    (work / "work.anchor.json").write_text(json.dumps(proof))
    said = _offline(work, "work", "--trusted-block", GOLDEN_BLOCK, data=tmp_path / "d")
    assert said.returncode == ExitCode.TAMPERED, said.stdout + said.stderr
    assert f"sealed.{field}" in said.stderr or "sealed.header" in said.stderr, said.stderr
    with pytest.raises(AssertionError):
        ref.sealed_anchor(sealed, GOLDEN_BLOCK.split(":")[1], proof["batch"]["root"], canonical_address())


@pytest.mark.parametrize(
    "hostile", ["a node of another path", "an empty trie node", "a node twice", "5,000-deep nesting"]
)
def test_a_hostile_receipt_proof_is_refused_as_tampered_never_a_traceback(tmp_path: Path, hostile: str) -> None:
    import rlp

    work = tmp_path / "v"
    shutil.copytree(VECTORS, work)
    proof = json.loads((work / "work.anchor.json").read_text())
    sealed, trusted = proof["anchor"]["sealed"], GOLDEN_BLOCK
    if hostile == "a node of another path":
        sealed["proof"].append("0x" + rlp.encode([b"\x20", b"another receipt"]).hex())
    elif hostile == "an empty trie node":
        sealed["proof"].append("0x80")
    elif hostile == "a node twice":
        sealed["proof"].append(sealed["proof"][-1])
    else:  # a header the verifier is told to trust, whose receiptsRoot is the hash of a 5,000-deep list
        deep = ref.rlp_nested_lists(5000)
        fields = rlp.decode(bytes.fromhex(sealed["header"][2:]))
        fields[5] = ref.keccak(deep)
        header = rlp.encode(fields)
        sealed["header"], sealed["proof"] = "0x" + header.hex(), ["0x" + deep.hex()]
        trusted = f"2:0x{ref.keccak(header).hex()}"
    (work / "work.anchor.json").write_text(json.dumps(proof))
    said = _offline(work, "work", "--trusted-block", trusted, data=tmp_path / "d")
    assert said.returncode == ExitCode.TAMPERED, said.stdout + said.stderr
    assert "sealed.proof" in said.stderr and "Traceback" not in said.stderr, said.stderr


def test_a_wrong_trusted_hash_is_refused_and_an_unsealed_proof_needs_the_network(tmp_path: Path) -> None:
    work = tmp_path / "v"
    shutil.copytree(VECTORS, work)
    wrong = _offline(work, "work", "--trusted-block", GOLDEN_BLOCK[:-1] + "5", data=tmp_path / "d")
    assert wrong.returncode == ExitCode.TAMPERED and "not the trusted hash" in wrong.stderr
    proof = json.loads((work / "work.anchor.json").read_text())
    del proof["anchor"]["sealed"]
    (work / "work.anchor.json").write_text(json.dumps(proof))
    unsealed = _offline(work, "work", "--trusted-block", GOLDEN_BLOCK, data=tmp_path / "d")
    assert unsealed.returncode == ExitCode.BAD_INPUT and "anchor seal PATH" in unsealed.stderr
    typo = _offline(work, "work", "--trusted-block", "2:0x12", data=tmp_path / "d")
    assert typo.returncode == ExitCode.BAD_INPUT and "N:HASH" in typo.stderr


def _seal(chain: Chain, path: Path) -> dict[str, Any]:
    return json.loads(chain.cli("seal", str(path), "--json", check=True).stdout)["sealed"][0]


@pytest.mark.chain
def test_stamp_seal_chain_down_then_offline_and_another_receipt_or_emitter_is_refused(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    fresh_chain.cli("deploy", check=True)
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "b.txt").write_text("b\n")
    for name in ("a.txt", "b.txt"):
        fresh_chain.cli("stamp", str(tmp_path / name), check=True)
    mine = json.loads((tmp_path / "a.txt.anchor.json").read_text())
    block = _seal(fresh_chain, tmp_path / "a.txt")["blocks"][0]
    other = _seal(fresh_chain, tmp_path / "b.txt")["blocks"][0]
    assert _seal(fresh_chain, tmp_path / "a.txt")["already"] == 1  # sealing twice changes nothing
    sealed = json.loads((tmp_path / "a.txt.anchor.json").read_text())
    assert {k: v for k, v in sealed["anchor"].items() if k != "sealed"} == mine["anchor"]
    assert {k: sealed[k] for k in sealed if k != "anchor"} == {k: mine[k] for k in mine if k != "anchor"}
    # an event from another address: a stranger's look-alike registry anchoring our very root, its
    # receipt sealed (header, receipt, trie proof all genuine) under the canonical registry's name
    from eth_account import Account

    from anchor.chain.connection import reach
    from anchor.chain.keys import Signer
    from anchor.chain.registry import Registry
    from anchor.proof.file import ChainAnchor
    from anchor.sealing.make import seal_anchor
    from tests.conftest import STRANGER_KEY

    url = fresh_chain.node.rpc_url
    copy, _ = lookalike_registry(url)
    rpc, chain_id = reach(url)
    stranger = Signer(Account.from_key(STRANGER_KEY), "stranger")
    sent = Registry(rpc, chain_id, copy, mine["anchor"]["code_hash"]).anchor_root(
        stranger, bytes.fromhex(mine["batch"]["root"][2:])
    )
    claimed = ChainAnchor(chain_id=chain_id, registry=canonical_address(), code_hash=mine["anchor"]["code_hash"],
                          tx_hash=sent.tx_hash, block_number=sent.block_number)  # fmt: skip
    forged, forged_hash = seal_anchor(rpc, claimed)
    fresh_chain.node.down()
    data = tmp_path / "colleague"
    ok = _offline(tmp_path, "a.txt", "--trusted-block", f"{block['block']}:{block['hash']}", data=data)
    assert ok.returncode == ExitCode.OK, ok.stderr
    cases = {
        "another transaction's receipt": (other, ExitCode.TAMPERED, "rootanchored event of root"),
        "an event from another address": ((sent.block_number, forged_hash, forged), ExitCode.UNKNOWN_REGISTRY,
                                          f"emitted by {copy.lower()}"),
    }  # fmt: skip
    for name, (source, code, words) in cases.items():
        edited = json.loads(json.dumps(sealed))
        if isinstance(source, dict):  # b's whole sealed anchor section
            b = json.loads((tmp_path / "b.txt.anchor.json").read_text())["anchor"]
            edited["anchor"].update(sealed=b["sealed"], block_number=b["block_number"])
            trust = f"{source['block']}:{source['hash']}"
        else:
            number, block_hash, section = source
            edited["anchor"].update(sealed=section.model_dump(), block_number=number)
            trust = f"{number}:{block_hash}"
        (tmp_path / "a.txt.anchor.json").write_text(json.dumps(edited))
        said = _offline(tmp_path, "a.txt", "--trusted-block", trust, data=data)
        assert said.returncode == code and words in said.stderr.lower(), (name, said.stderr)


@pytest.mark.chain
@pytest.mark.parametrize("fork", ["london", "shanghai", "cancun", "prague"])
def test_the_header_and_receipt_encodings_of_every_fork_reproduce_the_chains_own_commitments(fork: str) -> None:
    """Each fork's header RLP hashes to the block hash, and the receipts (legacy and typed) rebuild the
    header's receiptsRoot, on an anvil of that hardfork."""
    from trie.hexary import HexaryTrie

    from anchor.chain.connection import reach
    from anchor.manifest.keccak import keccak256
    from anchor.sealing.encoding import header_rlp, index_key, receipt_encoding

    with anvil(31337, None, "--hardfork", fork) as url:
        rpc, _ = reach(url)
        accounts = rpc.request("eth_accounts", [])
        rpc.request("evm_setAutomine", [False])
        for kind in ("0x0", "0x2") if fork != "london" else ("0x0", "0x1", "0x2"):
            rpc.request("eth_sendTransaction", [{"from": accounts[0], "to": accounts[1], "value": "0x1", "type": kind}])
        rpc.request("evm_mine", [])
        block = rpc.get_block("latest")
        assert block is not None and len(block["transactions"]) >= 2
        assert "0x" + keccak256(header_rlp(block)).hex() == block["hash"]
        tree = HexaryTrie({})
        for receipt in rpc.request("eth_getBlockReceipts", [block["number"]]):
            tree.set(index_key(int(receipt["transactionIndex"], 16)), receipt_encoding(receipt))
        assert "0x" + bytes(tree.root_hash).hex() == block["receiptsRoot"]


@pytest.mark.chain
def test_the_service_serves_a_sealed_proof_that_the_library_verifies_offline(
    deployed_chain: Chain, tmp_path: Path
) -> None:
    """`GET /v1/proofs/{digest}?sealed=1`: the anchor comes with its sealed section;
    `anchor.Verifier.offline` checks it with the block's hash alone."""
    from fastapi.testclient import TestClient

    import anchor
    from anchor.proof.file import parse_proof
    from api.app import create_app
    from api.config import ApiConfig

    (tmp_path / "served.txt").write_text("served\n")
    deployed_chain.cli("journal", "submit", str(tmp_path / "served.txt"), check=True)
    deployed_chain.cli("journal", "flush", check=True)
    digest = json.loads(deployed_chain.cli("hash", str(tmp_path / "served.txt"), "--json", check=True).stdout)
    with TestClient(create_app(deployed_chain.settings, ApiConfig())) as client:
        plain = client.get(f"/v1/proofs/{digest['manifest_digest']}")
        served = client.get(f"/v1/proofs/{digest['manifest_digest']}", params={"sealed": "1"})
    assert plain.status_code == served.status_code == 200 and "sealed" not in plain.json()["anchor"]
    sealed = served.json()["anchor"]["sealed"]
    from anchor.manifest.keccak import keccak256

    block_hash = "0x" + keccak256(bytes.fromhex(sealed["header"][2:])).hex()
    number = served.json()["anchor"]["block_number"]
    from anchor.chain.node import rpc_call

    assert rpc_call(deployed_chain.node.rpc_url, "eth_getBlockByNumber", [hex(number), False])["hash"] == block_hash
    proof = parse_proof(served.content, "served proof")
    verdict = anchor.Verifier.offline([f"{number}:{block_hash}"]).verify_proof(proof)
    assert verdict.anchored_block == number and verdict.trusted is not None and block_hash in verdict.trusted
