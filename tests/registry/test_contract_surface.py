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
    """(ecrecover is a STATICCALL to the precompile at 0x01: it can change no state anywhere.)"""
    ops = set(_opcodes(fresh_compile(version).runtime))
    assert not {FORBIDDEN_OPCODES[op] for op in ops & FORBIDDEN_OPCODES.keys()}


WRITERS = {"anchor", "anchorBySig", "anchorRoot", "retract", "retractLineage", "retractLineageBySig"}
"""The write-once anchors and their write-once retractions: nothing else changes state."""


def test_the_only_state_changing_functions_are_the_write_once_anchors_and_retractions() -> None:
    abi = registry_abi()
    assert {f["name"] for f in abi if f["type"] == "function" and f["stateMutability"] == "nonpayable"} == WRITERS
    assert not [f for f in abi if f["type"] in ("constructor", "fallback", "receive")]


def test_one_registry_contract_in_contracts_and_its_runtime_code_is_the_same_at_every_address_and_chain() -> None:
    """No immutables and no constructor: readers recognise the registry by the hash of its code (and
    its canonical address is CREATE2 of its init code), so neither may depend on where, on which chain
    or by whom it was deployed."""
    sources = sorted(p.name for p in (ROOT / "contracts").glob("*.sol"))
    assert [name for name in sources if "Registry" in name and not name.startswith("I")] == ["AnchorRegistry.sol"]
    for name in sources:
        lines = (ROOT / "contracts" / name).read_text().splitlines()
        code = [line for line in lines if not line.strip().startswith("//")]
        assert not [line for line in code if re.search(r"\bimmutable\b|\bconstructor\b", line)], name


def test_sources_name_no_owner_admin_upgrade_pause_or_selfdestruct() -> None:
    pattern = re.compile(r"\b(owner|admin|upgrade\w*|pause\w*|selfdestruct|delegatecall|proxy|setter)\b", re.I)
    for source in (ROOT / "contracts").glob("*.sol"):
        code = "\n".join(
            line for line in source.read_text().splitlines() if not line.strip().startswith(("//", "*", "/*"))
        )
        assert not pattern.findall(code), source.name
