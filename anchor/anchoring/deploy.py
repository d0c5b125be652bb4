"""`anchor deploy`: the registry put at its canonical address on the chain the settings name, and recorded.

Why one function: where the registry already is, nothing is sent (a recorded deployment whose code still
answers, or the canonical address holding it); a reset local chain or a retired version's record is
replaced by the canonical one. The command renders what this decided; it decides nothing itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from anchor.record import Value

if TYPE_CHECKING:
    from anchor.chain.deployment import Deployment
    from anchor.settings.session import Settings


@dataclass(frozen=True, eq=False, repr=False)
class Deployed(Value):
    """What `deploy` found or did, and how anyone can check it."""

    record: Deployment
    status: str
    """"deployed", "already deployed", or "already on this chain (recorded; nothing sent)"."""
    contract: str
    """The contract's name (its source is contracts/<name>.sol)."""
    derivation: dict[str, str]
    """The canonical address's CREATE2 inputs: proxy, salt, init code hash, address."""
    verify_contract: str | None
    """The `forge verify-contract` command that publishes its source on the chain's explorer (None where
    the chain has no known explorer)."""


def deploy(settings: Settings) -> Deployed:
    """Open the chain (starting the embedded local one if that is the chain), then record the registry
    that is there or deploy it with the configured key. Raises `ChainUnreachable`, `ToolchainMissing`,
    `BadInput` (no key) or `DeploymentMismatch` (the canonical address holds other code)."""
    from anchor.chain.artifact import CONTRACTS, LATEST, version_of
    from anchor.chain.canonical import PROXY, SALT, canonical_address, init_code
    from anchor.chain.compiler import compile_registry
    from anchor.chain.deployment import check_code, load_deployment
    from anchor.chain.deployment import deploy as deploy_registry
    from anchor.chain.keys import load_signer
    from anchor.chain.open import open_chain
    from anchor.chain.presets import verify_contract_command
    from anchor.chain.toolchain import compiler_settings
    from anchor.errors import DeploymentMismatch, NotDeployed
    from anchor.manifest.keccak import keccak256

    handle = open_chain(settings, start_local=True)
    existing = None
    try:
        existing = load_deployment(settings.data_dir, handle.chain_id)
        check_code(handle.rpc, existing.address, existing.code_hash)
    except (NotDeployed, DeploymentMismatch):
        existing = None  # none, a reset local chain, or a retired version's: the canonical one replaces it
    if existing is not None and existing.address == canonical_address():
        record, status = existing, "already deployed"
    else:
        signer = load_signer(handle.chain_id, settings.keystore, settings.env)
        record = deploy_registry(handle.w3, handle.chain_id, signer, compile_registry(), settings.data_dir)
        status = "deployed" if record.tx_hash else "already on this chain (recorded; nothing sent)"
    name = CONTRACTS[version_of(record.code_hash) or LATEST]
    compiler = compiler_settings()
    publish = verify_contract_command(
        record.chain_id,
        record.address,
        f"contracts/{name}.sol:{name}",
        compiler.solc_version,
        compiler.optimizer_runs,
        compiler.evm_version,
    )
    derivation = {
        "proxy": PROXY,
        "salt": "0x" + SALT.hex(),
        "init_code_hash": "0x" + keccak256(init_code()).hex(),
        "address": canonical_address(),
    }
    return Deployed(record, status, name, derivation, publish)
