"""The browser page verifies a sealed proof offline: a block hash typed in is the whole
trust root, and the page makes no request. api/static/sealed-check.js is checked in node against the
golden sealed vector (the answer tests/reference_impl.py gives, from docs/manifest.md alone) and against
every one-byte change of the sealed section; then /verify in headless Chromium, request by request."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests import reference_impl as ref
from tests.conftest import ROOT

VECTOR = ROOT / "tests" / "vectors" / "sealed"
VENDOR = ROOT / "api" / "static" / "vendor" / "ethereumjs-rlp"


def _harness(result: str) -> str:
    """A node script that runs `result` (a JS expression of `c`, the case) over every case read from stdin,
    with sealed-check.js, hash-wasm's keccak and the vendored RLP in scope: each case's value, or the
    status of the SealedError it raised (anything else is reported as uncaught)."""
    return r"""
const fs = require("fs");
const { keccak: k256 } = require(process.env.HASH_WASM);
const sealed = require(process.env.SEALED_CHECK);
const fromHex = (h) => Uint8Array.from(Buffer.from(h, "hex"));
(async () => {
  const { RLP } = await import(process.env.RLP_URL);
  const keccak = async (bytes) => fromHex(await k256(bytes, 256));
  const out = [];
  for (const c of JSON.parse(fs.readFileSync(0, "utf8"))) {
    try { out.push(await (async () => (RESULT))()); }
    catch (e) {
      out.push({ error: e instanceof sealed.SealedError ? e.status : "uncaught " + e.name + ": " + e.message });
    }
  }
  console.log(JSON.stringify(out));
})();
""".replace("RESULT", result)


NODE = _harness("{ ok: await sealed.sealedAnchor(c.sealed, c.trusted, c.anchor, c.root, c.registry, keccak, RLP) }")


def _golden() -> tuple[dict[str, Any], str]:
    proof = json.loads((VECTOR / "work.anchor.json").read_text())
    line = next(row for row in (VECTOR / "trusted-blocks.txt").read_text().splitlines() if not row.startswith("#"))
    return proof, line.split()[2]


def _run_in_node(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return _run_in_node_script(NODE, cases)


def _run_in_node_script(script: str, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    env = {
        "HASH_WASM": str(ROOT / "node_modules" / "hash-wasm"),
        "SEALED_CHECK": str(ROOT / "api" / "static" / "sealed-check.js"),
        "RLP_URL": (VENDOR / "index.js").as_uri(),
        "PATH": "/usr/bin:/bin",
    }
    done = subprocess.run(
        ["node", "-e", script],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=300,
    )
    return list(json.loads(done.stdout))


def _case(proof: dict[str, Any], trusted: str, **changed: Any) -> dict[str, Any]:
    return {
        "sealed": changed.get("sealed", proof["anchor"]["sealed"]),
        "trusted": changed.get("trusted", trusted),
        "anchor": proof["anchor"],
        "root": changed.get("root", proof["batch"]["root"]),
        "registry": changed.get("registry", proof["anchor"]["registry"]),
    }


def _flipped(hex_text: str, at: int) -> str:
    raw = bytearray(bytes.fromhex(hex_text[2:]))
    raw[at] ^= 0x01
    return "0x" + raw.hex()


def test_the_page_check_agrees_with_the_reference_and_refuses_every_one_byte_change() -> None:
    proof, trusted = _golden()
    sealed = proof["anchor"]["sealed"]
    root, registry = proof["batch"]["root"], proof["anchor"]["registry"]
    number, timestamp, submitter = ref.sealed_anchor(sealed, trusted, root, registry)
    cases = [_case(proof, trusted)]
    where = []
    for field in ("header", "receipt"):
        for at in range(len(sealed[field]) // 2 - 1):
            cases.append(_case(proof, trusted, sealed={**sealed, field: _flipped(sealed[field], at)}))
            where.append(f"{field}[{at}]")
    for i, node in enumerate(sealed["proof"]):
        for at in range(len(node) // 2 - 1):
            nodes = list(sealed["proof"])
            nodes[i] = _flipped(node, at)
            cases.append(_case(proof, trusted, sealed={**sealed, "proof": nodes}))
            where.append(f"proof[{i}][{at}]")
    answers = _run_in_node(cases)
    assert answers[0] == {"ok": {"number": number, "timestamp": timestamp, "submitter": submitter.lower()}}
    passed = [w for w, a in zip(where, answers[1:], strict=True) if "ok" in a]
    assert passed == [], f"one-byte changes the page accepted: {passed[:10]}"
    statuses = {a["error"] for a in answers[1:]}
    assert statuses == {"tampered"}, statuses  # refused by name, never a crash of the page's own code
    assert len(where) > 1000


def test_the_page_check_refuses_another_hash_root_registry_or_index_by_name() -> None:
    proof, trusted = _golden()
    sealed = proof["anchor"]["sealed"]
    cases = {
        "valid": _case(proof, trusted),
        "another trusted hash": _case(proof, "0x" + "ab" * 32),
        "another root": _case(proof, trusted, root="0x" + "11" * 32),
        "another registry": _case(proof, trusted, registry="0x" + "22" * 20),
        "another index": _case(proof, trusted, sealed={**sealed, "index": sealed["index"] + 1}),
        "no sealed section": _case(proof, trusted, sealed=None),
        "a proof node dropped": _case(proof, trusted, sealed={**sealed, "proof": sealed["proof"][:-1]}),
        "extra and repeated nodes": _case(
            proof, trusted, sealed={**sealed, "proof": ["0xc28080", *sealed["proof"], *sealed["proof"]]}
        ),
        "the registry in upper-case hex": _case(
            proof, trusted, registry="0x" + proof["anchor"]["registry"][2:].upper()
        ),
    }
    answers = dict(zip(cases, _run_in_node(list(cases.values())), strict=True))
    assert answers == {
        "valid": answers["valid"],
        "another trusted hash": {"error": "tampered"},
        "another root": {"error": "tampered"},
        "another registry": {"error": "unknown_registry"},
        "another index": {"error": "tampered"},
        "no sealed section": {"error": "bad_input"},
        "a proof node dropped": {"error": "tampered"},
        "extra and repeated nodes": {"error": "tampered"},
        "the registry in upper-case hex": answers["valid"],
    }
    assert "ok" in answers["valid"]  # docs/manifest.md: every node on the path, once; addresses compared as bytes


def test_the_vendored_rlp_decoder_is_the_npm_release() -> None:
    release = ROOT / "node_modules" / "@ethereumjs" / "rlp"
    assert json.loads((release / "package.json").read_text())["version"] == "10.1.3"
    for name in ("index.js", "errors.js"):
        assert (VENDOR / name).read_bytes() == (release / "dist" / "esm" / name).read_bytes(), name
    assert (VENDOR / "LICENSE").read_bytes() == (release / "LICENSE").read_bytes()


@pytest.mark.chain
@pytest.mark.browser
def test_the_verify_page_checks_a_sealed_proof_offline_and_makes_no_request(tmp_path: Path) -> None:
    """The golden sealed proof and its file, picked on /verify with the trusted hash typed in: verified,
    the block's time and submitter from the sealed header and receipt, and no JSON-RPC request at all;
    a wrong hash or a flipped receipt byte is refused by name, still without a request."""
    from tests.api_server import serving_api
    from tests.cdp import chromium_page
    from tests.conftest import deployed
    from tests.explorer.test_explorer_pages import CHROMIUM_FLAGS, chromium

    proof, trusted = _golden()
    bad = copy.deepcopy(proof)
    bad["anchor"]["sealed"]["receipt"] = _flipped(bad["anchor"]["sealed"]["receipt"], 40)
    (tmp_path / "bad.anchor.json").write_text(json.dumps(bad))
    withdrawn = copy.deepcopy(proof)  # what `anchor retract` writes into the file: outside the digest
    withdrawn["annotations"]["retractions"] = [
        {"reason": "the split leaked", "block_number": 9, "chain_id": 31337, "registry": proof["anchor"]["registry"]}
    ]
    (tmp_path / "withdrawn.anchor.json").write_text(json.dumps(withdrawn))
    files = sorted(p for p in (VECTOR / "work").rglob("*") if p.is_file())
    with deployed(tmp_path / "data") as chain, serving_api(chain.env()) as url:
        seen = {}
        with chromium_page(chromium(), CHROMIUM_FLAGS) as page:
            for name, proof_path, typed in (
                ("golden", VECTOR / "work.anchor.json", trusted),
                ("with its number", VECTOR / "work.anchor.json", f"2:{trusted}"),
                ("wrong hash", VECTOR / "work.anchor.json", "0x" + "ab" * 32),
                ("flipped receipt", tmp_path / "bad.anchor.json", trusted),
                ("declares its retraction", tmp_path / "withdrawn.anchor.json", trusted),
                ("not a hash", VECTOR / "work.anchor.json", "0x1234"),
            ):
                page.goto(url + "/verify", ready="!!document.getElementById('check')")
                before = len(page.requests)
                page.set_files("#files", files)
                page.set_files("#proof", [proof_path])
                page.evaluate(f"document.getElementById('trusted').value = {json.dumps(typed)}")
                page.evaluate("document.getElementById('check').click()")
                status = page.wait_for("document.getElementById('verdict').dataset.status")
                text = page.evaluate("document.getElementById('verdict').textContent")
                made = [r for r in page.requests[before:] if r["method"] != "GET" or "/assets/" not in r["url"]]
                seen[name] = (status, text, made)
    assert seen["golden"][0] == "verified", seen["golden"]
    number, timestamp, submitter = ref.sealed_anchor(
        proof["anchor"]["sealed"], trusted, proof["batch"]["root"], proof["anchor"]["registry"]
    )
    assert f"anchored at block {number}" in seen["golden"][1] and submitter.lower() in seen["golden"][1].lower()
    assert f"trusted: that block {number} of chain 31337 is {trusted}" in seen["golden"][1]
    assert seen["with its number"][0] == "verified"
    assert seen["wrong hash"][0] == seen["flipped receipt"][0] == "tampered"
    assert seen["not a hash"][0] == "bad_input"
    assert seen["declares its retraction"][0] == "retracted", seen["declares its retraction"]
    assert "retracted by its own file (unverified)" in seen["declares its retraction"][1]
    for name, (_, _, made) in seen.items():
        assert made == [], (name, made)  # offline: not one request beyond the page's own scripts
    # parity: `anchor verify --offline` gives the same verdict on the same proofs and hashes
    from tests.cli import run_anchor

    env = {"ANCHOR_DATA_DIR": str(tmp_path / "offline"), "PATH": "/usr/bin:/bin"}
    for name, proof_path, typed in (
        ("golden", VECTOR / "work.anchor.json", trusted),
        ("wrong hash", VECTOR / "work.anchor.json", "0x" + "ab" * 32),
        ("flipped receipt", tmp_path / "bad.anchor.json", trusted),
        ("declares its retraction", tmp_path / "withdrawn.anchor.json", trusted),
    ):
        cli = run_anchor(
            [
                "verify",
                str(VECTOR / "work"),
                "--proof",
                str(proof_path),
                "--offline",
                "--trusted-block",
                f"2:{typed}",
                "--json",
            ],
            env,
        )
        said = json.loads(cli.stdout)
        assert ("verified" if said["ok"] else said["error"]["code"]) == seen[name][0], (name, said)


TRIE_NODE = _harness(
    "{ value: Buffer.from(await sealed.trieGet(fromHex(c.root), fromHex(c.key), c.nodes.map(fromHex), keccak, RLP))"
    '.toString("hex") }'
)


def test_the_page_trie_walk_agrees_with_ethereums_trie_on_branches_extensions_and_inline_nodes() -> None:
    """The golden block holds one transaction (its trie is one leaf); here a trie of 300 receipts-like
    values built by Ethereum's `trie` (branches, extensions, values short enough to be inline), each
    key's proof from `HexaryTrie.get_proof`: the page's walk returns exactly the value `trie` holds, and
    refuses a proof for another key, a proof with a node off the path added, and, for every node the walk
    reads, a proof with one of its bytes changed."""
    import random

    import rlp
    from trie import HexaryTrie

    rng = random.Random(45)
    tree = HexaryTrie({})
    values = {i: rng.randbytes(rng.choice((1, 5, 20, 40, 200))) for i in range(300)}
    for i, value in values.items():
        tree.set(rlp.encode(i), value)
    root = bytes(tree.root_hash).hex()
    cases, expected = [], []
    for i in (0, 1, 2, 15, 16, 127, 128, 129, 255, 299):
        nodes = [rlp.encode(node).hex() for node in tree.get_proof(rlp.encode(i))]
        assert (
            bytes(HexaryTrie.get_from_proof(tree.root_hash, rlp.encode(i), tree.get_proof(rlp.encode(i)))) == values[i]
        )
        cases.append({"root": root, "key": rlp.encode(i).hex(), "nodes": nodes})
        expected.append({"value": values[i].hex()})
        stray = next(
            n for n in (rlp.encode(x).hex() for x in tree.get_proof(rlp.encode((i + 150) % 300))) if n not in nodes
        )
        for extra in (stray, "80", nodes[-1]):  # a node of another path, an empty node, a node twice
            cases.append({"root": root, "key": rlp.encode(i).hex(), "nodes": [*nodes, extra]})
            expected.append("extra")
        other = (i + 1) % 300  # this key's proof, asked for another key: never its value
        cases.append({"root": root, "key": rlp.encode(other).hex(), "nodes": nodes})
        expected.append(None)
        for n, node in enumerate(nodes):
            for at in range(0, len(node) // 2, 7):
                changed = list(nodes)
                changed[n] = _flipped("0x" + node, at)[2:]
                cases.append({"root": root, "key": rlp.encode(i).hex(), "nodes": changed})
                expected.append(False)
    answers = _run_trie(cases)
    for case, want, got in zip(cases, expected, answers, strict=True):
        if want == "extra":  # refused, as anchor.sealing.mpt refuses it: a sealed proof is the path, no more
            assert got == {"error": "tampered"}, (case, got)
        elif want is None:  # another key: refused, or (when both keys share the proof's nodes) its own value
            key = rlp.decode(bytes.fromhex(case["key"]), sedes=rlp.sedes.big_endian_int)
            assert got.get("error") == "tampered" or got == {"value": values[key].hex()}, (case["key"], got)
        elif want is False:  # refused; never another value (a changed copy of a node shorter than 32 bytes,
            # which get_proof lists though the walk reads it inline from its parent, is a node off the path)
            key = rlp.decode(bytes.fromhex(case["key"]), sedes=rlp.sedes.big_endian_int)
            assert got == {"error": "tampered"} or got == {"value": values[key].hex()}, got
        else:
            assert got == want, (case["key"], got)
    refused = sum(1 for want, got in zip(expected, answers, strict=True) if want is False and "error" in got)
    assert refused > 200 and len(cases) > 300


def _run_trie(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return _run_in_node_script(TRIE_NODE, cases)


STATE_NODE = _harness(
    "{ ok: await sealed.stateRecord(c.state, c.hash, c.anchor, c.root, c.submitter, c.at, c.code, keccak, RLP) }"
)


@pytest.mark.chain
def test_the_page_reads_a_records_later_state_as_the_library_does_and_refuses_every_one_byte_change(
    fresh_chain: Any, tmp_path: Path
) -> None:
    """A sealed proof's later state (the registry's record as of a later block: that block's header and the
    `eth_getProof` account and storage proofs), read by api/static/sealed-check.js in node and by the
    library (anchor.sealing.check.check_state_against): the same record of a retracted root, and every
    one-byte change of the state refused by both."""
    from anchor.errors import Tampered
    from anchor.manifest.keccak import keccak256
    from anchor.proof.file import load_proof
    from anchor.sealing.check import check_state_against

    fresh_chain.cli("deploy", check=True)
    (tmp_path / "a.txt").write_text("a\n")
    fresh_chain.cli("stamp", str(tmp_path / "a.txt"), check=True)
    fresh_chain.cli("retract", str(tmp_path / "a.txt"), "--reason", "withdrawn", check=True)
    fresh_chain.cli("seal", str(tmp_path / "a.txt"), check=True)
    proof = load_proof(tmp_path / "a.txt.anchor.json")
    sealed = proof.anchor.sealed
    assert sealed is not None and sealed.state is not None
    root, header = bytes.fromhex(proof.batch.root[2:]), bytes.fromhex(sealed.header[2:])
    from anchor.sealing.check import check_sealed_against

    seen = check_sealed_against(proof.anchor, root, "0x" + keccak256(header).hex(), proof.anchor.registry, "h")
    later = "0x" + keccak256(bytes.fromhex(sealed.state.header[2:])).hex()

    def case(state: dict[str, Any]) -> dict[str, Any]:
        return {
            "state": state,
            "hash": later,
            "anchor": proof.anchor.model_dump(),
            "root": proof.batch.root,
            "submitter": seen.submitter,
            "at": seen.timestamp,
            "code": proof.anchor.code_hash,
        }

    valid = sealed.state.model_dump()
    cases, where = [case(valid)], []
    for field in ("header", "account_proof", "storage_proof"):
        texts = [valid[field]] if field == "header" else list(valid[field])
        for i, text in enumerate(texts):
            for at in range(len(text) // 2 - 1):
                changed = _flipped(text, at)
                state = (
                    {**valid, field: changed}
                    if field == "header"
                    else {**valid, field: [changed if j == i else t for j, t in enumerate(texts)]}
                )
                cases.append(case(state))
                where.append((field, i, at))
    answers = _run_in_node_script(STATE_NODE, cases)
    held = check_state_against(proof.anchor, root, seen.submitter, seen.timestamp, later, proof.anchor.code_hash, "h")
    assert held.retracted_block > proof.anchor.block_number
    assert answers[0] == {
        "ok": {"number": held.block_number, "retractedBlock": held.retracted_block, "retractedAt": held.retracted_at}
    }
    assert [w for w, a in zip(where, answers[1:], strict=True) if "ok" in a] == []
    assert {a["error"] for a in answers[1:]} == {"tampered"}
    from anchor.proof.file import SealedState

    for one in cases[1:]:
        edited = proof.anchor.model_copy(
            update={
                "sealed": sealed.model_copy(
                    update={
                        "state": SealedState(
                            **{k: tuple(v) if isinstance(v, list) else v for k, v in one["state"].items()}
                        )
                    }
                )
            }
        )
        with pytest.raises(Tampered):
            check_state_against(edited, root, seen.submitter, seen.timestamp, later, proof.anchor.code_hash, "h")
    assert len(where) > 1000
