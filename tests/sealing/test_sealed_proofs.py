"""Sealed proofs verify with no network, against one trusted block hash; every edit of the sealed
section, a hostile receipt proof, another transaction's receipt or another emitter is refused by name.
The production decoder and walker (anchor.sealing.rlp, .mpt) are held to Ethereum's `rlp` and `trie` by
tests/sealing/test_sealing_rlp.py and tests/sealing/test_sealing_mpt.py; tests/reference_impl.py reads the same bytes
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

VECTORS = Path(__file__).parents[1] / "vectors" / "sealed"
GOLDEN_BLOCK = "2:0x1723685d556beb264e849a1430f6f1b2f57e276cc37f15fd773b42d1b28b7294"


def _offline(work: Path, *args: str, data: Path) -> subprocess.CompletedProcess[str]:
    """`anchor verify --offline` in a network namespace of its own with no interface up (as root, as CI
    runs): any socket it opened to a chain or a service would fail, so passing proves it opened none."""
    env = {"PATH": "/usr/bin:/bin", "ANCHOR_DATA_DIR": str(data), "HOME": str(data)}
    env.update({k: v for k, v in os.environ.items() if k == "PYTHONPATH"})  # a worktree's copy of the code
    return subprocess.run(
        ["unshare", "--net", str(ANCHOR_BIN), "verify", *args, "--offline"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_golden_sealed_proof_verifies_offline_and_the_reference_implementation_agrees(tmp_path: Path) -> None:
    work = tmp_path / "v"
    shutil.copytree(VECTORS, work)
    said = _offline(work, "work", "--trusted-blocks", "trusted-blocks.txt", data=tmp_path / "d")
    assert said.returncode == ExitCode.OK, said.stderr
    assert "that block 2 of local development chain (31337) is 0x1723685d" in said.stdout
    proof = json.loads((VECTORS / "work.anchor.json").read_text())
    block, timestamp, submitter = ref.sealed_anchor(
        proof["anchor"]["sealed"], GOLDEN_BLOCK.split(":")[1], proof["batch"]["root"], canonical_address()
    )
    verdict = json.loads(_offline(work, "work", "--trusted-block", GOLDEN_BLOCK, "--json", data=tmp_path / "d").stdout)
    assert (
        (verdict["anchored_block"], verdict["submitter"].lower())
        == (block, submitter)
        == (2, verdict["submitter"].lower())
    )
    from datetime import UTC, datetime

    assert verdict["anchored_at"] == datetime.fromtimestamp(timestamp, UTC).isoformat(timespec="seconds")


def test_offline_the_chain_and_transaction_a_trusted_hash_does_not_bind_are_said_to_be_the_files_word(
    tmp_path: Path,
) -> None:
    """A block hash names no chain, and a receipt proof no transaction hash: the golden proof with its
    chain id edited to Base's verifies offline against the anvil block's hash given as N:HASH (the hash
    is that block's), but the verdict says the chain is the file's word, never "verified on Base"; given
    as CHAIN:N:HASH, the chain is bound and only the transaction hash stays the file's word."""
    work = tmp_path / "v"
    shutil.copytree(VECTORS, work)
    proof = json.loads((work / "work.anchor.json").read_text())
    proof["anchor"]["chain_id"] = 8453
    (work / "work.anchor.json").write_text(json.dumps(proof))
    said = _offline(work, "work", "--trusted-block", GOLDEN_BLOCK, "--json", data=tmp_path / "d")
    trusted = json.loads(said.stdout)["trusted"]
    assert "its chain (Base (8453), as the file says: your trusted block names none; give 8453:2:HASH" in trusted
    assert f"transaction hash {proof['anchor']['tx_hash']} are the file's word" in trusted
    bound = _offline(work, "work", "--trusted-block", "8453:" + GOLDEN_BLOCK, "--json", data=tmp_path / "d")
    trusted = json.loads(bound.stdout)["trusted"]
    assert "as the file says" not in trusted and "is the file's word (a receipt proof shows its index only)" in trusted


def test_a_trusted_block_later_than_the_state_the_file_carries_is_said_not_passed_over(tmp_path: Path) -> None:
    """A file rolled back to an older sealed state (before a retraction), checked with a later block
    trusted as well: the later block was silently ignored and the verdict read "OK". It still verifies
    what the file shows, and says the later block's state is not shown."""
    work = tmp_path / "v"
    shutil.copytree(VECTORS, work)
    said = _offline(
        work,
        "work",
        "--trusted-block",
        GOLDEN_BLOCK,
        "--trusted-block",
        "31337:9:0x" + "ab" * 32,
        "--json",
        data=tmp_path / "d",
    )
    trusted = json.loads(said.stdout)["trusted"]
    assert "you trust block 9 as well, but the file shows the record only as of block" in trusted, trusted


def test_without_a_trusted_block_the_hint_says_where_to_get_the_hash_and_prints_none_from_the_file(
    tmp_path: Path,
) -> None:
    """The file is what is being checked: a hint that printed its own block hash, ready to paste as
    `--trusted-block N:HASH`, made whoever pasted it trust the file they meant to check. The hint names
    where to get the hash instead, and no 64-hex value of the file appears in what is said, in words or
    JSON, nor when the hash given is wrong (the refusal printed the file's own, as ready to paste). A
    malformed `--trusted-block` is a one-line error naming the argument (exit 2)."""
    import re

    work = tmp_path / "v"
    shutil.copytree(VECTORS, work)
    from anchor.manifest.keccak import keccak256

    proof = json.loads((work / "work.anchor.json").read_text())
    from_file = {h.lower() for h in re.findall(r"[0-9a-fA-F]{64}", json.dumps(proof))}
    from_file.add(keccak256(bytes.fromhex(proof["anchor"]["sealed"]["header"][2:])).hex())
    for extra in ([], ["--json"]):
        missing = _offline(work, "work", *extra, data=tmp_path / "d")
        said = missing.stdout + missing.stderr
        assert missing.returncode == ExitCode.BAD_INPUT, said
        assert "--trusted-block: none for block 2" in said and "cast block 2 -f hash" in said, said
        assert "explorer" in said and "colleague" in said, said
        assert not {h.lower() for h in re.findall(r"[0-9a-fA-F]{64}", said)} & from_file, said
    for extra in ([], ["--json"]):  # a wrong hash: refused, naming the hash given and none of the file's
        wrong = _offline(work, "work", "--trusted-block", "2:0x" + "b" * 64, *extra, data=tmp_path / "d")
        said = wrong.stdout + wrong.stderr
        assert wrong.returncode == ExitCode.TAMPERED and "does not hash to the trusted hash 0x" + "b" * 64 in said, said
        assert not {h.lower() for h in re.findall(r"[0-9a-fA-F]{64}", said)} & from_file, said
    for typo in ("5:0xzz", "2:0x" + "1" * 63, "two:0x" + "1" * 64):
        refused = _offline(work, "work", "--trusted-block", typo, data=tmp_path / "d")
        assert refused.returncode == ExitCode.BAD_INPUT, refused.stderr
        assert refused.stderr.startswith(f"error[bad_input]: --trusted-block {typo!r}: expected N:HASH"), refused.stderr
        assert "Traceback" not in refused.stderr


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
    assert wrong.returncode == ExitCode.TAMPERED and "does not hash to the trusted hash" in wrong.stderr
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
def test_a_restamp_of_unchanged_data_keeps_its_sealed_proof_byte_for_byte(fresh_chain: Chain, tmp_path: Path) -> None:
    """`anchor stamp` of data already anchored once wrote the store's copy of its proof over the file,
    and a proof `anchor seal` had sealed lost its seal, with no copy kept (same digest: nothing went to
    the history). The sealed file is the same record, checkable offline: it stays as it is, a folder's
    and a single file's alike."""
    fresh_chain.cli("deploy", check=True)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "metrics.json").write_text('{"accuracy": 0.93}\n')
    (tmp_path / "model.txt").write_text("weights\n")
    for name in ("results", "model.txt"):
        fresh_chain.cli("stamp", str(tmp_path / name), check=True)
        _seal(fresh_chain, tmp_path / name)
        sealed = (tmp_path / f"{name}.anchor.json").read_bytes()
        assert b'"sealed"' in sealed
        again = fresh_chain.cli("stamp", str(tmp_path / name), check=True)
        assert "already anchored" in again.stdout + again.stderr
        assert (tmp_path / f"{name}.anchor.json").read_bytes() == sealed, name
        assert not (tmp_path / f"{name}.anchor-history").exists()


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
    claimed = ChainAnchor(
        chain_id=chain_id,
        registry=canonical_address(),
        code_hash=mine["anchor"]["code_hash"],
        tx_hash=sent.tx_hash,
        block_number=sent.block_number,
    )
    forged, forged_hash = seal_anchor(rpc, claimed)
    fresh_chain.node.down()
    data = tmp_path / "colleague"
    ok = _offline(tmp_path, "a.txt", "--trusted-block", f"{block['block']}:{block['hash']}", data=data)
    assert ok.returncode == ExitCode.OK, ok.stderr
    cases = {
        "another transaction's receipt": (other, ExitCode.TAMPERED, "rootanchored event of root"),
        "an event from another address": (
            (sent.block_number, forged_hash, forged),
            ExitCode.UNKNOWN_REGISTRY,
            f"emitted by {copy.lower()}",
        ),
    }
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
    from anchor.sealing.check import sealed_block_number

    later = sealed_block_number(sealed["state"]["header"])  # served as `anchor seal` writes it: with the record
    later_hash = "0x" + keccak256(bytes.fromhex(sealed["state"]["header"][2:])).hex()
    assert rpc_call(deployed_chain.node.rpc_url, "eth_getBlockByNumber", [hex(later), False])["hash"] == later_hash
    both = anchor.Verifier.offline([f"{number}:{block_hash}", f"{later}:{later_hash}"]).verify_proof(proof)
    assert both.trusted is not None and f"not retracted as of block {later}" in both.trusted


