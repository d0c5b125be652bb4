"""Deploy the registry at its canonical address and keep a record of it; refuse any address whose code
is not the registry.

The registry goes through the deterministic deployment proxy (anchor.chain.canonical), so it is at the
same address on every chain whoever deploys it, and a chain where it already is needs no transaction:
`deploy` records it and sends nothing. The record (data dir `deployments/<chain_id>.json`) names the
chain, address, runtime code hash, transaction, block and compiler settings, enough to find and
re-verify the deployment later. Beside it, `deployments/<chain_id>.source.json` keeps the exact
standard-JSON input and solc's metadata of what was deployed: a source verifier (Sourcify, `forge
verify-contract`, an explorer) recompiles them and gets the deployed runtime byte for byte, whatever
the checkout says later.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anchor.chain.artifact import registry_version, version_of
from anchor.chain.node import LOCAL_CHAIN_ID
from anchor.errors import BadInput, ChainUnreachable, DeploymentMismatch, NotDeployed
from anchor.files import atomic_write, private_dir
from anchor.layout import DataDir
from anchor.record import Record, RecordError

if TYPE_CHECKING:
    from web3 import Web3

    from anchor.chain.compiler import CompiledContract
    from anchor.chain.keys import Signer
    from anchor.chain.rpc import Rpc


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Deployment(Record):
    chain_id: int
    address: str
    code_hash: str
    tx_hash: str | None
    """The deploying transaction; None when the registry was already there (someone else deployed it)."""
    block_number: int
    """The first block with the registry's code (0 when the node cannot say): no event is older."""
    deployer: str | None
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

    records = sorted(p for p in DataDir(data_dir).deployments.glob("*.json") if (p.stem.isascii() and p.stem.isdigit()))
    if len(records) != 1:
        raise BadInput(
            f"{DataDir(data_dir).deployments}: {len(records)} deployment records; exactly one is rendered"
            " (hint: `anchor deploy` on the target chain first, or ANCHOR_DATA_DIR of that deployment)",
            detail={"field": "deployment"},
        )
    return load_deployment(data_dir, int(records[0].stem))


def code_hash_at(rpc: Rpc, address: str) -> str | None:
    """0x keccak256 of the code at `address` (one eth_getCode, retried while throttled); None: no code."""
    from anchor.manifest.keccak import keccak256

    code = rpc.get_code(address)
    return "0x" + keccak256(code).hex() if code else None


