"""Compile the registry with py-solc-x through the pinned solc, caching by input digest.

The standard-JSON input is kept next to the output: it is exactly what a source-verification service
needs to reproduce the deployed bytecode.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anchor.chain.artifact import CONTRACTS, LATEST
from anchor.chain.toolchain import build_cache, checkout, compiler_settings, project_root, solc_shim
from anchor.files import PRIVATE_FILE, atomic_write, private_dir
from anchor.record import Value


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class CompiledContract(Value):
    abi: list[dict[str, Any]]
    bytecode: bytes
    runtime: bytes
    standard_json_input: dict[str, Any]
    solc_version: str
    metadata: str | None = None
    """solc's metadata JSON of the contract (its hash ends the runtime code): what a "full match"
    source verification (Sourcify) compares; None for the shipped build outside a checkout."""

    def runtime_code_hash(self) -> bytes:
        from eth_hash.auto import keccak

        return keccak(self.runtime)


def standard_json_input() -> dict[str, Any]:
    root = checkout()
    if root is None:
        from anchor.chain.artifact import shipped_build

        source: dict[str, Any] = shipped_build()["standardJsonInput"]
        return source
    sources = {
        f"contracts/{path.name}": {"content": path.read_text()} for path in sorted((root / "contracts").glob("*.sol"))
    }
    return {"language": "Solidity", "sources": sources, "settings": compiler_settings().solc_settings()}


def shipped_registry(version: str = LATEST) -> CompiledContract:
    """The committed build: what an installed `anchor` deploys (identical to a fresh compile, tested)."""
    from anchor.chain.artifact import registry_abi, shipped_build

    build = shipped_build(version)
    return CompiledContract(
        abi=registry_abi(version),
        bytecode=bytes.fromhex(build["bytecode"]),
        runtime=bytes.fromhex(build["runtime"]),
        standard_json_input=build["standardJsonInput"],
        solc_version=build["solcVersion"],
    )


def compile_registry(cache_dir: Path | None = None, version: str = LATEST) -> CompiledContract:
    """Compile (or load from `cache_dir`, by default the user's build cache) registry `version`;
    outside a checkout, the shipped build. A cache entry is named by the SHA-256 of the compiler
    version and the whole standard-JSON input, so a changed source or setting never reads an old one;
    a cache that cannot be written only costs the compile."""
    if checkout() is None:
        return shipped_registry(version)
    source = standard_json_input()
    solc = compiler_settings().solc_version
    key = hashlib.sha256(json.dumps([solc, source], sort_keys=True).encode()).hexdigest()[:32]
    cached = (cache_dir or build_cache()) / f"registries-v2-{key}.json"
    try:
        output = json.loads(cached.read_text())
    except (OSError, ValueError):
        output = None
    if not isinstance(output, dict) or "contracts" not in output:
        import copy

        import solcx

        # the metadata too, in the same compile (outputSelection changes no byte of the code, and the
        # recorded input stays the canonical one a verifier is given)
        selecting = copy.deepcopy(source)
        for contracts in selecting["settings"]["outputSelection"].values():
            for outputs in contracts.values():
                outputs.append("metadata")
        output = solcx.compile_standard(selecting, solc_binary=solc_shim(), allow_paths=[str(project_root())])
        with contextlib.suppress(OSError):
            private_dir(cached.parent)
            atomic_write(cached, json.dumps(output).encode(), PRIVATE_FILE)
    name = CONTRACTS[version]
    artifact = output["contracts"][f"contracts/{name}.sol"][name]
    return CompiledContract(
        abi=artifact["abi"],
        bytecode=bytes.fromhex(artifact["evm"]["bytecode"]["object"]),
        runtime=bytes.fromhex(artifact["evm"]["deployedBytecode"]["object"]),
        standard_json_input=source,
        solc_version=solc,
        metadata=artifact.get("metadata"),
    )


def write_artifact(version: str) -> None:
    """Rewrite the committed artifact of `version` from a fresh compile (`make artifact`)."""
    from anchor.chain.artifact import artifact_path

    compiled = compile_registry(version=version)
    lock = json.loads((project_root() / "package-lock.json").read_text())
    anvil = lock["packages"]["node_modules/@foundry-rs/anvil"]["version"]
    artifact = {
        "abi": compiled.abi,
        "contractName": CONTRACTS[version],
        "runtimeCodeHash": "0x" + compiled.runtime_code_hash().hex(),
        "version": version,
        "build": {
            "bytecode": compiled.bytecode.hex(),
            "runtime": compiled.runtime.hex(),
            "standardJsonInput": compiled.standard_json_input,
            "solcVersion": compiled.solc_version,
            "compiler": compiler_settings().to_json(),
            "toolchain": {"@foundry-rs/anvil": anvil},
        },
    }
    artifact_path(version).write_text(json.dumps(artifact, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    for known in CONTRACTS:
        write_artifact(known)
