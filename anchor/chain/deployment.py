"""Deploy the registry and keep a record of it; refuse any address whose code is not that record.

The record (data dir `deployments/<chain_id>.json`) names the chain, address, runtime code hash,
transaction, block and compiler settings, enough to find and re-verify the deployment later. Beside it,
`deployments/<chain_id>.source.json` keeps the exact standard-JSON input and solc's metadata of what
was deployed: a source verifier (Sourcify, `forge verify-contract`, an explorer) recompiles them and
gets the deployed runtime byte for byte, metadata hash included, whatever the checkout says later.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anchor.chain.artifact import registry_version, version_of
from anchor.chain.node import LOCAL_CHAIN_ID
from anchor.errors import BadInput, DeploymentMismatch, NotDeployed
from anchor.files import atomic_write, private_dir
from anchor.layout import DataDir
from anchor.record import Record, RecordError

if TYPE_CHECKING:
    from web3 import Web3

    from anchor.chain.compiler import CompiledContract
    from anchor.chain.keys import Signer
    from anchor.chain.rpc import Rpc


@dataclasses.dataclass(frozen=True, kw_only=True)
class Deployment(Record):
    chain_id: int
    address: str
    code_hash: str
    tx_hash: str
    block_number: int
    deployer: str
    registry_version: str
    compiler: dict[str, Any]


def record_path(data_dir: Path, chain_id: int) -> Path:
    return DataDir(data_dir).deployment(chain_id)


def load_deployment(data_dir: Path, chain_id: int) -> Deployment:
    path = record_path(data_dir, chain_id)
    try:
        return Deployment.model_validate_json(path.read_text())
    except FileNotFoundError:
        raise NotDeployed(
            f"no registry deployment recorded for chain {chain_id}; run `anchor deploy`",
            detail={"record": str(path)},
        ) from None
    except (RecordError, ValueError) as exc:  # json.JSONDecodeError is a ValueError too
        raise BadInput(f"{path}: corrupt deployment record ({exc})", detail={"file": str(path)}) from None


def only_deployment(data_dir: Path) -> Deployment:
    """The one deployment record of `data_dir`: what a rendered cluster object carries, so that every
    pod checks the same code hash. `BadInput` when there is none or more than one."""
    from anchor.errors import BadInput

    records = sorted(p for p in DataDir(data_dir).deployments.glob("*.json") if p.stem.isdigit())
    if len(records) != 1:
        raise BadInput(
            f"{DataDir(data_dir).deployments}: {len(records)} deployment records; exactly one is rendered"
            " (hint: `anchor deploy` on the target chain first, or ANCHOR_DATA_DIR of that deployment)",
            detail={"field": "deployment"},
        )
    return load_deployment(data_dir, int(records[0].stem))


def check_code(rpc: Rpc, address: str, recorded_hash: str) -> None:
    """Refuse unless the recorded hash is a registry version we know (v1 or v2) and the code at
    `address` hashes to it. Raises `DeploymentMismatch` naming the address and both hashes.
    """
    from anchor.chain.logs import with_backoff
    from anchor.manifest.keccak import keccak256

    expected = recorded_hash.lower()
    if version_of(expected) is None:
        raise DeploymentMismatch(
            "the recorded code hash is no AnchorRegistry version this anchor knows; refusing to answer",
            detail={"address": address, "recorded": recorded_hash},
        )
    code = with_backoff(lambda: rpc.get_code(address), "eth_getCode")
    actual = "0x" + keccak256(code).hex()
    if actual != expected:
        reason = "no code (was the chain reset?)" if not code else "different code"
        local = rpc.chain_id() == LOCAL_CHAIN_ID
        hint = (
            "; a proof made on a local development chain can only be checked on the machine that holds that"
            " chain: anchor on a shared chain (--rpc-url) for others to verify"
            if local
            else ""
        )
        raise DeploymentMismatch(
            f"{address} holds {reason}, not the recorded registry; refusing to answer{hint}",
            detail={"address": address, "on_chain": actual, "expected": expected},
        )


def deploy(w3: Web3, chain_id: int, signer: Signer, compiled: CompiledContract, data_dir: Path) -> Deployment:
    """Deploy, wait for the receipt, check the code, and write the record atomically."""
    from anchor.chain.connection import rpc_of
    from anchor.chain.transactions import send

    contract = w3.eth.contract(abi=compiled.abi, bytecode=compiled.bytecode)
    receipt = send(w3, chain_id, signer, contract.constructor())
    address = receipt["contractAddress"]
    check_code(rpc_of(w3), address, "0x" + compiled.runtime_code_hash().hex())
    from anchor.chain.toolchain import compiler_settings

    deployment = Deployment(
        chain_id=chain_id,
        address=address,
        code_hash="0x" + compiled.runtime_code_hash().hex(),
        tx_hash="0x" + bytes(receipt["transactionHash"]).hex(),
        block_number=int(receipt["blockNumber"]),
        deployer=signer.address,
        registry_version=version_of("0x" + compiled.runtime_code_hash().hex()) or registry_version(),
        compiler=compiler_settings().to_json(),
    )
    path = record_path(data_dir, chain_id)
    private_dir(path.parent)
    from anchor.chain.artifact import CONTRACTS

    name = CONTRACTS.get(deployment.registry_version)
    source = {
        "contract": None if name is None else f"contracts/{name}.sol:{name}",
        "solc_version": compiled.solc_version,
        "standard_json_input": compiled.standard_json_input,
        "metadata": compiled.metadata,
        "address": address,
        "chain_id": chain_id,
    }
    atomic_write(source_path(data_dir, chain_id), (json.dumps(source, indent=1, sort_keys=True) + "\n").encode())
    atomic_write(path, (json.dumps(deployment.model_dump(), indent=2, sort_keys=True) + "\n").encode())
    return deployment


def source_path(data_dir: Path, chain_id: int) -> Path:
    return DataDir(data_dir).deployment_source(chain_id)


def load_source(data_dir: Path, chain_id: int) -> dict[str, Any] | None:
    """The source material recorded at deployment, or None (a deployment recorded before it was kept)."""
    try:
        data: dict[str, Any] = json.loads(source_path(data_dir, chain_id).read_text())
    except (OSError, ValueError):
        return None
    return data
