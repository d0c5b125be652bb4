"""The registry's ABI, encoded and decoded by hand: the read path's calls and events without web3.

Why: `import web3` costs about a second (py_ecc builds its BLS tables at import) and `eth_abi` alone a
quarter of one; a verify that reads three values must not pay that. The registry's ABI is
small and fixed: static words (bytesN, address, bool, uintN), one dynamic `bytes32[]` argument and
one dynamic `string` answer. This module covers exactly those types, from the committed ABI (so a
new function is a new ABI entry, not new code) and refuses any other with `TypeError`: a type it does
not know is a bug here, never guessed. tests/registry/test_abi.py compares every encoding with eth_abi.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from anchor.manifest.keccak import checksum_address, keccak256
from anchor.record import Value

__all__ = ["checksum_address"]  # EIP-55 lives beside keccak (the proof format checks addresses too)

_UINT = re.compile(r"uint(\d+)$")
_BYTES = re.compile(r"bytes(\d+)$")


def _word(kind: str, value: Any) -> bytes:
    """One static 32-byte word."""
    if kind == "address":
        return bytes(12) + bytes.fromhex(str(value).lower().removeprefix("0x").rjust(40, "0"))
    if kind == "bool":
        return int(bool(value)).to_bytes(32, "big")
    if m := _UINT.match(kind):
        number = int(value)
        if not 0 <= number < 2 ** int(m.group(1)):
            raise ValueError(f"{number} does not fit {kind}")
        return number.to_bytes(32, "big")
    if m := _BYTES.match(kind):
        raw = bytes(value)
        if len(raw) != int(m.group(1)):
            raise ValueError(f"{kind} needs {m.group(1)} bytes, got {len(raw)}")
        return raw.ljust(32, b"\0")
    raise TypeError(f"ABI type {kind!r} is not one the registry uses")


def _unword(kind: str, word: bytes) -> Any:
    if kind == "address":
        return checksum_address(word[12:].hex())
    if kind == "bool":
        return int.from_bytes(word, "big") != 0
    if _UINT.match(kind):
        return int.from_bytes(word, "big")
    if m := _BYTES.match(kind):
        return word[: int(m.group(1))]
    raise TypeError(f"ABI type {kind!r} is not one the registry uses")


def encode(kinds: list[str], values: list[Any]) -> bytes:
    """abi.encode(values) for static types and dynamic arrays of static types."""
    heads: list[bytes] = []
    tails: list[bytes] = []
    offset = 32 * len(kinds)
    for kind, value in zip(kinds, values, strict=True):
        if kind.endswith("[]"):
            items = list(value)
            tail = len(items).to_bytes(32, "big") + b"".join(_word(kind[:-2], v) for v in items)
            heads.append(offset.to_bytes(32, "big"))
            tails.append(tail)
            offset += len(tail)
        else:
            heads.append(_word(kind, value))
    return b"".join(heads) + b"".join(tails)


def decode(kinds: list[str], data: bytes) -> list[Any]:
    """abi.decode(data) for static types and `string`; a short or malformed answer is `ValueError`."""
    out: list[Any] = []
    for index, kind in enumerate(kinds):
        word = data[32 * index : 32 * index + 32]
        if len(word) != 32:
            raise ValueError(f"the answer is {len(data)} bytes, too short for {kinds}")
        if kind in ("string", "bytes"):
            start = int.from_bytes(word, "big")
            size = int.from_bytes(data[start : start + 32], "big")
            raw = data[start + 32 : start + 32 + size]
            if len(raw) != size:
                raise ValueError("the answer's dynamic value runs past its end")
            out.append(raw.decode() if kind == "string" else raw)
        else:
            out.append(_unword(kind, word))
    return out


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Function(Value):
    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]

    @property
    def selector(self) -> bytes:
        return keccak256(f"{self.name}({','.join(self.inputs)})".encode())[:4]

    def call_data(self, *args: Any) -> bytes:
        return self.selector + encode(list(self.inputs), list(args))

    def result(self, data: bytes) -> list[Any]:
        return decode(list(self.outputs), data)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Event(Value):
    name: str
    inputs: tuple[tuple[str, str, bool], ...]
    """(name, type, indexed) in declaration order."""

    @property
    def topic(self) -> str:
        """topic0: keccak256 of the signature."""
        signature = f"{self.name}({','.join(kind for _, kind, _ in self.inputs)})"
        return "0x" + keccak256(signature.encode()).hex()

    def args(self, log: dict[str, Any]) -> dict[str, Any]:
        """The event's arguments from one raw log (hex strings, as eth_getLogs answers)."""
        topics = [bytes.fromhex(str(t).removeprefix("0x")) for t in log["topics"]]
        if not topics or "0x" + topics[0].hex() != self.topic:
            raise ValueError(f"the log is not a {self.name} event")
        indexed = [(n, k) for n, k, i in self.inputs if i]
        plain = [(n, k) for n, k, i in self.inputs if not i]
        if len(topics) != 1 + len(indexed):
            raise ValueError(f"a {self.name} log has {len(topics)} topics, expected {1 + len(indexed)}")
        out = {name: _unword(kind, topic) for (name, kind), topic in zip(indexed, topics[1:], strict=True)}
        data = bytes.fromhex(str(log["data"]).removeprefix("0x"))
        out.update(zip([n for n, _ in plain], decode([k for _, k in plain], data), strict=True))
        return out


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Interface(Value):
    functions: dict[str, Function]
    events: dict[str, Event]


@cache
def interface(version: str) -> Interface:
    """The functions and events of one registry version, from its committed ABI."""
    from anchor.chain.artifact import registry_abi

    functions, events = {}, {}
    for entry in registry_abi(version):
        if entry["type"] == "function":
            functions[entry["name"]] = Function(
                entry["name"], tuple(i["type"] for i in entry["inputs"]), tuple(o["type"] for o in entry["outputs"])
            )
        elif entry["type"] == "event":
            events[entry["name"]] = Event(
                entry["name"], tuple((i["name"], i["type"], bool(i["indexed"])) for i in entry["inputs"])
            )
    return Interface(functions, events)
