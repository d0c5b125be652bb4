"""Verify a sealed anchor against one block hash: a trusted one with no network, or the chain's own.

What is checked, each refused by the field it names (docs/manifest.md, "Sealed proofs"): the anchor
is sealed (`check_sealed_present`) and names the canonical registry, whose address certifies its code
(`check_canonical`); keccak256(header) is the hash trusted for that block of that chain; the receipt is
the one the header's receiptsRoot holds at the sealed index (the Merkle-Patricia proof, walked by
anchor.sealing.mpt, every node of it on the path); the receipt succeeded and holds the registry's
`RootAnchored(root, submitter)` event for this root (`check_sealed_against`). The read-back checklist
(anchor.readback.checklist) numbers these among its own steps and checks the rest of the proof; what
offline cannot see, the verdict says: a retraction written after the trusted block.

Online (anchor.readback.checklist.check_anchor_on_chain), the same section is checked against the hash
the chain it reads has at the anchor's block, with the registry it trusts as the emitter: a sealed
section is never carried along unchecked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anchor.errors import BadInput, ProofContradicted, UnknownRegistry
from anchor.record import Value

if TYPE_CHECKING:
    from collections.abc import Sequence

    from anchor.proof.file import ChainAnchor
    from anchor.settings.session import Settings


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class SealedEvidence(Value):
    """What a sealed anchor showed, checked offline: who anchored the root, in which block, when, and
    what that rests on, in words."""

    submitter: str
    block_number: int
    timestamp: int
    block_hash: str
    trusted: str
    unbound: str = ""
    """What the verdict shows that the trusted hash does not bind (the chain, the transaction hash), in words."""


ROOT_ANCHORED = "RootAnchored(bytes32,address)"
ROOT_ANCHORED_TOPICS = 3
"""topic0, then the two indexed parameters (root, submitter): a log with other topics is not the event."""


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


def check_sealed_present(anchor: ChainAnchor) -> None:
    """Offline the anchor must be sealed: with no socket its sealed section is the only chain there is."""
    from anchor.chain.presets import chain_name

    if anchor.sealed is None:
        raise BadInput(
            f"the anchor on {chain_name(anchor.chain_id)} block {anchor.block_number} is not sealed, so only the"
            " network can verify it (hint: anchor seal PATH while the chain is reachable, then verify offline)",
            detail={"field": "anchor.sealed"},
        )


def check_canonical(anchor: ChainAnchor, registry: str | None) -> None:
    """Offline the canonical registry alone is trusted: its address certifies its code (CREATE2 of the
    committed init code), which is what lets an offline verdict trust the event without reading it."""
    from anchor.chain.canonical import canonical_address, is_canonical

    if not is_canonical(anchor.registry) or (registry is not None and registry.lower() != anchor.registry.lower()):
        raise UnknownRegistry(
            f"offline, the canonical registry {canonical_address()} alone is trusted (its address certifies its"
            f" code); the proof names {anchor.registry}, whose code only the network can show",
            detail={"proof_registry": anchor.registry, "canonical": canonical_address()},
        )


def check_sealed_trusted(anchor: ChainAnchor, root: bytes, settings: Settings) -> SealedEvidence:
    """The sealed section holds under the hash the verifier trusts for its block (`check_sealed_against`);
    `BadInput` naming `trusted_block` when none is given for it."""
    from anchor.chain.canonical import canonical_address
    from anchor.chain.presets import chain_name

    assert anchor.sealed is not None
    number = sealed_block_number(anchor.sealed.header)
    trusted = settings.trusted_block(anchor.chain_id, number)
    if trusted is None:  # where to get it, never the file's own hash: pasting that trusts the file being checked
        raise BadInput(
            f"trusted_block: none for block {number} of {chain_name(anchor.chain_id)}; get that block's hash from"
            f" somewhere other than this file: a block explorer of {chain_name(anchor.chain_id)}, `cast block"
            f" {number} -f hash --rpc-url URL` against any node of it, or a colleague who has it; then give"
            f" trusted_block {number}:HASH",
            detail={
                "field": "trusted_block",
                "inputs": ["trusted_block"],
                "chain_id": anchor.chain_id,
                "block": number,
            },
        )
    seen = check_sealed_against(anchor, root, trusted, canonical_address(), "the trusted hash")
    # a block hash names no chain and a receipt proof no transaction hash: what the file says of them is
    # its word, said as such (an edited chain id once printed "OK ... on Base" for an anvil block)
    named = any(chain == anchor.chain_id and block == number for chain, block, _ in settings.trusted_blocks)
    unbound = (
        f"its transaction hash {anchor.tx_hash} is the file's word (a receipt proof shows its index only)"
        if named
        else f"its chain ({chain_name(anchor.chain_id)}, as the file says: your trusted block names none; give"
        f" {anchor.chain_id}:{number}:HASH to bind it) and its transaction hash {anchor.tx_hash} are the file's word"
    )
    words = (
        f"that block {number} of {chain_name(anchor.chain_id)} is {seen.block_hash}: check it once on any explorer"
        f" or node (offline, a retraction written after that block cannot be seen); {unbound}"
    )
    return SealedEvidence(seen.submitter, seen.block_number, seen.timestamp, seen.block_hash, words, unbound)


def sealed_block_number(header_hex: str, field: str = "anchor.sealed.header") -> int:
    """The number of the block a sealed header says it is; `Tampered` naming `field` if it is no header."""
    from anchor.sealing.encoding import NUMBER, header_fields

    try:
        return int.from_bytes(header_fields(bytes.fromhex(header_hex[2:]))[NUMBER], "big")
    except (ValueError, TypeError, IndexError):
        raise ProofContradicted(
            f"{field.removeprefix('anchor.')}: not a block header (RLP)", detail={"field": field}
        ) from None


def check_sealed_against(anchor: ChainAnchor, root: bytes, block_hash: str, emitter: str, trust: str) -> SealedEvidence:
    """A sealed `anchor` of batch root `root`, given the hash its block must have: the one
    the verifier trusts (offline), or the one the chain it reads has at that number (online). `emitter`
    is the registry whose event counts; `trust` says in words where `block_hash` came from. `Tampered`
    names the first field of the sealed section that disagrees."""
    from anchor.chain.abi import checksum_address
    from anchor.manifest.keccak import keccak256
    from anchor.sealing.encoding import NUMBER, RECEIPTS_ROOT, TIMESTAMP, header_fields, index_key, receipt_logs
    from anchor.sealing.mpt import proof_value

    sealed = anchor.sealed
    if sealed is None:
        raise BadInput("the anchor is not sealed", detail={"field": "anchor.sealed"})
    try:
        header = bytes.fromhex(sealed.header[2:])
        fields = header_fields(header)
        number = int.from_bytes(fields[NUMBER], "big")
        timestamp = int.from_bytes(fields[TIMESTAMP], "big")
        receipts_root = bytes(fields[RECEIPTS_ROOT])
    except (ValueError, TypeError, IndexError):
        raise ProofContradicted(
            "sealed.header: not a block header (RLP)", detail={"field": "anchor.sealed.header"}
        ) from None
    if number != anchor.block_number:
        raise ProofContradicted(
            f"sealed.header: block {number}, but the anchor names block {anchor.block_number}",
            detail={"field": "anchor.sealed.header"},
        )
    sealed_hash = "0x" + keccak256(header).hex()
    if block_hash.lower() != sealed_hash:
        raise ProofContradicted(
            f"sealed.header: does not hash to {trust} {block_hash} of block {number} ({_which_is_wrong(trust)})",
            detail={"field": "anchor.sealed.header", "trusted": block_hash},
        )
    try:
        held = proof_value(receipts_root, index_key(sealed.index), [bytes.fromhex(n[2:]) for n in sealed.proof])
    except (ValueError, TypeError, IndexError) as exc:
        raise ProofContradicted(
            f"sealed.proof: does not lead from the header's receiptsRoot to a receipt ({exc})",
            detail={"field": "anchor.sealed.proof"},
        ) from None
    receipt = bytes.fromhex(sealed.receipt[2:])
    if held != receipt:
        raise ProofContradicted(
            f"sealed.receipt: not the receipt block {number} holds at index {sealed.index}",
            detail={"field": "anchor.sealed.receipt"},
        )
    try:
        status, logs = receipt_logs(receipt)
    except ValueError:
        raise ProofContradicted("sealed.receipt: not a receipt", detail={"field": "anchor.sealed.receipt"}) from None
    if status != 1:
        raise ProofContradicted(
            "sealed.receipt: the sealed transaction reverted", detail={"field": "anchor.sealed.receipt"}
        )
    topic, wanted = keccak256(ROOT_ANCHORED.encode()), bytes.fromhex(emitter[2:])
    size = ROOT_ANCHORED_TOPICS
    ours = [t for address, t, _ in logs if len(t) == size and t[0] == topic and t[1] == root and address == wanted]
    if not ours:
        elsewhere = [a for a, t, _ in logs if len(t) == size and t[0] == topic and t[1] == root]
        if elsewhere:
            raise UnknownRegistry(
                f"the sealed RootAnchored event was emitted by 0x{elsewhere[0].hex()}, not the"
                f" registry {checksum_address(emitter)}",
                detail={"emitter": "0x" + elsewhere[0].hex()},
            )
        raise ProofContradicted(
            f"sealed.receipt: holds no RootAnchored event of root 0x{root.hex()}",
            detail={"field": "anchor.sealed.receipt"},
        )
    submitter = checksum_address("0x" + ours[0][2][-20:].hex())
    return SealedEvidence(submitter, number, timestamp, sealed_hash, f"{trust} of block {number}")


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class RecordState(Value):
    """The registry's record of a root as a later block's state shows it, checked against that block's hash."""

    block_number: int
    timestamp: int
    block_hash: str
    retracted_block: int
    """0: not retracted as of `block_number`."""
    retracted_at: int


