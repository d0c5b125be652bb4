"""Compile the registry with py-solc-x through the pinned solc, caching by input digest.

The standard-JSON input is kept next to the output: it is exactly what a source-verification service
needs to reproduce the deployed bytecode.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anchor.chain.toolchain import compiler_settings, project_root, solc_shim
from anchor.files import PRIVATE_FILE, atomic_write, private_dir

REGISTRY_SOURCE = "contracts/AnchorRegistry.sol"
REGISTRY_NAME = "AnchorRegistry"


@dataclass(frozen=True, slots=True)
class CompiledContract:
    abi: list[dict[str, Any]]
    bytecode: bytes
    runtime: bytes
    standard_json_input: dict[str, Any]
    solc_version: str

    def runtime_code_hash(self) -> bytes:
        from eth_hash.auto import keccak

        return keccak(self.runtime)


def standard_json_input() -> dict[str, Any]:
    root = project_root()
    sources = {
        f"contracts/{path.name}": {"content": path.read_text()} for path in sorted((root / "contracts").glob("*.sol"))
    }
    return {"language": "Solidity", "sources": sources, "settings": compiler_settings().solc_settings()}


def compile_registry(cache_dir: Path | None = None) -> CompiledContract:
    """Compile (or load from `cache_dir`) the AnchorRegistry."""
    source = standard_json_input()
    version = compiler_settings().solc_version
    key = hashlib.sha256(json.dumps([version, source], sort_keys=True).encode()).hexdigest()[:32]
    cached = cache_dir / f"{REGISTRY_NAME}-{key}.json" if cache_dir else None
    if cached and cached.is_file():
        output = json.loads(cached.read_text())
    else:
        import solcx

        output = solcx.compile_standard(source, solc_binary=solc_shim(), allow_paths=[str(project_root())])
        if cached:
            private_dir(cached.parent)
            atomic_write(cached, json.dumps(output).encode(), PRIVATE_FILE)
    artifact = output["contracts"][REGISTRY_SOURCE][REGISTRY_NAME]
    return CompiledContract(
        abi=artifact["abi"],
        bytecode=bytes.fromhex(artifact["evm"]["bytecode"]["object"]),
        runtime=bytes.fromhex(artifact["evm"]["deployedBytecode"]["object"]),
        standard_json_input=source,
        solc_version=version,
    )
