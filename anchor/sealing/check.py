"""Verify a sealed anchor with no network: against one trusted block hash.

The steps, each refused by name (docs/manifest.md, "Sealed proofs"):
1. the anchor is sealed, and names the canonical registry: its address certifies its code (CREATE2 of
   the committed init code), which is what lets an offline verdict trust the event without reading it;
2. keccak256(header) is the hash the verifier trusts for that block of that chain;
3. the receipt is the one the header's receiptsRoot holds at the sealed index (the Merkle-Patricia proof,
   walked by anchor.sealing.mpt, every node of it on the path);
4. the receipt succeeded and holds the registry's `RootAnchored(root, submitter)` event for this root,
   emitted by the canonical address;
then the caller checks the batch path and the data as for any verdict. What offline cannot see, the
verdict says: a retraction written after the trusted block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from anchor.errors import BadInput, Tampered, UnknownRegistry

if TYPE_CHECKING:
    from collections.abc import Sequence

    from anchor.proof.file import ChainAnchor
    from anchor.settings.session import Settings


@dataclass(frozen=True, slots=True)
class SealedEvidence:
    """What a sealed anchor showed, checked offline: who anchored the root, in which block, when, and
    what that rests on, in words."""

    submitter: str
    block_number: int
    timestamp: int
    block_hash: str
    trusted: str


ROOT_ANCHORED = "RootAnchored(bytes32,address)"


def parse_trusted_block(text: str) -> tuple[int | None, int, str]:
    """`N:HASH` (any chain) or `CHAIN:N:HASH`; `BadInput` naming the input otherwise."""
    found = re.fullmatch(r"(?:(\d+):)?(\d+):(0x[0-9a-fA-F]{64})", text.strip())
    if found is None:
        raise BadInput(
            f"trusted_block {text!r}: expected N:HASH (a block number and its 0x hash, 64 hex), or CHAIN:N:HASH",
            detail={"field": "trusted_block"},
        )
    chain = int(found.group(1)) if found.group(1) else None
    return chain, int(found.group(2)), found.group(3).lower()


def read_trusted_blocks(path: Path) -> list[tuple[int | None, int, str]]:
    """A checkpoint list anyone can publish: one `chain_id N HASH` per line, `#` comments and blank lines
    ignored. `BadInput` naming the file and line of anything else."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(
            f"trusted_blocks {path}: cannot read it ({type(exc).__name__})",
            detail={"field": "trusted_blocks", "file": str(path)},
        ) from None
    out: list[tuple[int | None, int, str]] = []
    for number, line in enumerate(lines, 1):
        body = line.split("#", 1)[0].strip()
        if not body:
            continue
        found = re.fullmatch(r"(\d+)\s+(\d+)\s+(0x[0-9a-fA-F]{64})", body)
        if found is None:
            raise BadInput(
                f"{path}:{number}: expected `chain_id N HASH`, got {body[:80]!r}",
                detail={"file": str(path), "line": number},
            )
        out.append((int(found.group(1)), int(found.group(2)), found.group(3).lower()))
    return out


def offline_settings(
    settings: Settings, trusted_block: Sequence[str] = (), trusted_blocks: Path | None = None
) -> Settings:
    """`settings` for offline verdicts: no socket, trusting exactly the blocks given (`N:HASH` or
    `CHAIN:N:HASH` each, and the `chain_id N HASH` lines of a checkpoint file). The one place a door's
    `--offline` becomes what every verification step reads (`Settings.offline`, `trusted_blocks`)."""
    import dataclasses

    blocks = [parse_trusted_block(text) for text in trusted_block]
    blocks += read_trusted_blocks(trusted_blocks) if trusted_blocks is not None else []
    return dataclasses.replace(settings, offline=True, trusted_blocks=tuple(blocks))


