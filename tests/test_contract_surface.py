"""The registry is immutable and admin-free: checked in the ABI, the sources and the bytecode itself."""

from __future__ import annotations

import re
from pathlib import Path

from anchor.chain.artifact import registry_abi
from anchor.chain.compiler import compile_registry
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


def test_runtime_bytecode_has_no_delegatecall_selfdestruct_or_external_call(tmp_path: Path) -> None:
    ops = set(_opcodes(compile_registry(tmp_path).runtime))
    assert not {FORBIDDEN_OPCODES[op] for op in ops & FORBIDDEN_OPCODES.keys()}


def test_the_only_state_changing_functions_are_the_two_write_once_anchors() -> None:
    writers = {f["name"] for f in registry_abi() if f["type"] == "function" and f["stateMutability"] == "nonpayable"}
    assert writers == {"anchor", "anchorRoot"}
    assert not [f for f in registry_abi() if f["type"] in ("constructor", "fallback", "receive")]


def test_sources_name_no_owner_admin_upgrade_pause_or_selfdestruct() -> None:
    pattern = re.compile(r"\b(owner|admin|upgrade\w*|pause\w*|selfdestruct|delegatecall|proxy|setter)\b", re.I)
    for source in (ROOT / "contracts").glob("*.sol"):
        code = "\n".join(
            line for line in source.read_text().splitlines() if not line.strip().startswith(("//", "*", "/*"))
        )
        assert not pattern.findall(code), source.name
