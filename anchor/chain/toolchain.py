"""Where the pinned tools live and which compiler settings they use.

The compiler settings are defined once, in foundry/foundry.toml's [profile.default]; forge reads them
natively and this module reads the same file for py-solc-x, so both compilers produce identical
bytecode. The solc version is the npm `solc` package pinned in package-lock.json.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from anchor.errors import ToolchainMissing
from anchor.record import Value


@cache
def checkout() -> Path | None:
    """The source checkout holding contracts/, foundry/ and node_modules/ (override: ANCHOR_PROJECT_ROOT),
    or None for an installed package: then the committed build (anchor.chain.artifact) is used."""
    from anchor.settings.model import Environment  # a toolchain lookup, before any settings are made

    root = Environment.load().project_root or Path(__file__).resolve().parents[2]
    return root if (root / "foundry" / "foundry.toml").is_file() else None


def project_root() -> Path:
    """The checkout, or `ToolchainMissing` (forge, the solc shim and recompiling need one)."""
    root = checkout()
    if root is None:
        raise ToolchainMissing("this needs an Anchor source checkout (set ANCHOR_PROJECT_ROOT to one)")
    return root


def user_cache() -> Path:
    """Where a toolchain installed on first use lives: $XDG_CACHE_HOME/anchor/toolchain."""
    return _cache_home() / "toolchain"


def build_cache() -> Path:
    """Where compiled registries are kept, keyed by the digest of the compiler and the whole input:
    $XDG_CACHE_HOME/anchor/build. Per user, not per data dir: every new data dir used to pay the
    pinned solcjs compile again (about 7 s) for byte-identical output."""
    return _cache_home() / "build"


def _cache_home() -> Path:
    from anchor.settings.config import cache_home

    return cache_home() / "anchor"


def tool(name: str) -> Path:
    """An npm-delivered binary (anvil, forge, cast): the checkout's node_modules, else PATH, else the
    user cache, installed there with npm on first use (anvil only, pinned). Never from a source tree we
    were not installed from. Raises `ToolchainMissing` saying how to get it."""
    root = checkout()
    if root is not None and (root / "node_modules" / ".bin" / name).exists():
        return root / "node_modules" / ".bin" / name
    on_path = shutil.which(name)
    if on_path:
        return Path(on_path)
    cached = user_cache() / "node_modules" / ".bin" / name
    if cached.exists():
        return cached
    if name == "anvil":
        return _install_anvil(cached)
    raise ToolchainMissing(
        f"{name} is not installed: install Foundry (it puts {name} on PATH), or run `make install` in a checkout"
    )


def _install_anvil(target: Path) -> Path:
    from anchor.chain.artifact import shipped_build

    package = f"@foundry-rs/anvil@{shipped_build()['toolchain']['@foundry-rs/anvil']}"
    npm = shutil.which("npm")
    if npm is None:
        raise ToolchainMissing(f"anvil is not on PATH and npm is missing to install {package}: install Foundry or Node")
    sys.stderr.write(f"anchor: anvil not found on PATH; installing {package} into {user_cache()} (once)\n")
    from anchor.settings.session import child_environment

    done = subprocess.run(
        [npm, "install", "--prefix", str(user_cache()), "--no-audit", "--no-fund", "--loglevel=error", package],
        capture_output=True,
        text=True,
        env=child_environment(),  # npm runs the package's install scripts: none of our secrets
    )
    if done.returncode != 0 or not target.exists():
        raise ToolchainMissing(f"installing {package} failed: {done.stderr.strip()[-300:]}")
    return target


def solc_shim() -> Path:
    path = project_root() / "tools" / "solc"
    if not (project_root() / "node_modules" / "solc" / "solc.js").is_file():
        raise ToolchainMissing(f"npm solc is not installed in {project_root()}; run `make install` in that checkout")
    return path


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class CompilerSettings(Value):
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
    root = checkout()
    if root is None:
        from anchor.chain.artifact import shipped_build

        return CompilerSettings(**shipped_build()["compiler"])
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
