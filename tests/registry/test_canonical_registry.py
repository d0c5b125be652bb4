"""one registry at one address on every chain, trusted by derivation, and retraction in
every verdict. Real anvils (two chain ids, one without the deployment proxy), real `cast`."""

from __future__ import annotations

import json
import subprocess
from datetime import datetime
from pathlib import Path

import pytest
from eth_account import Account
from eth_utils import keccak, to_checksum_address

from anchor.chain.artifact import RETIRED, shipped_build
from anchor.chain.canonical import PROXY, PROXY_DEPLOYER, PROXY_INSTALL_TX, PROXY_RUNTIME, SALT, canonical_address
from anchor.chain.compiler import shipped_registry
from anchor.chain.connection import reach, web3_for
from anchor.chain.deployment import deploy
from anchor.chain.keys import Signer
from anchor.chain.registry import Registry
from anchor.errors import ExitCode
from tests.cli import run_anchor
from tests.conftest import Chain, anvil, lookalike_registry

pytestmark = pytest.mark.chain

KEY_A = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"  # anvil's first dev account
KEY_B = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"  # its second: the stranger
REASON = "the metric was computed on the training split"


def _by_hand() -> str:
    """EIP-1014 from eth_utils' keccak, not ours: keccak(0xff ‖ proxy ‖ salt ‖ keccak(init code))[12:]."""
    init = bytes.fromhex(shipped_build()["bytecode"])
    return to_checksum_address(keccak(b"\xff" + bytes.fromhex(PROXY[2:]) + SALT + keccak(init))[12:])


