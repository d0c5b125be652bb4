"""The registry builds, committed: ABI, runtime code hash, and the whole pinned build (creation and
runtime bytecode, the standard-JSON input, the compiler settings, the toolchain pins), per version.

Three versions are known. v3 (`AnchorRegistryV3`: v2's lineage, and batch roots keyed by submitter, so
nobody can squat another's root) is what `anchor deploy` deploys; v2 (`AnchorRegistryV2`,
researcher-bound lineage, signed records) and v1 (`AnchorRegistry`) are kept so that every earlier
deployment stays verifiable:
a registry is recognised by the hash of its runtime code, never by what a proof or a record says.

Reads never need a compiler, and an installed `anchor` (a wheel, outside any checkout) deploys this
exact build. `tests/test_deployment.py` recompiles the sources with the pinned solc and fails if
anything here drifts (`make artifact` rewrites it).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

LATEST = "3.0.0"
CONTRACTS = {"1.0.0": "AnchorRegistry", "2.0.0": "AnchorRegistryV2", "3.0.0": "AnchorRegistryV3"}
"""Registry version -> contract name (and artifact file name, and source contracts/<name>.sol)."""


def roots_by_submitter(version: str | None) -> bool:
    """Whether that registry version keys a batch root by (submitter, root): v3 on. On v1 and v2 the root
    alone is the key, and whoever anchored it first holds it."""
    return version not in (None, "", "1.0.0", "2.0.0")


def artifact_path(version: str) -> Path:
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
    """The registry version whose runtime code hashes to `code_hash`; None for anything else."""
    for version in CONTRACTS:
        if runtime_code_hash(version) == code_hash.lower():
            return version
    return None


def registry_version() -> str:
    return LATEST


def shipped_build(version: str = LATEST) -> dict[str, Any]:
    """bytecode, runtime (hex), standardJsonInput, solcVersion, compiler settings, toolchain pins."""
    return _artifact(version)["build"]  # type: ignore[no-any-return]
