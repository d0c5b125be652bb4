"""Deployment: one compiler for forge and py-solc-x, a complete record, and refusal of foreign code."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from eth_hash.auto import keccak

from anchor.chain.artifact import CONTRACTS, registry_abi, runtime_code_hash, version_of
from anchor.chain.deployment import load_deployment, record_path
from anchor.chain.node import rpc_call
from anchor.chain.toolchain import compiler_settings, tool
from anchor.errors import ExitCode
from tests.conftest import ROOT, Chain


@pytest.mark.parametrize("version", list(CONTRACTS))
def test_fresh_compile_matches_the_committed_abi_and_runtime_code_hash(fresh_compile: Any, version: str) -> None:
    compiled = fresh_compile(version)
    assert compiled.abi == registry_abi(version)
    assert "0x" + compiled.runtime_code_hash().hex() == runtime_code_hash(version)
    assert version_of(runtime_code_hash(version)) == version


@pytest.mark.parametrize("version", list(CONTRACTS))
def test_the_shipped_build_is_a_fresh_compile_byte_for_byte(fresh_compile: Any, version: str) -> None:
    """What an installed `anchor` deploys without a compiler is what the pinned solc builds here; v1's
    build is kept, unchanged, so that v1 deployments stay recognisable by their code hash."""
    from anchor.chain.artifact import shipped_build
    from anchor.chain.compiler import shipped_registry

    compiled, shipped = fresh_compile(version), shipped_registry(version)
    assert (shipped.bytecode, shipped.runtime, shipped.abi) == (compiled.bytecode, compiled.runtime, compiled.abi)
    assert shipped.standard_json_input == compiled.standard_json_input
    assert shipped_build(version)["compiler"] == compiler_settings().to_json()


@pytest.mark.parametrize("version", list(CONTRACTS))
def test_forge_and_py_solc_x_produce_identical_runtime_bytecode(fresh_compile: Any, version: str) -> None:
    name = CONTRACTS[version]
    out = subprocess.run(
        [str(tool("forge")), "inspect", f"contracts/{name}.sol:{name}", "deployedBytecode"],
        cwd=ROOT / "foundry",
        capture_output=True,
        text=True,
        check=True,
    )
    forge_runtime = bytes.fromhex(out.stdout.strip().removeprefix("0x"))
    assert forge_runtime == fresh_compile(version).runtime


def test_deployment_record_names_chain_address_code_tx_block_and_compiler(deployed_chain: Chain) -> None:
    record = load_deployment(deployed_chain.data_dir, 31337)
    code = bytes.fromhex(str(rpc_call(deployed_chain.node.rpc_url, "eth_getCode", [record.address, "latest"]))[2:])
    assert "0x" + keccak(code).hex() == record.code_hash == runtime_code_hash()
    receipt = rpc_call(deployed_chain.node.rpc_url, "eth_getTransactionReceipt", [record.tx_hash])
    assert isinstance(receipt, dict) and int(receipt["blockNumber"], 16) == record.block_number
    from anchor.chain.canonical import PROXY, canonical_address

    # a call to the deterministic deployment proxy, which CREATE2s the registry at its canonical address
    assert receipt["to"].lower() == PROXY.lower() and record.address == canonical_address()
    assert record.compiler == compiler_settings().to_json()
    assert record.compiler["evm_version"] == "cancun" and record.compiler["optimizer_runs"] == 200


def test_second_deploy_reuses_the_recorded_registry(deployed_chain: Chain) -> None:
    before = load_deployment(deployed_chain.data_dir, 31337)
    result = deployed_chain.cli("--json", "deploy", check=True)
    assert json.loads(result.stdout)["status"] == "already deployed"
    assert load_deployment(deployed_chain.data_dir, 31337) == before


def test_verify_refuses_when_other_code_sits_at_the_recorded_address(fresh_chain: Chain, bundle: Path) -> None:
    fresh_chain.cli("deploy", check=True)
    fresh_chain.cli("anchor", str(bundle), check=True)
    address = load_deployment(fresh_chain.data_dir, 31337).address
    # a contract that answers `true` to everything: exactly what a forged registry would do
    rpc_call(fresh_chain.node.rpc_url, "anvil_setCode", [address, "0x600160005260206000f3"])
    result = fresh_chain.cli("verify", str(bundle))
    assert result.returncode == ExitCode.DEPLOYMENT_MISMATCH, result.stderr
    assert "refusing to answer" in result.stderr and address in result.stderr


def test_a_wrong_recorded_code_hash_is_refused_where_the_record_is_read(fresh_chain: Chain, bundle: Path) -> None:
    """The record is the operator's file: a read that goes through it (`lookup`) refuses a code hash that
    is no registry's. `verify` of a proof on the canonical registry never reads it (trust by derivation)."""
    fresh_chain.cli("deploy", check=True)
    fresh_chain.cli("anchor", str(bundle), check=True)
    path = record_path(fresh_chain.data_dir, 31337)
    record = json.loads(path.read_text())
    record["code_hash"] = "0x" + "11" * 32
    path.write_text(json.dumps(record))
    digest = json.loads(fresh_chain.cli("hash", str(bundle), "--json", check=True).stdout)["manifest_digest"]
    result = fresh_chain.cli("lookup", digest)
    assert result.returncode == ExitCode.DEPLOYMENT_MISMATCH, result.stderr
    assert "recorded code hash" in result.stderr
    assert fresh_chain.cli("verify", str(bundle)).returncode == ExitCode.OK