def _cast_create2() -> str:
    from anchor.chain.toolchain import tool

    init = "0x" + shipped_build()["bytecode"]
    out = subprocess.run(
        [str(tool("cast")), "create2", "--deployer", PROXY, "--salt", "0x" + SALT.hex(), "--init-code", init],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.strip().split()[-1]


def _deploy_on(url: str, key: str, data: Path) -> tuple[str, str | None]:
    rpc, chain_id = reach(url)
    record = deploy(web3_for(rpc), chain_id, Signer(Account.from_key(key), "test"), shipped_registry(), data)
    return record.address, record.tx_hash


def test_two_chains_two_deployers_one_address_the_one_cast_create2_and_a_hand_computation_give(tmp_path: Path) -> None:
    with anvil(8453, 1) as base, anvil(11155111, 1, "--disable-default-create2-deployer") as bare:
        on_base, tx_base = _deploy_on(base, KEY_A, tmp_path / "a")
        # the second chain has no proxy: its published keyless install transaction is broadcast first
        rpc, _ = reach(bare)
        assert rpc.get_code(PROXY) == b""
        on_bare, tx_bare = _deploy_on(bare, KEY_B, tmp_path / "b")
        assert rpc.get_code(PROXY) == PROXY_RUNTIME
        assert Account.recover_transaction(PROXY_INSTALL_TX) == PROXY_DEPLOYER
        assert on_base == on_bare == canonical_address() == _by_hand() == to_checksum_address(_cast_create2())
        assert tx_base and tx_bare and tx_base != tx_bare
        # a second deploy where it already is sends nothing and records who is there
        again, none = _deploy_on(base, KEY_B, tmp_path / "c")
        assert (again, none) == (on_base, None)
        record = json.loads((tmp_path / "c" / "deployments" / "8453.json").read_text())
        assert record["tx_hash"] is None and record["deployer"] is None and record["block_number"] >= 1


def test_a_fresh_data_dir_verifies_with_rpc_url_alone_and_a_look_alike_elsewhere_is_not_trusted(
    deployed_chain: Chain, tmp_path: Path
) -> None:
    (tmp_path / "result.txt").write_text("accuracy 0.93\n")
    deployed_chain.cli("stamp", str(tmp_path / "result.txt"), check=True)
    fresh = {"ANCHOR_DATA_DIR": str(tmp_path / "colleague")}
    url = deployed_chain.node.rpc_url
    said = run_anchor(["verify", str(tmp_path / "result.txt"), "--rpc-url", url], fresh)
    assert said.returncode == ExitCode.OK, said.stderr
    assert canonical_address() in said.stdout and "trusted by canonical address" in said.stdout
    verdict = json.loads(run_anchor(["verify", str(tmp_path / "result.txt"), "--rpc-url", url, "--json"], fresh).stdout)
    assert verdict["registry"] == canonical_address() and verdict["registry_trusted_by"].startswith("canonical")
    # a byte-identical copy at another address (plain CREATE by a stranger), named by an edited proof
    copy, _ = lookalike_registry(url, KEY_B)
    proof_path = tmp_path / "result.txt.anchor.json"
    proof = json.loads(proof_path.read_text())
    proof["anchor"]["registry"] = copy
    edited = tmp_path / "edited.anchor.json"
    edited.write_text(json.dumps(proof))
    refused = run_anchor(["verify", str(tmp_path / "result.txt"), "--proof", str(edited), "--rpc-url", url], fresh)
    assert refused.returncode == ExitCode.UNKNOWN_REGISTRY, refused.stdout
    assert "not the canonical registry" in refused.stderr and canonical_address() in refused.stderr


def test_a_proof_on_a_retired_registry_version_says_so_in_one_line(deployed_chain: Chain, tmp_path: Path) -> None:
    (tmp_path / "old.txt").write_text("old\n")
    deployed_chain.cli("stamp", str(tmp_path / "old.txt"), check=True)
    proof_path = tmp_path / "old.txt.anchor.json"
    proof = json.loads(proof_path.read_text())
    proof["anchor"]["code_hash"] = next(h for h, v in RETIRED.items() if v == "3.0.0")
    proof_path.write_text(json.dumps(proof))
    said = deployed_chain.cli("verify", str(tmp_path / "old.txt"))
    assert said.returncode == ExitCode.UNKNOWN_REGISTRY
    first = said.stderr.splitlines()[0]
    assert "3.0.0" in first and "retired before any public deployment" in first and "stamp the files again" in first


def test_retract_then_verify_is_retracted_and_a_strangers_retraction_reverts_and_changes_nothing(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    fresh_chain.cli("deploy", check=True)
    (tmp_path / "mine.txt").write_text("mine\n")
    fresh_chain.cli("stamp", str(tmp_path / "mine.txt"), check=True)
    proof_path = tmp_path / "mine.txt.anchor.json"
    proof = json.loads(proof_path.read_text())
    root = bytes.fromhex(proof["batch"]["root"][2:])
    handle_rpc, chain_id = reach(fresh_chain.node.rpc_url)
    registry = Registry(handle_rpc, chain_id, canonical_address(), proof["anchor"]["code_hash"])
    stranger = Signer(Account.from_key(KEY_B), "stranger")
    # the stranger's own transaction, sent around our CLI's check: the registry itself refuses it
    from anchor.errors import RegistryRevert

    with pytest.raises(RegistryRevert, match="RootNotAnchored"):
        registry.retract_root(stranger, root, keccak(b"not yours"))
    [record] = registry.root_records(root)
    assert record.retracted_block == 0
    # through the CLI, with the stranger's key: refused before anything is sent
    env = {**fresh_chain.env(), "ANCHOR_PRIVATE_KEY": KEY_B}
    before = handle_rpc.request("eth_getTransactionCount", [stranger.address, "latest"])
    refused = run_anchor(["retract", str(tmp_path / "mine.txt"), "--reason", "not yours"], env)
    assert refused.returncode == ExitCode.CONFLICT and "only its submitter can retract it" in refused.stderr
    assert handle_rpc.request("eth_getTransactionCount", [stranger.address, "latest"]) == before
    assert fresh_chain.cli("verify", str(tmp_path / "mine.txt")).returncode == ExitCode.OK
    # a typo'd command gets a hint, and no reason is no retraction
    assert fresh_chain.cli("retract", str(tmp_path / "mine.txt")).returncode == ExitCode.BAD_INPUT
    done = json.loads(
        fresh_chain.cli("retract", str(tmp_path / "mine.txt"), "--reason", REASON, "--json", check=True).stdout
    )
    assert done["reason_digest"] == "0x" + keccak(REASON.encode()).hex() and done["gas_used"] <= 30_000
    kept = json.loads(proof_path.read_text())
    assert kept["annotations"]["retractions"][0]["reason"] == REASON
    assert {k: kept[k] for k in ("manifest_digest", "batch", "anchor")} == {
        k: proof[k] for k in ("manifest_digest", "batch", "anchor")
    }  # nothing else in the file changed
    said = fresh_chain.cli("verify", str(tmp_path / "mine.txt"), "--json")
    assert said.returncode == ExitCode.RETRACTED
    error = json.loads(said.stdout)["error"]
    assert error["code"] == "retracted" and error["detail"]["reason"] == REASON
    assert error["detail"]["retracted_by"] == Account.from_key(KEY_A).address  # the dev account stamped it
    assert error["detail"]["retracted_block"] > 0 and error["detail"]["reason_digest"] == done["reason_digest"]
    # an edited reason text in the file is not shown (it no longer hashes to the digest on chain)
    kept["annotations"]["retractions"][0]["reason"] = "a typo, nothing serious"
    proof_path.write_text(json.dumps(kept))
    again = json.loads(fresh_chain.cli("verify", str(tmp_path / "mine.txt"), "--json").stdout)["error"]
    assert again["code"] == "retracted" and again["detail"]["reason"] is None
    said = fresh_chain.cli("verify", str(tmp_path / "mine.txt")).stderr  # nothing known is not said as "None"
    assert "reason digest 0x" in said and "None" not in said, said
    assert fresh_chain.cli("retract", str(tmp_path / "mine.txt"), "--reason", "x").returncode == ExitCode.CONFLICT


def test_the_address_and_code_hash_are_the_same_in_the_docs_the_presets_and_the_explorer(
    deployed_chain: Chain,
) -> None:
    """Derived once (anchor.chain.canonical), said everywhere a user looks: docs/registry.md, every chain
    preset, and the explorer's home page."""
    from fastapi.testclient import TestClient

    from anchor.chain.canonical import canonical_code_hash
    from anchor.chain.presets import PRESETS
    from api.app import create_app
    from api.config import ApiConfig
    from tests.conftest import ROOT

    address, code_hash = canonical_address(), canonical_code_hash()
    doc = (ROOT / "docs" / "registry.md").read_text()
    assert f"| address | `{address}` |" in doc and f"`{code_hash}`" in doc
    assert {(p.registry, p.registry_code_hash) for p in PRESETS.values()} == {(address, code_hash)}
    with TestClient(create_app(deployed_chain.settings, ApiConfig())) as client:
        home = client.get("/explorer/")
    assert home.status_code == 200 and address in home.text and code_hash in home.text
    assert "the canonical registry, at the same address on every chain" in home.text


def test_retracting_one_result_of_a_batch_is_refused_unless_the_whole_batch_is_meant(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """A retraction is of a root, and a root anchors its whole batch: `journal submit runs/*; flush` put
    two results under one root, and `anchor retract runs/a` retracted both, silently (`verify runs/b`:
    retracted, exit 16). It is irreversible and reaches other results (a service's root: other clients'),
    so it is refused, nothing sent, unless `--whole-batch` says that is meant."""
    fresh_chain.cli("deploy", check=True)
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "metrics.json").write_text(f'{{"run": "{name}"}}')
    fresh_chain.cli("journal", "submit", str(tmp_path / "a"), str(tmp_path / "b"), check=True)
    fresh_chain.cli("journal", "flush", check=True)
    roots = {json.loads((tmp_path / f"{n}.anchor.json").read_text())["batch"]["root"] for n in ("a", "b")}
    assert len(roots) == 1  # one batch, one root
    one = fresh_chain.cli("retract", str(tmp_path / "a"), "--reason", "run a leaked its test set")
    assert one.returncode == ExitCode.BAD_INPUT, one.stdout + one.stderr
    assert "--whole-batch" in one.stderr and "other result" in one.stderr
    assert fresh_chain.cli("verify", str(tmp_path / "b")).returncode == ExitCode.OK  # nothing was sent
    # b's genuine proof planted as a's "timing record" (a bundle's only sibling may be its own): still refused
    (tmp_path / "a.timing.anchor.json").write_bytes((tmp_path / "b.anchor.json").read_bytes())
    planted = fresh_chain.cli("retract", str(tmp_path / "a"), "--reason", "run a leaked its test set")
    assert planted.returncode == ExitCode.BAD_INPUT and "--whole-batch" in planted.stderr
    (tmp_path / "a.timing.anchor.json").unlink()
    whole = fresh_chain.cli("retract", str(tmp_path / "a"), "--reason", "the batch's data leaked", "--whole-batch")
    assert whole.returncode == ExitCode.OK, whole.stderr
    assert fresh_chain.cli("verify", str(tmp_path / "b")).returncode == ExitCode.RETRACTED


def test_lookup_of_a_retracted_record_says_when_by_whom_and_why_as_verify_does(
    deployed_chain: Chain, tmp_path: Path
) -> None:
    """`anchor lookup PATH` of a retracted result printed its record as if it stood (submitter, block,
    tx) and said nothing of the retraction, where `verify` says retracted, when, by whom and why (exit 16)."""
    (tmp_path / "r.txt").write_text("a result withdrawn later")
    deployed_chain.cli("stamp", str(tmp_path / "r.txt"), check=True)
    deployed_chain.cli("retract", str(tmp_path / "r.txt"), "--reason", REASON, check=True)
    found = json.loads(deployed_chain.cli("lookup", str(tmp_path / "r.txt"), "--json", check=True).stdout)
    retracted = found["retracted"]
    assert retracted["retracted_by"] == Account.from_key(KEY_A).address and retracted["reason"] == REASON
    assert retracted["retracted_block"] > found["block_number"] and retracted["tx_hash"].startswith("0x")
    assert retracted["reason_digest"] == "0x" + keccak(REASON.encode()).hex()
    text = deployed_chain.cli("lookup", str(tmp_path / "r.txt"), check=True).stdout
    at = datetime.fromisoformat(retracted["retracted_at"]).strftime("%Y-%m-%d %H:%M:%S UTC")  # as "anchored" is
    assert f"  retracted        {at}, block {retracted['retracted_block']}" in text, text
    assert f'by {retracted["retracted_by"]}: "{REASON}"' in text, text
