"""Recursive Length Prefix (Yellow Paper, appendix B): the encoding of block headers, receipts and trie
nodes, in the strict canonical form consensus uses.

Why our own: Ethereum's `rlp` package pulls in `eth_utils` at import, a quarter of a second that an
offline verdict (which decodes a few hundred bytes) would spend on nothing else. This module is one
page, decodes iteratively (a hostile 5,000-deep list is refused by depth, never a RecursionError) and
refuses every non-canonical form `rlp.decode` refuses: a single byte below 0x80 wrapped in a string
prefix, a long form for a short payload, a length with leading zero bytes, trailing bytes.
tests/sealing/test_sealing_rlp.py holds it to Ethereum's package on random items and random bytes both ways."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

Item: TypeAlias = "bytes | list[Item]"
"""A decoded RLP item: a byte string, or a list of items."""

MAX_DEPTH = 64
"""Deeper nesting than any consensus object has (a receipt nests four lists, a trie node's embedded
children fewer than 32, since each is under 32 bytes): anything deeper is refused unread."""


class RlpError(ValueError):
    """Bytes that are not one canonical RLP item (or nest deeper than `MAX_DEPTH`)."""


def _length(data: bytes, at: int, width: int, end: int) -> int:
    if at + width > end:
        raise RlpError(f"RLP length at byte {at} runs past the end")
    if data[at] == 0:
        raise RlpError(f"RLP length at byte {at} has leading zero bytes")
    size = int.from_bytes(data[at : at + width], "big")
    if size < 56:
        raise RlpError(f"RLP long form at byte {at - 1} for a payload of {size} bytes")
    return size


def _head(data: bytes, at: int, end: int) -> tuple[bool, int, int]:
    """(is a list, where its payload starts, payload size) of the item at `at`, which must end by `end`."""
    first = data[at]
    if first < 0x80:
        return False, at, 1
    if first < 0xB8:
        start, size = at + 1, first - 0x80
        if size == 1 and start < end and data[start] < 0x80:
            raise RlpError(f"RLP byte {data[start]:#04x} at byte {at} wrapped in a string prefix")
    elif first < 0xC0:
        width = first - 0xB7
        size, start = _length(data, at + 1, width, end), at + 1 + width
    elif first < 0xF8:
        start, size = at + 1, first - 0xC0
    else:
        width = first - 0xF7
        size, start = _length(data, at + 1, width, end), at + 1 + width
    if start + size > end:
        raise RlpError(f"RLP item at byte {at} runs past the end of the list or input holding it")
    return first >= 0xC0, start, size


def decode(data: bytes, max_depth: int = MAX_DEPTH) -> Item:
    """The one item `data` encodes; `RlpError` for anything but exactly one canonical item."""
    data = bytes(data)
    if not data:
        raise RlpError("RLP: no bytes")
    is_list, start, size = _head(data, 0, len(data))
    if start + size != len(data):
        raise RlpError(f"RLP: {len(data) - start - size} trailing bytes after the item")
    if not is_list:
        return data[start : start + size]
    top: list[Item] = []
    stack: list[tuple[list[Item], int]] = [(top, start + size)]
    at = start
    while stack:
        items, end = stack[-1]
        if at == end:
            stack.pop()
            continue
        is_list, start, size = _head(data, at, end)
        if is_list:
            if len(stack) >= max_depth:
                raise RlpError(f"RLP: lists nested deeper than {max_depth}")
            child: list[Item] = []
            items.append(child)
            stack.append((child, start + size))
            at = start
        else:
            items.append(data[start : start + size])
            at = start + size
    return top


def _prefix(size: int, short: int) -> bytes:
    if size < 56:
        return bytes([short + size])
    width = (size.bit_length() + 7) // 8
    return bytes([short + 55 + width]) + size.to_bytes(width, "big")


def encode(item: bytes | int | Sequence[object]) -> bytes:
    """The canonical RLP of byte strings, non-negative integers (big-endian, no leading zeros) and
    (nested) lists of them: what `rlp.encode` gives for the same value."""
    if isinstance(item, bool):
        raise TypeError("RLP: a bool is not an integer here")
    if isinstance(item, int):
        if item < 0:
            raise TypeError("RLP: negative integers have no encoding")
        item = item.to_bytes((item.bit_length() + 7) // 8, "big")
    if isinstance(item, bytes | bytearray | memoryview):
        body = bytes(item)
        if len(body) == 1 and body[0] < 0x80:
            return body
        return _prefix(len(body), 0x80) + body
    if isinstance(item, list | tuple):
        payload = b"".join(encode(each) for each in item)
        return _prefix(len(payload), 0xC0) + payload
    raise TypeError(f"RLP: cannot encode {type(item).__name__}")