ROOTS_SLOT = 1
"""The storage slot of the registry's `_roots` mapping (submitter => root => packed record): the second
state variable of AnchorRegistry.sol, after `_lineage` (its base, ResearcherSignatures, has none)."""
STATE_ROOT = 3
"""The header's stateRoot, by its position in the header's RLP list (0-based)."""


def record_slot(submitter: str, root: bytes) -> bytes:
    """The storage slot of `submitter`'s record of `root`: keccak256(root ‖ keccak256(submitter ‖ slot)),
    Solidity's layout of a mapping of mappings, each key padded to 32 bytes."""
    from anchor.manifest.keccak import keccak256

    inner = keccak256(bytes(12) + bytes.fromhex(submitter[2:]) + ROOTS_SLOT.to_bytes(32, "big"))
    return keccak256(root + inner)


def check_state_against(
    anchor: ChainAnchor, root: bytes, submitter: str, anchored_at: int, block_hash: str, code_hash: str, trust: str
) -> RecordState:
    """The record of `root` by `submitter` as `anchor.sealed.state` shows it, given the hash its block must
    have (trusted offline, the chain's online): the header hashes to it and is not before the anchoring
    block; the account proof leads from its stateRoot to the registry's account, whose code hash is
    `code_hash`; the storage proof leads from the account's storageRoot to the record's slot, which holds
    the record the anchor shows (its block and time). `Tampered` names the field that disagrees."""
    from anchor.manifest.keccak import keccak256
    from anchor.sealing.encoding import NUMBER, TIMESTAMP, header_fields
    from anchor.sealing.mpt import proof_value
    from anchor.sealing.rlp import decode

    state = anchor.sealed.state if anchor.sealed is not None else None
    if state is None:
        raise BadInput("the anchor carries no later state", detail={"field": "anchor.sealed.state"})
    field = "anchor.sealed.state"
    try:
        header = bytes.fromhex(state.header[2:])
        fields = header_fields(header)
        number, timestamp = int.from_bytes(fields[NUMBER], "big"), int.from_bytes(fields[TIMESTAMP], "big")
        state_root = bytes(fields[STATE_ROOT])
    except (ValueError, TypeError, IndexError):
        raise ProofContradicted(
            "sealed.state.header: not a block header (RLP)", detail={"field": f"{field}.header"}
        ) from None
    if number < anchor.block_number:
        raise ProofContradicted(
            f"sealed.state.header: block {number}, before the anchoring block {anchor.block_number}",
            detail={"field": f"{field}.header"},
        )
    state_hash = "0x" + keccak256(header).hex()
    if block_hash.lower() != state_hash:
        raise ProofContradicted(
            f"sealed.state.header: does not hash to {trust} {block_hash} of block {number} ({_which_is_wrong(trust)})",
            detail={"field": f"{field}.header", "trusted": block_hash},
        )

    def walk(root_hash: bytes, key: bytes, nodes: tuple[str, ...], name: str) -> list[Any]:
        try:
            held = proof_value(root_hash, keccak256(key), [bytes.fromhex(node[2:]) for node in nodes])
            value = decode(held) if held else b""
        except (ValueError, TypeError, IndexError, KeyError):
            raise ProofContradicted(
                f"sealed.state.{name}: does not lead to a value under block {number}'s state",
                detail={"field": f"{field}.{name}"},
            ) from None
        if not value:
            what = "registry" if name == "account_proof" else "record"
            raise ProofContradicted(
                f"sealed.state.{name}: holds nothing at the {what} in block {number}'s state",
                detail={"field": f"{field}.{name}"},
            )
        if isinstance(value, list) != (name == "account_proof"):
            raise ProofContradicted(
                f"sealed.state.{name}: not an {'account' if name == 'account_proof' else 'integer'}",
                detail={"field": f"{field}.{name}"},
            )
        return value if isinstance(value, list) else [value]

    account = walk(state_root, bytes.fromhex(anchor.registry[2:]), state.account_proof, "account_proof")
    if len(account) != 4 or "0x" + bytes(account[3]).hex() != code_hash.lower():
        raise ProofContradicted(
            f"sealed.state.account_proof: the account at {anchor.registry} is not the registry's code",
            detail={"field": f"{field}.account_proof"},
        )
    packed = int.from_bytes(
        walk(bytes(account[2]), record_slot(submitter, root), state.storage_proof, "storage_proof")[0], "big"
    )
    mask = (1 << 48) - 1
    held_at, held_block = packed & mask, (packed >> 48) & mask
    if (held_at, held_block) != (anchored_at, anchor.block_number):
        raise ProofContradicted(
            f"sealed.state.storage_proof: the slot holds a record of block {held_block}, not of the anchoring"
            f" block {anchor.block_number}",
            detail={"field": f"{field}.storage_proof"},
        )
    return RecordState(number, timestamp, state_hash, (packed >> 144) & mask, (packed >> 96) & mask)


def later_state(anchor: ChainAnchor, root: bytes, seen: SealedEvidence, settings: Settings) -> RecordState | None:
    """Offline: the record as of the later block the anchor carries, checked against the hash the verifier
    trusts for that block; None when the anchor carries none, or no hash is trusted for its block (the
    verdict then says what it could not check)."""
    from anchor.chain.canonical import canonical_code_hash

    state = anchor.sealed.state if anchor.sealed is not None else None
    if state is None:
        return None
    number = sealed_block_number(state.header, "anchor.sealed.state.header")
    trusted = settings.trusted_block(anchor.chain_id, number)
    if trusted is None:
        return None
    return check_state_against(
        anchor, root, seen.submitter, seen.timestamp, trusted, canonical_code_hash(), "the trusted hash"
    )


def _which_is_wrong(trust: str) -> str:
    """What a header that does not hash to the expected hash can mean besides an edited file: the check
    cannot tell them apart, so the verdict names each (a mistyped trusted hash read as "tampered" alone)."""
    if trust == "the trusted hash":  # the file's own hash is never printed: pasted, it would be trusted
        return "the file was edited, or the trusted hash is not that block's: check the hash you gave"
    return "the file was edited, or the endpoint serves another chain with the same chain id: check --rpc-url"
