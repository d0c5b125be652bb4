"""The registry is immutable and admin-free: checked in the ABI, the sources and the bytecode itself."""

from __future__ import annotations

import re
from typing import Any

import pytest

from anchor.chain.artifact import CONTRACTS, registry_abi
from tests.conftest import ROOT

FORBIDDEN_OPCODES = {0xF4: "DELEGATECALL", 0xFF: "SELFDESTRUCT", 0xF2: "CALLCODE", 0xF1: "CALL", 0xF0: "CREATE"}


def _opcodes(code: bytes) -> list[int]:
    """Opcodes of `code`, skipping PUSH immediates and the trailing CBOR metadata."""
    code = code[: len(code) - 2 - int.from_bytes(code[-2:], "big")]
    ops, i = [], 0
    while i < len(code):
        op = code[i]
        ops.append(op)
        i += 1 + (op - 0x5F if 0x60 <= op <= 0x7F else 0)
    return ops


@pytest.mark.parametrize("version", list(CONTRACTS))
def test_runtime_bytecode_has_no_delegatecall_selfdestruct_or_external_call(fresh_compile: Any, version: str) -> None:
    """(v2's ecrecover is a STATICCALL to the precompile at 0x01: it can change no state anywhere.)"""
    ops = set(_opcodes(fresh_compile(version).runtime))
    assert not {FORBIDDEN_OPCODES[op] for op in ops & FORBIDDEN_OPCODES.keys()}


@pytest.mark.parametrize(
    ("version", "writers"),
    [
        ("1.0.0", {"anchor", "anchorRoot"}),
        ("2.0.0", {"anchor", "anchorBySig", "anchorRoot"}),
        ("3.0.0", {"anchor", "anchorBySig", "anchorRoot"}),
    ],  # fmt: skip
)
def test_the_only_state_changing_functions_are_the_write_once_anchors(version: str, writers: set[str]) -> None:
    abi = registry_abi(version)
    assert {f["name"] for f in abi if f["type"] == "function" and f["stateMutability"] == "nonpayable"} == writers
    assert not [f for f in abi if f["type"] in ("constructor", "fallback", "receive")]


@pytest.mark.parametrize("name", ["AnchorRegistryV2", "AnchorRegistryV3"])
def test_v2_and_v3_runtime_code_is_the_same_at_every_address_and_chain(name: str) -> None:
    """No immutables: readers recognise a registry by the hash of its code, so that hash must not
    depend on where or on which chain it was deployed."""
    lines = (ROOT / "contracts" / f"{name}.sol").read_text().splitlines()
    code = [line for line in lines if not line.strip().startswith("//")]
    assert not [line for line in code if re.search(r"\bimmutable\b", line)]


def test_sources_name_no_owner_admin_upgrade_pause_or_selfdestruct() -> None:
    pattern = re.compile(r"\b(owner|admin|upgrade\w*|pause\w*|selfdestruct|delegatecall|proxy|setter)\b", re.I)
    for source in (ROOT / "contracts").glob("*.sol"):
        code = "\n".join(
            line for line in source.read_text().splitlines() if not line.strip().startswith(("//", "*", "/*"))
        )
        assert not pattern.findall(code), source.name
