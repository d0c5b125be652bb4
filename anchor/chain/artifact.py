"""The registry's ABI and runtime code hash, committed so that reads never need a compiler.

`tests/test_compiler.py` recompiles the sources and fails if either drifts from this file; a verifier
refuses any address whose code does not hash to `RUNTIME_CODE_HASH`, whatever a proof file claims.
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
