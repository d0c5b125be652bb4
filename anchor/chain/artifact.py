"""The registry build, committed: ABI, runtime code hash, and the whole pinned build (creation and
runtime bytecode, the standard-JSON input, the compiler settings, the toolchain pins).

One registry is known: `AnchorRegistry` 4.0.0 (roots keyed by submitter, researcher-bound and signed
lineage, write-once retraction), deployed at one CREATE2 address on every chain (anchor.chain.canonical).
Versions 1.0.0 to 3.0.0 were retired before any public deployment: only their runtime code
hashes are kept, so that a proof naming one is told so in one line instead of "unknown registry".
A registry is recognised by the hash of its runtime code, never by what a proof or a record says.

Reads never need a compiler, and an installed `anchor` (a wheel, outside any checkout) deploys this
exact build. `tests/registry/test_deployment.py` recompiles the sources with the pinned solc and fails if
anything here drifts (`make artifact` rewrites it).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

LATEST = "4.0.0"
CONTRACTS = {LATEST: "AnchorRegistry"}
"""Registry version -> contract name (and artifact file name, and source contracts/<name>.sol)."""

RETIRED = {
    "0xbd25ba409febb659e758d739c211c29bbc0c640ce8c446635ea1a0620f84c8af": "1.0.0",
    "0x689d31eedd3c7c8c5b8db21d32d1aac86312560300004f0013c85316c9c75bb4": "2.0.0",
    "0xd90cd97129d9d7eb17cd767afd2e09dd5b153d8eec2004da5d19a995eeb1805e": "3.0.0",
}
"""Runtime code hashes of the registry versions retired before any public deployment -> their version."""


def artifact_path(version: str = LATEST) -> Path:
    return Path(__file__).with_name("artifacts") / f"{CONTRACTS[version]}.json"


@cache
def _artifact(version: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(artifact_path(version).read_text())
    return data


def registry_abi(version: str = LATEST) -> list[dict[str, Any]]:
    abi: list[dict[str, Any]] = _artifact(version)["abi"]
    return abi


def runtime_code_hash(version: str = LATEST) -> str:
    """0x-prefixed keccak256 of that version's runtime bytecode."""
    value: str = _artifact(version)["runtimeCodeHash"]
    return value


def version_of(code_hash: str) -> str | None:
    """The registry version whose runtime code hashes to `code_hash`; None for anything else (a retired
    version included: `retired_version` names those)."""
    for version in CONTRACTS:
        if runtime_code_hash(version) == code_hash.lower():
            return version
    return None


def retired_version(code_hash: str) -> str | None:
    """The retired registry version with this runtime code hash, or None."""
    return RETIRED.get(code_hash.lower())


def registry_version() -> str:
    return LATEST


def shipped_build(version: str = LATEST) -> dict[str, Any]:
    """bytecode, runtime (hex), standardJsonInput, solcVersion, compiler settings, toolchain pins."""
    return _artifact(version)["build"]  # type: ignore[no-any-return]
