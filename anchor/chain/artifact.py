"""The registry's build, committed: ABI, runtime code hash, and the whole pinned build (creation and
runtime bytecode, the standard-JSON input, the compiler settings, the toolchain pins).

Reads never need a compiler, and an installed `anchor` (a wheel, outside any checkout) deploys this
exact build. `tests/test_deployment.py` recompiles the sources with the pinned solc and fails if
anything here drifts (`make artifact` rewrites it); a verifier refuses any address whose code does not
hash to `runtime_code_hash()`, whatever a proof file claims.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

_PATH = Path(__file__).with_name("artifacts") / "AnchorRegistry.json"


@cache
def _artifact() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_PATH.read_text())
    return data


def registry_abi() -> list[dict[str, Any]]:
    abi: list[dict[str, Any]] = _artifact()["abi"]
    return abi


def runtime_code_hash() -> str:
    """0x-prefixed keccak256 of the AnchorRegistry runtime bytecode this package speaks to."""
    value: str = _artifact()["runtimeCodeHash"]
    return value


def registry_version() -> str:
    value: str = _artifact()["version"]
    return value


def shipped_build() -> dict[str, Any]:
    """bytecode, runtime (hex), standardJsonInput, solcVersion, compiler settings, toolchain pins."""
    return _artifact()["build"]  # type: ignore[no-any-return]