@pytest.mark.chain
def test_offline_a_file_that_records_its_own_retraction_is_never_ok(fresh_chain: Chain, tmp_path: Path) -> None:
    """`anchor retract` writes the retraction into the proof's annotations; sealed afterwards and verified
    offline against the anchoring block alone (which cannot show a later retraction), the verdict is the
    file's own word, unverified: retracted, exit 16, never OK. It once said "OK: … is anchored"."""
    fresh_chain.cli("deploy", check=True)
    (tmp_path / "claim.txt").write_text("a result later withdrawn\n")
    fresh_chain.cli("stamp", str(tmp_path / "claim.txt"), check=True)
    fresh_chain.cli("retract", str(tmp_path / "claim.txt"), "--reason", "the test split leaked", check=True)
    block = _seal(fresh_chain, tmp_path / "claim.txt")["blocks"][0]
    fresh_chain.node.down()
    said = _offline(
        tmp_path, "claim.txt", "--trusted-block", f"{block['block']}:{block['hash']}", data=tmp_path / "colleague"
    )
    assert said.returncode == ExitCode.RETRACTED, said.stdout + said.stderr
    assert "retracted by its own file (unverified)" in said.stderr and "the test split leaked" in said.stderr


def _trust(sealed: dict[str, Any]) -> list[str]:
    """`--trusted-block N:HASH` for every block a seal said to trust (the anchoring one, then the later one)."""
    return [arg for b in sealed["blocks"] for arg in ("--trusted-block", f"{b['block']}:{b['hash']}")]