def test_forge_script_deploys_the_same_runtime_as_the_python_deployer(fresh_chain: Chain) -> None:
    from anchor.chain.keys import _ANVIL_DEV_KEY

    subprocess.run(
        [
            str(tool("forge")),
            "script",
            "script/Deploy.s.sol",
            "--rpc-url",
            fresh_chain.node.rpc_url,
            "--private-key",
            _ANVIL_DEV_KEY,
            "--broadcast",
        ],
        cwd=ROOT / "foundry",
        capture_output=True,
        text=True,
        check=True,
    )
    from anchor.chain.canonical import canonical_address

    address = canonical_address()  # `new AnchorRegistry{salt: 0}()` goes through the CREATE2 proxy
    code = bytes.fromhex(str(rpc_call(fresh_chain.node.rpc_url, "eth_getCode", [address, "latest"]))[2:])
    assert "0x" + keccak(code).hex() == runtime_code_hash()


def _cbor_tail(runtime: bytes) -> bytes:
    """The CBOR map solc appends to the runtime; its length is the last two bytes (the Solidity docs,
    "Encoding of the Metadata Hash in the Bytecode")."""
    length = int.from_bytes(runtime[-2:], "big")
    return runtime[-2 - length : -2]


def test_the_recorded_source_recompiles_to_the_deployed_runtime_byte_for_byte(fresh_chain: Chain) -> None:
    """The deploy records the exact standard-JSON input and solc's metadata; recompiling the recorded
    input gives the code on chain byte for byte, its CBOR tail included, and the metadata's source hashes
    are those of the recorded sources. The registry is compiled with `bytecodeHash = "none"` (so that
    forge and the Python compile agree), so that tail names the compiler and no metadata hash: Sourcify
    calls this a match, not a "full match" (docs/deploy notes in docs/attestations.md)."""
    import solcx

    from anchor.chain.deployment import load_source
    from anchor.chain.toolchain import solc_shim

    fresh_chain.cli("deploy", check=True)
    record = load_deployment(fresh_chain.data_dir, 31337)
    kept = load_source(fresh_chain.data_dir, 31337)
    assert kept is not None and kept["address"] == record.address and kept["metadata"]
    output = solcx.compile_standard(kept["standard_json_input"], solc_binary=solc_shim())
    source, name = kept["contract"].split(":")
    runtime = bytes.fromhex(output["contracts"][source][name]["evm"]["deployedBytecode"]["object"])
    on_chain = bytes.fromhex(str(rpc_call(fresh_chain.node.rpc_url, "eth_getCode", [record.address, "latest"]))[2:])
    assert runtime == on_chain
    metadata = json.loads(kept["metadata"])
    version = [int(part) for part in metadata["compiler"]["version"].split("+")[0].split(".")]
    assert _cbor_tail(on_chain) == b"\xa1\x64solc\x43" + bytes(version)  # {"solc": <its version>} and nothing else
    assert metadata["settings"]["metadata"]["bytecodeHash"] == "none"
    for path, entry in metadata["sources"].items():
        content = kept["standard_json_input"]["sources"][path]["content"].encode("utf-8")
        assert entry["keccak256"] == "0x" + keccak(content).hex()
    assert metadata["settings"]["compilationTarget"] == {source: name}