def check_code(rpc: Rpc, address: str, recorded_hash: str) -> None:
    """Refuse unless the recorded hash is the registry's and the code at `address` hashes to it.
    Raises `DeploymentMismatch` naming the address and both hashes."""
    expected = recorded_hash.lower()
    if version_of(expected) is None:
        raise DeploymentMismatch(
            "the recorded code hash is no AnchorRegistry version this anchor knows; refusing to answer",
            detail={"address": address, "recorded": recorded_hash},
        )
    actual = code_hash_at(rpc, address)
    if actual != expected:
        reason = "no code (was the chain reset?)" if actual is None else "different code"
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
    """Put the registry at its canonical address (installing the deployment proxy first on a chain without
    it), check the code there, and write the record atomically. Where the registry already is, nothing
    is sent: the record says so (no transaction, no deployer of ours)."""
    from anchor.chain.canonical import PROXY, SALT, canonical_address, create2_address
    from anchor.chain.connection import rpc_of

    rpc = rpc_of(w3)
    expected = "0x" + compiled.runtime_code_hash().hex()
    address = create2_address(PROXY, SALT, compiled.bytecode)
    if address != canonical_address():
        raise DeploymentMismatch(
            f"this build's init code would deploy at {address}, not the canonical {canonical_address()}: the"
            " committed artifact and the sources disagree (hint: `make artifact`, then commit)",
            detail={"address": address, "canonical": canonical_address()},
        )
    tx_hash: str | None = None
    deployer: str | None = None
    if code_hash_at(rpc, address) is None:
        _ensure_proxy(w3, chain_id, signer)
        receipt = _send_to_proxy(w3, chain_id, signer, SALT + compiled.bytecode)
        tx_hash, deployer = "0x" + bytes(receipt["transactionHash"]).hex(), signer.address
        block_number = int(receipt["blockNumber"])
        check_code(rpc, address, expected)
    else:
        check_code(rpc, address, expected)  # raises when something else is at the canonical address
        block_number = deployment_block(rpc, address, int(rpc.block_number()))
    from anchor.chain.toolchain import compiler_settings

    deployment = Deployment(
        chain_id=chain_id,
        address=address,
        code_hash=expected,
        tx_hash=tx_hash,
        block_number=block_number,
        deployer=deployer,
        registry_version=version_of(expected) or registry_version(),
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


def _ensure_proxy(w3: Web3, chain_id: int, signer: Signer) -> None:
    """Install the deterministic deployment proxy where it is missing: fund its keyless sender with what
    the install costs, then broadcast the published install transaction (anyone may)."""
    from anchor.chain.canonical import PROXY, PROXY_DEPLOYER, PROXY_INSTALL_COST, PROXY_INSTALL_TX, PROXY_RUNTIME
    from anchor.chain.connection import rpc_of

    rpc = rpc_of(w3)
    code = rpc.get_code(PROXY)
    if code == PROXY_RUNTIME:
        return
    if code:
        raise DeploymentMismatch(
            f"{PROXY} holds code that is not the deterministic deployment proxy; refusing to deploy through it",
            detail={"address": PROXY},
        )
    import logging

    log = logging.getLogger("anchor.progress")
    log.info(f"this chain has no deterministic deployment proxy: installing it at {PROXY} (its keyless transaction)")
    owed = PROXY_INSTALL_COST - int(w3.eth.get_balance(w3.to_checksum_address(PROXY_DEPLOYER)))
    if owed > 0:
        _send_to_proxy(w3, chain_id, signer, b"", to=PROXY_DEPLOYER, value=owed)
    from web3.exceptions import Web3RPCError

    try:
        tx_hash = w3.eth.send_raw_transaction(PROXY_INSTALL_TX)
    except Web3RPCError as exc:
        raise DeploymentMismatch(
            f"the node refused the proxy's install transaction ({exc}); a node that accepts only EIP-155"
            " transactions needs it sent elsewhere (hint: anvil and most public RPCs accept it)",
            detail={"address": PROXY},
        ) from None
    w3.eth.wait_for_transaction_receipt(tx_hash, timeout=120, poll_latency=0.05)
    if rpc.get_code(PROXY) != PROXY_RUNTIME:
        raise DeploymentMismatch(f"the proxy's install transaction left no proxy at {PROXY}", detail={"address": PROXY})


class _PlainCall:
    """A transaction that is no ABI call (the proxy takes raw calldata), shaped as `send` builds one."""

    def __init__(self, w3: Web3, to: str, data: bytes, value: int) -> None:
        self.w3, self.to, self.data, self.value = w3, to, data, value

    def build_transaction(self, tx: dict[str, Any]) -> dict[str, Any]:
        from anchor.chain.connection import rpc_of
        from anchor.chain.transactions import fee_quote

        built = {**tx, "to": self.w3.to_checksum_address(self.to), "data": "0x" + self.data.hex(), "value": self.value}
        built["gas"] = int(self.w3.eth.estimate_gas(built)) * 12 // 10  # type: ignore[arg-type]
        built["maxFeePerGas"], built["maxPriorityFeePerGas"] = fee_quote(rpc_of(self.w3))
        return built


def _send_to_proxy(
    w3: Web3, chain_id: int, signer: Signer, data: bytes, *, to: str | None = None, value: int = 0
) -> dict[str, Any]:
    from anchor.chain.canonical import PROXY
    from anchor.chain.transactions import send

    return send(w3, chain_id, signer, _PlainCall(w3, to or PROXY, data, value))


def deployment_block(rpc: Rpc, address: str, head: int, progress: Callable[[str], None] | None = None) -> int:
    """The first block at which `address` holds its code, by bisection over historical eth_getCode
    (about 25 calls at any height). An endpoint without past state (a pruned node, an anvil started
    from a state file) cannot answer: then block 0, which is always correct (no event is older than the
    contract), only slower; `--from-block` skips the walk."""

    low, high = 0, head
    try:
        while low < high:
            mid = (low + high) // 2
            code = rpc.get_code(address, mid)
            if code:
                high = mid
            else:
                low = mid + 1
    except Exception as exc:
        if isinstance(exc, ChainUnreachable):  # the endpoint is down: not a question of past state
            raise
        if progress:
            progress(
                "the endpoint keeps no past state, so the deployment block is unknown: indexing from"
                " block 0 (pass --from-block N to start at the deployment)"
            )
        return 0
    return low


def source_path(data_dir: Path, chain_id: int) -> Path:
    return DataDir(data_dir).deployment_source(chain_id)


def load_source(data_dir: Path, chain_id: int) -> dict[str, Any] | None:
    """The source material recorded at deployment, or None (a deployment recorded before it was kept)."""
    try:
        data: dict[str, Any] = json.loads(source_path(data_dir, chain_id).read_text())
    except (OSError, ValueError):
        return None
    return data