def check_sealed(anchor: ChainAnchor, root: bytes, settings: Settings, registry: str | None) -> SealedEvidence:
    """Steps 1-4 of the module's checklist for one anchor of batch root `root` (the caller, anchor.readback,
    has checked the rest of the proof and makes the verdict)."""
    from anchor.chain.abi import checksum_address
    from anchor.chain.canonical import canonical_address, is_canonical
    from anchor.chain.presets import chain_name
    from anchor.manifest.keccak import keccak256
    from anchor.sealing.encoding import NUMBER, RECEIPTS_ROOT, TIMESTAMP, header_fields, index_key, receipt_logs
    from anchor.sealing.mpt import proof_value

    sealed = anchor.sealed
    where = f"{chain_name(anchor.chain_id)} block {anchor.block_number}"
    if sealed is None:
        raise BadInput(
            f"the anchor on {where} is not sealed, so only the network can verify it (hint: anchor seal PATH"
            " while the chain is reachable, then verify offline)",
            detail={"field": "anchor.sealed"},
        )
    if not is_canonical(anchor.registry) or (registry is not None and registry.lower() != anchor.registry.lower()):
        raise UnknownRegistry(
            f"offline, the canonical registry {canonical_address()} alone is trusted (its address certifies its"
            f" code); the proof names {anchor.registry}, whose code only the network can show",
            detail={"proof_registry": anchor.registry, "canonical": canonical_address()},
        )
    try:
        header = bytes.fromhex(sealed.header[2:])
        fields = header_fields(header)
        number = int.from_bytes(fields[NUMBER], "big")
        timestamp = int.from_bytes(fields[TIMESTAMP], "big")
        receipts_root = bytes(fields[RECEIPTS_ROOT])
    except (ValueError, TypeError):
        raise Tampered("sealed.header: not a block header (RLP)", detail={"field": "anchor.sealed.header"}) from None
    if number != anchor.block_number:
        raise Tampered(
            f"sealed.header: block {number}, but the anchor names block {anchor.block_number}",
            detail={"field": "anchor.sealed.header"},
        )
    block_hash = "0x" + keccak256(header).hex()
    trusted = settings.trusted_block(anchor.chain_id, number)
    if trusted is None:
        raise BadInput(
            f"trusted_block: none for block {number} of {chain_name(anchor.chain_id)}; check once, on any explorer"
            f" or node, that block {number} is {block_hash}, then trust it: trusted_block {number}:{block_hash}",
            detail={
                "field": "trusted_block",
                "inputs": ["trusted_block"],
                "chain_id": anchor.chain_id,
                "block": number,
                "hash_to_check": block_hash,
            },
        )
    if trusted != block_hash:
        raise Tampered(
            f"sealed.header: hashes to {block_hash}, not the trusted hash {trusted} of block {number}",
            detail={"field": "anchor.sealed.header", "trusted": trusted, "sealed": block_hash},
        )
    try:
        held = proof_value(receipts_root, index_key(sealed.index), [bytes.fromhex(n[2:]) for n in sealed.proof])
    except ValueError as exc:
        raise Tampered(
            f"sealed.proof: does not lead from the header's receiptsRoot to a receipt ({exc})",
            detail={"field": "anchor.sealed.proof"},
        ) from None
    receipt = bytes.fromhex(sealed.receipt[2:])
    if held != receipt:
        raise Tampered(
            f"sealed.receipt: not the receipt block {number} holds at index {sealed.index}",
            detail={"field": "anchor.sealed.receipt"},
        )
    try:
        status, logs = receipt_logs(receipt)
    except ValueError:
        raise Tampered("sealed.receipt: not a receipt", detail={"field": "anchor.sealed.receipt"}) from None
    if status != 1:
        raise Tampered("sealed.receipt: the sealed transaction reverted", detail={"field": "anchor.sealed.receipt"})
    topic, emitter = keccak256(ROOT_ANCHORED.encode()), bytes.fromhex(canonical_address()[2:])
    ours = [t for address, t, _ in logs if len(t) == 3 and t[0] == topic and t[1] == root and address == emitter]
    if not ours:
        elsewhere = [a for a, t, _ in logs if len(t) == 3 and t[0] == topic and t[1] == root]
        if elsewhere:
            raise UnknownRegistry(
                f"the sealed RootAnchored event was emitted by 0x{elsewhere[0].hex()}, not the"
                f" canonical registry {canonical_address()}",
                detail={"emitter": "0x" + elsewhere[0].hex()},
            )
        raise Tampered(
            f"sealed.receipt: holds no RootAnchored event of root 0x{root.hex()}",
            detail={"field": "anchor.sealed.receipt"},
        )
    submitter = checksum_address("0x" + ours[0][2][-20:].hex())
    words = (
        f"that block {number} of {chain_name(anchor.chain_id)} is {block_hash}: check it once on any explorer or"
        " node (offline, a retraction written after that block cannot be seen)"
    )
    return SealedEvidence(submitter, number, timestamp, block_hash, words)
