"""The consensus encodings a sealed section carries, from the JSON an RPC node answers: the block header
(RLP, every fork from London on: its field list only grows at the end) and a transaction receipt (the
typed-receipt encoding of EIP-2718, as the receipts trie stores it). Both are checked against the chain's
own commitments when a proof is sealed (keccak(header) = the block hash; the receipts trie rebuilt from
every receipt of the block has the header's receiptsRoot), so an encoding this module got wrong can
never be written into a proof."""

from __future__ import annotations

from typing import Any

from anchor.errors import BadInput
from anchor.sealing import rlp

HEADER_FIELDS = (
    ("parentHash", "bytes"),
    ("sha3Uncles", "bytes"),
    ("miner", "bytes"),
    ("stateRoot", "bytes"),
    ("transactionsRoot", "bytes"),
    ("receiptsRoot", "bytes"),
    ("logsBloom", "bytes"),
    ("difficulty", "int"),
    ("number", "int"),
    ("gasLimit", "int"),
    ("gasUsed", "int"),
    ("timestamp", "int"),
    ("extraData", "bytes"),
    ("mixHash", "bytes"),
    ("nonce", "bytes"),
)
"""The fifteen fields every header has (Frontier's), in their RLP order."""
FORK_FIELDS = (
    ("baseFeePerGas", "int"),  # London (EIP-1559)
    ("withdrawalsRoot", "bytes"),  # Shanghai (EIP-4895)
    ("blobGasUsed", "int"),
    ("excessBlobGas", "int"),
    ("parentBeaconBlockRoot", "bytes"),  # Cancun (4844, 4788)
    ("requestsHash", "bytes"),  # Prague (EIP-7685)
)
"""What each fork appended, in order: a header holds a prefix of them (a node leaves the later ones out)."""
RECEIPTS_ROOT, NUMBER, TIMESTAMP = 5, 8, 11
"""Positions in the header's RLP list of what a verifier reads (the same in every fork)."""


def _bytes(value: object) -> bytes:
    return bytes.fromhex(str(value).removeprefix("0x"))


def _int(value: object) -> int:
    return int(str(value), 16)


def header_rlp(block: dict[str, Any]) -> bytes:
    """The RLP of a block header from `eth_getBlockByNumber`'s JSON: the fifteen fields, then each fork's
    fields for as long as the node gave them (a gap in that order is no header any fork produces)."""
    fields: list[object] = []
    try:
        for name, kind in HEADER_FIELDS:
            fields.append(_int(block[name]) if kind == "int" else _bytes(block[name]))
        present = [name for name, _ in FORK_FIELDS if block.get(name) is not None]
        expected = [name for name, _ in FORK_FIELDS][: len(present)]
        if present != expected:
            raise BadInput(
                f"block {block.get('number')}: header fields {present} are no fork's (expected {expected})",
                detail={"field": "header"},
            )
        for name, kind in FORK_FIELDS[: len(present)]:
            fields.append(_int(block[name]) if kind == "int" else _bytes(block[name]))
    except (KeyError, ValueError) as exc:
        raise BadInput(
            f"block {block.get('number')}: the node's header lacks {exc}", detail={"field": "header"}
        ) from None
    return rlp.encode(fields)


def receipt_encoding(receipt: dict[str, Any]) -> bytes:
    """A receipt as the receipts trie stores it: rlp([status, cumulativeGasUsed, logsBloom, logs]) for a
    legacy transaction; the type byte before it for a typed one (EIP-2718); an OP-stack deposit (0x7e)
    also carries its depositNonce and depositReceiptVersion when the node reports them."""
    kind = _int(receipt.get("type", "0x0"))
    logs = [
        [_bytes(log["address"]), [_bytes(t) for t in log["topics"]], _bytes(log["data"])]
        for log in receipt.get("logs") or []
    ]
    if "status" not in receipt:
        raise BadInput(
            "a receipt without a status (a pre-Byzantium chain) cannot be sealed", detail={"field": "receipt"}
        )
    body: list[object] = [
        _int(receipt["status"]),
        _int(receipt["cumulativeGasUsed"]),
        _bytes(receipt["logsBloom"]),
        logs,
    ]
    if kind == 0x7E and receipt.get("depositNonce") is not None:
        body.append(_int(receipt["depositNonce"]))
        if receipt.get("depositReceiptVersion") is not None:
            body.append(_int(receipt["depositReceiptVersion"]))
    encoded = rlp.encode(body)
    return encoded if kind == 0 else bytes([kind]) + encoded


def header_fields(header: bytes) -> list[Any]:
    """The decoded RLP list of a header; `ValueError` when it is not one (not canonical RLP, too few or
    too many fields)."""
    fields = rlp.decode(header)
    if not isinstance(fields, list) or not len(HEADER_FIELDS) <= len(fields) <= len(HEADER_FIELDS) + len(FORK_FIELDS):
        raise ValueError("not a block header")
    if not all(isinstance(field, bytes) for field in fields):
        raise ValueError("not a block header: a field is a list")
    return fields


def receipt_logs(receipt: bytes) -> tuple[int, list[tuple[bytes, list[bytes], bytes]]]:
    """(status, logs as (address, topics, data)) of an encoded receipt; `ValueError` if it is none (not
    canonical RLP, or not a receipt's shape)."""
    body = receipt[1:] if receipt and receipt[0] < 0x80 else receipt  # a type byte is below RLP's list prefix
    fields = rlp.decode(body)
    if not isinstance(fields, list) or len(fields) < 4 or not isinstance(fields[3], list):
        raise ValueError("not a receipt")
    status = int.from_bytes(fields[0], "big") if isinstance(fields[0], bytes) else -1
    logs = []
    for log in fields[3]:
        if not (isinstance(log, list) and len(log) == 3 and isinstance(log[1], list)):
            raise ValueError("not a receipt log")
        address, listed, data = log
        topics = [t for t in listed if isinstance(t, bytes)]
        if not (isinstance(address, bytes) and isinstance(data, bytes) and len(topics) == len(listed)):
            raise ValueError("not a receipt log")
        logs.append((address, topics, data))
    return status, logs


def index_key(index: int) -> bytes:
    """A receipt's key in the receipts trie: the RLP of its transaction index."""
    return rlp.encode(index)
