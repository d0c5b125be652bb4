"""Where the pinned tools live and which compiler settings they use.

The compiler settings are defined once, in foundry/foundry.toml's [profile.default]; forge reads them
natively and this module reads the same file for py-solc-x, so both compilers produce identical
bytecode. The solc version is the npm `solc` package pinned in package-lock.json.
"""

from __future__ import annotations

import json
import os
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from anchor.errors import ToolchainMissing


@cache
def project_root() -> Path:
    """The checkout holding contracts/, foundry/ and node_modules/ (override: ANCHOR_PROJECT_ROOT)."""
    override = os.environ.get("ANCHOR_PROJECT_ROOT")
    root = Path(override) if override else Path(__file__).resolve().parents[2]
    if not (root / "foundry" / "foundry.toml").is_file():
        raise ToolchainMissing(f"{root}: not an Anchor checkout (foundry/foundry.toml missing)")
    return root


def tool(name: str) -> Path:
    """Path of an npm-delivered binary (anvil, forge, cast); raises `ToolchainMissing` if absent."""
    path = project_root() / "node_modules" / ".bin" / name
    if not path.exists():
        raise ToolchainMissing(f"{name} is not installed at {path}; run `make install`")
    return path


def solc_shim() -> Path:
    path = project_root() / "tools" / "solc"
    if not (project_root() / "node_modules" / "solc" / "solc.js").is_file():
        raise ToolchainMissing("npm solc is not installed; run `make install`")
    return path


@dataclass(frozen=True, slots=True)
class CompilerSettings:
    solc_version: str
    evm_version: str
    optimizer: bool
    optimizer_runs: int
    bytecode_hash: str

    def solc_settings(self) -> dict[str, object]:
        """The `settings` object of a solc standard-JSON input."""
        return {
            "optimizer": {"enabled": self.optimizer, "runs": self.optimizer_runs},
            "evmVersion": self.evm_version,
            "metadata": {"bytecodeHash": self.bytecode_hash},
            "outputSelection": {"*": {"*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"]}},
        }

    def to_json(self) -> dict[str, object]:
        return {
            "solc_version": self.solc_version,
            "evm_version": self.evm_version,
            "optimizer": self.optimizer,
            "optimizer_runs": self.optimizer_runs,
            "bytecode_hash": self.bytecode_hash,
        }


@cache
def compiler_settings() -> CompilerSettings:
    root = project_root()
    profile = tomllib.loads((root / "foundry" / "foundry.toml").read_text())["profile"]["default"]
    lock = json.loads((root / "package-lock.json").read_text())
    solc_version = lock["packages"]["node_modules/solc"]["version"]
    return CompilerSettings(
        solc_version=solc_version,
        evm_version=profile["evm_version"],
        optimizer=bool(profile["optimizer"]),
        optimizer_runs=int(profile["optimizer_runs"]),
        bytecode_hash=profile["bytecode_hash"],
    )
