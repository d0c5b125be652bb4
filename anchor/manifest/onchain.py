"""How off-chain identifiers become the registry's bytes32 keys (docs/manifest.md, "On-chain values")."""

from __future__ import annotations

from anchor.errors import BadInput
from anchor.manifest.keccak import keccak256

LEDGER_TAG = keccak256(b"anchor ledger checkpoint v1")
"""The diffHash of a research ledger checkpoint's lineage record (anchor.research.checkpoints): what
tells it from an attempt's record, whose diffHash is the BLAKE3 of a diff."""


PROMOTION_TAG = keccak256(b"anchor mlflow promotion v1")
"""The diffHash of a model promotion's lineage record (anchor.mlflow.registry): commit = the promotion
record's digest, parent = the previous promotion's digest (zero: the alias was new), metricHash = the
manifest digest of the run the version came from."""


def parse_hex32(text: str, field: str, error: type[BadInput] = BadInput) -> bytes:
    """A 32-byte value given as 64 hex digits, with or without 0x. Raises `error` (a `BadInput`)
    naming `field`."""
    body = text[2:] if text.lower().startswith("0x") else text
    try:
        value = bytes.fromhex(body)
    except ValueError:
        value = b""
    if len(value) != 32:
        raise error(f"{field}: expected 32 bytes as 64 hex digits, got {text[:80]!r}", detail={"field": field})
    return value


def parse_address(text: str, field: str) -> str:
    """An account or contract address as given (`registries`, `researcher`…): 0x and 40 hex digits,
    surrounding blanks dropped; else `BadInput` naming the input `field` (`0x1234` was once taken for one,
    and every verdict then said "not our registry"). Returned as given: checksum case is the caller's to
    keep or drop."""
    value = text.strip()
    body = value[2:] if value[:2] in ("0x", "0X") else None
    if body is None or len(body) != 40 or any(c not in "0123456789abcdefABCDEF" for c in body):
        shown = len(value.removeprefix("0x"))
        raise BadInput(
            f"{field} {text[:80]!r}: expected an address, 0x and 40 hex digits ({shown} given)", detail={"field": field}
        )
    return value


def commit_of_key(key: str) -> str:
    """The git id a bytes32 commit key stands for (`commit_key` the other way): a SHA-1 id is the first
    20 bytes of a zero-padded word; any other key is returned as it is, lowercase, without `0x`."""
    body = key.lower().removeprefix("0x")
    return body[:40] if len(body) == 64 and body.endswith("0" * 24) else body


def commit_key(commit: str) -> bytes:
    """A git commit id as a bytes32: SHA-1 ids (40 hex) left-aligned and zero-padded, SHA-256 ids as is."""
    body = commit.lower().removeprefix("0x")
    if len(body) not in (40, 64) or any(c not in "0123456789abcdef" for c in body):
        raise BadInput(
            f"commit: expected a full 40- or 64-hex git commit id, got {commit!r}", detail={"field": "commit"}
        )
    return bytes.fromhex(body).ljust(32, b"\x00")