@pytest.mark.chain
def test_a_refreshed_seal_shows_offline_whether_the_record_was_retracted_by_a_later_block(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """`anchor seal` carries the registry's record as of the latest block (the storage proof of its slot),
    `anchor seal --refresh` moves it on: with the chain stopped and a trusted hash of each block, offline
    verify says "retracted at block R" of a retracted record and "not retracted as of block M" of one
    that stands; one byte changed in either proof of that state is refused by name."""
    from anchor.chain.node import rpc_call
    from anchor.sealing.check import record_slot

    fresh_chain.cli("deploy", check=True)
    for name in ("withdrawn.txt", "kept.txt"):
        (tmp_path / name).write_text(f"{name}\n")
        fresh_chain.cli("stamp", str(tmp_path / name), check=True)
    _seal(fresh_chain, tmp_path / "withdrawn.txt")
    done = json.loads(
        fresh_chain.cli(
            "retract", str(tmp_path / "withdrawn.txt"), "--reason", "a leaked split", "--json", check=True
        ).stdout
    )
    kept = _seal(fresh_chain, tmp_path / "kept.txt")
    refreshed = json.loads(
        fresh_chain.cli("seal", "--refresh", str(tmp_path / "withdrawn.txt"), "--json", check=True).stdout
    )["sealed"][0]
    assert refreshed["refreshed"] == 1 and [b["block"] for b in refreshed["blocks"]][1] == done["block_number"]
    # the slot the state proves is the one the registry reads (eth_getStorageAt, at the later block)
    proof = json.loads((tmp_path / "kept.txt.anchor.json").read_text())
    later = kept["blocks"][1]["block"]
    submitter = json.loads(fresh_chain.cli("verify", str(tmp_path / "kept.txt"), "--json").stdout)["submitter"]
    slot = record_slot(submitter, bytes.fromhex(proof["batch"]["root"][2:]))
    asked = [proof["anchor"]["registry"], "0x" + slot.hex(), hex(later)]
    word = int(rpc_call(fresh_chain.node.rpc_url, "eth_getStorageAt", asked), 16)
    assert (word >> 48) & (2**48 - 1) == proof["anchor"]["block_number"]
    fresh_chain.node.down()
    data = tmp_path / "colleague"
    withdrawn = _offline(tmp_path, "withdrawn.txt", *_trust(refreshed), data=data)
    assert withdrawn.returncode == ExitCode.RETRACTED, withdrawn.stdout + withdrawn.stderr
    assert f"(block {done['block_number']}), as the registry's record shows in block" in withdrawn.stderr
    assert '"a leaked split"' in withdrawn.stderr
    # the reference implementation, written from docs/manifest.md alone, reads the same records
    state = json.loads((tmp_path / "withdrawn.txt.anchor.json").read_text())
    read = ref.record_as_of(
        state["anchor"]["sealed"]["state"],
        refreshed["blocks"][1]["hash"],
        state["anchor"]["registry"],
        state["anchor"]["code_hash"],
        submitter,
        state["batch"]["root"],
    )
    assert (read[0], read[2], read[4]) == (done["block_number"], state["anchor"]["block_number"], done["block_number"])
    read = ref.record_as_of(
        proof["anchor"]["sealed"]["state"],
        kept["blocks"][1]["hash"],
        proof["anchor"]["registry"],
        proof["anchor"]["code_hash"],
        submitter,
        proof["batch"]["root"],
    )
    assert (read[0], read[2], read[4]) == (later, proof["anchor"]["block_number"], 0)
    standing = _offline(tmp_path, "kept.txt", *_trust(kept), data=data)
    assert standing.returncode == ExitCode.OK, standing.stderr
    assert f"not retracted as of block {later}" in standing.stdout
    only_first = _offline(tmp_path, "kept.txt", *_trust(kept)[:2], data=data)
    assert only_first.returncode == ExitCode.OK and f"trust the hash of block {later} as well" in only_first.stdout
    for field in ("storage_proof", "account_proof"):
        edited = json.loads(json.dumps(proof))
        nodes = edited["anchor"]["sealed"]["state"][field]
        nodes[-1] = _flip(nodes[-1], len(nodes[-1]) - 3)
        (tmp_path / "kept.txt.anchor.json").write_text(json.dumps(edited))
        said = _offline(tmp_path, "kept.txt", *_trust(kept), data=data)
        assert said.returncode == ExitCode.TAMPERED and f"sealed.state.{field}" in said.stderr, said.stderr


def test_the_golden_vector_pins_what_the_spec_says_of_node_order_extra_nodes_address_case_and_policy(
    tmp_path: Path,
) -> None:
    """docs/manifest.md answers what an independent implementer had to guess, and the golden vector holds
    each answer: trie nodes are found by their hash (their order changes nothing, but a node listed twice
    or off the path is tampered), the
    receipt is typed (its first byte, 0x02, below 0x80), the registry's address is compared whatever the
    case of its hex digits, and a policy applies offline (`--expect-submitter` to the sealed event's
    submitter; `--min-finality` is refused, exit 2)."""
    work = tmp_path / "v"
    shutil.copytree(VECTORS, work)
    proof = json.loads((work / "work.anchor.json").read_text())
    sealed, trusted = proof["anchor"]["sealed"], GOLDEN_BLOCK.split(":")[1]
    assert int(sealed["receipt"][2:4], 16) < 0x80  # typed (EIP-2718), as the golden receipt is
    _, _, submitter = ref.sealed_anchor(sealed, trusted, proof["batch"]["root"], canonical_address())
    extra = "0x" + "c2" + "8080"  # an RLP node that no path reaches
    for nodes in ([extra, *sealed["proof"]], [*sealed["proof"], *sealed["proof"]]):
        padded = json.loads(json.dumps(proof))
        padded["anchor"]["sealed"]["proof"] = nodes
        (work / "work.anchor.json").write_text(json.dumps(padded))
        with pytest.raises(AssertionError):
            ref.sealed_anchor(padded["anchor"]["sealed"], trusted, proof["batch"]["root"], canonical_address())
        said = _offline(work, "work", "--trusted-block", GOLDEN_BLOCK, data=tmp_path / "d")
        assert said.returncode == ExitCode.TAMPERED and "sealed.proof" in said.stderr, said.stderr
    edited = json.loads(json.dumps(proof))
    edited["anchor"]["sealed"]["proof"] = list(reversed(sealed["proof"]))
    edited["anchor"]["registry"] = "0x" + edited["anchor"]["registry"][2:].upper()
    (work / "work.anchor.json").write_text(json.dumps(edited))
    assert ref.sealed_anchor(edited["anchor"]["sealed"], trusted, proof["batch"]["root"], edited["anchor"]["registry"])
    said = _offline(work, "work", "--trusted-block", GOLDEN_BLOCK, "--expect-submitter", submitter, data=tmp_path / "d")
    assert said.returncode == ExitCode.OK, said.stderr
    other = _offline(
        work, "work", "--trusted-block", GOLDEN_BLOCK, "--expect-submitter", "0x" + "12" * 20, data=tmp_path / "d"
    )
    assert other.returncode == ExitCode.POLICY, other.stderr
    final = _offline(work, "work", "--trusted-block", GOLDEN_BLOCK, "--min-finality", "safe", data=tmp_path / "d")
    assert final.returncode == ExitCode.BAD_INPUT and "min-finality" in final.stderr, final.stderr


def test_every_one_byte_change_of_the_golden_sealed_section_is_tampered_in_the_library_never_a_crash() -> None:
    """Each byte of the golden header, receipt and trie node flipped in turn, checked by the library as
    every door checks it: each is `Tampered` (or `UnknownRegistry`), none accepted, and none escapes as
    another exception (one flipped byte of the trie node once raised the trie library's ValidationError
    through `anchor verify --offline`, a traceback)."""
    from anchor.errors import AnchorError, Tampered
    from anchor.manifest.keccak import keccak256
    from anchor.proof.file import load_proof
    from anchor.sealing.check import check_sealed_against

    proof = load_proof(VECTORS / "work.anchor.json")
    sealed = proof.anchor.sealed
    assert sealed is not None
    block_hash = "0x" + keccak256(bytes.fromhex(sealed.header[2:])).hex()
    root = bytes.fromhex(proof.batch.root[2:])
    outcomes: dict[str, int] = {}
    for field in ("header", "receipt", "proof"):
        texts = list(sealed.proof) if field == "proof" else [getattr(sealed, field)]
        for i, text in enumerate(texts):
            raw = bytes.fromhex(text[2:])
            for at in range(len(raw)):
                changed = "0x" + (raw[:at] + bytes([raw[at] ^ 1]) + raw[at + 1 :]).hex()
                value = tuple(changed if j == i else t for j, t in enumerate(texts)) if field == "proof" else changed
                anchor = proof.anchor.model_copy(update={"sealed": sealed.model_copy(update={field: value})})
                try:
                    check_sealed_against(anchor, root, block_hash, canonical_address(), "the trusted hash")
                    name = "accepted"
                except Tampered:
                    name = "tampered"
                except AnchorError as exc:
                    name = exc.code
                except Exception as exc:  # noqa: BLE001 -- what the test looks for: anything but a typed verdict
                    name = type(exc).__name__
                outcomes[name] = outcomes.get(name, 0) + 1
    assert set(outcomes) <= {"tampered", "unknown_registry"} and outcomes["tampered"] > 1000, outcomes


@pytest.mark.chain
def test_a_node_without_eth_get_proof_still_seals_and_the_seal_says_what_it_lacks(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """Not every provider serves `eth_getProof`: the seal is still made (header, receipt, trie proof),
    without the record's later state, and says so; offline it verifies against the anchoring block."""
    from tests.faults.rpc_proxy import FaultyProxy

    fresh_chain.cli("deploy", check=True)
    (tmp_path / "a.txt").write_text("a\n")
    fresh_chain.cli("stamp", str(tmp_path / "a.txt"), check=True)
    proxy = FaultyProxy(fresh_chain.node.rpc_url)
    proxy.unsupported = {"eth_getProof"}
    try:
        said = fresh_chain.cli("--rpc-url", proxy.url, "seal", str(tmp_path / "a.txt"))
    finally:
        proxy.stop()
    assert said.returncode == ExitCode.OK and "carry no record as of a later block" in said.stdout, said.stderr
    assert proxy.calls["eth_getProof"] == 1
    sealed = json.loads((tmp_path / "a.txt.anchor.json").read_text())["anchor"]
    assert "state" not in sealed["sealed"]
    from anchor.chain.node import rpc_call

    number = sealed["block_number"]
    block_hash = rpc_call(fresh_chain.node.rpc_url, "eth_getBlockByNumber", [hex(number), False])["hash"]
    fresh_chain.node.down()
    ok = _offline(tmp_path, "a.txt", "--trusted-block", f"{number}:{block_hash}", data=tmp_path / "colleague")
    assert ok.returncode == ExitCode.OK, ok.stderr
