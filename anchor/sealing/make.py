"""`anchor seal`: read, once, what lets a proof be verified offline, and write it into the proof.

For each anchor the proof holds: the anchoring transaction's receipt and index, the block header
(whose RLP must hash to the block hash the node names), and every receipt of the block, from which the
receipts trie is rebuilt (its root must be the header's receiptsRoot) and the proof of this receipt
taken. Nothing the node answers is adopted unchecked: a header or receipt encoding that does not
reproduce the chain's own commitment is refused, never written."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anchor.errors import AnchorError, BadInput, NotAnchored
from anchor.record import Value

if TYPE_CHECKING:
    from anchor.chain.rpc import Rpc
    from anchor.proof.file import ChainAnchor, Sealed, SealedState
    from anchor.settings.session import Settings


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class SealedProof(Value):
    proof: Path
    sealed: int
    """Anchors sealed now."""
    already: int
    """Anchors that were sealed before (left as they were, or with `refresh` their record's state moved on)."""
    blocks: tuple[tuple[int, int, str], ...]
    """(chain id, block number, block hash) of each anchor sealed or refreshed, then of its record's later
    block: the blocks a verifier must trust."""
    refreshed: int = 0
    """Anchors sealed before whose record's state was moved on to the latest block (`refresh`)."""
    stateless: int = 0
    """Anchors sealed without their record's later state: the node has no `eth_getProof`."""


def _hex(data: bytes) -> str:
    return "0x" + data.hex()


def seal_anchor(rpc: Rpc, anchor: ChainAnchor) -> tuple[Sealed, str]:
    """The sealed section of one anchor, and its block's hash."""
    from trie.hexary import HexaryTrie

    from anchor.manifest.keccak import keccak256
    from anchor.proof.file import Sealed
    from anchor.sealing import rlp
    from anchor.sealing.encoding import RECEIPTS_ROOT, header_fields, header_rlp, index_key, receipt_encoding

    receipt = rpc.get_transaction_receipt(anchor.tx_hash)
    if not receipt:
        raise NotAnchored(
            f"transaction {anchor.tx_hash} is not on this chain: nothing to seal", detail={"tx_hash": anchor.tx_hash}
        )
    number, index = int(str(receipt["blockNumber"]), 16), int(str(receipt["transactionIndex"]), 16)
    block = rpc.get_block(number)
    if not block:
        raise NotAnchored(f"block {number} is not on this chain", detail={"block": number})
    header = header_rlp(block)
    if _hex(keccak256(header)) != str(block["hash"]).lower():
        raise BadInput(
            f"block {number}: its header fields do not re-encode to its hash (a fork this anchor does"
            " not know?): not sealed",
            detail={"block": number},
        )
    receipts = _block_receipts(rpc, number, block)
    tree = HexaryTrie({})
    for each in receipts:
        tree.set(index_key(int(str(each["transactionIndex"]), 16)), receipt_encoding(each))  # type: ignore[no-untyped-call]
    if bytes(tree.root_hash) != bytes(header_fields(header)[RECEIPTS_ROOT]):
        raise BadInput(
            f"block {number}: the node's receipts do not rebuild the block's receiptsRoot: not sealed",
            detail={"block": number},
        )
    key = index_key(index)
    nodes = tuple(_hex(rlp.encode(node)) for node in tree.get_proof(key))  # type: ignore[no-untyped-call]
    sealed = Sealed(header=_hex(header), receipt=_hex(receipt_encoding(receipt)), index=index, proof=nodes)
    return sealed, str(block["hash"]).lower()


def seal_state(rpc: Rpc, anchor: ChainAnchor, root: bytes, block_hash: str) -> tuple[SealedState | None, int, str]:
    """The record of `root` as of the chain's latest block, for a sealed `anchor` whose block has hash
    `block_hash`: that block's header and the `eth_getProof` proofs of the record's slot; with the
    block's number and hash. Checked as a verifier will check it (`check_state_against`) before it is
    written: a node whose proofs do not lead from the block's hash to the record is refused. None for
    the state where the node has no `eth_getProof` (the seal is still made, without it)."""
    from anchor.chain.rpc import RpcError
    from anchor.proof.file import SealedState
    from anchor.sealing.check import check_sealed_against, check_state_against, record_slot
    from anchor.sealing.encoding import header_rlp

    seen = check_sealed_against(anchor, root, block_hash, anchor.registry, "the chain's hash")
    number = rpc.block_number()
    block = rpc.get_block(number)
    if not block:
        raise NotAnchored(f"block {number} is not on this chain", detail={"block": number})
    slot = record_slot(seen.submitter, root)
    try:
        answer = rpc.request("eth_getProof", [anchor.registry, ["0x" + slot.hex()], hex(number)])
    except RpcError:
        return None, number, str(block["hash"]).lower()
    try:
        state = SealedState(
            header=_hex(header_rlp(block)),
            account_proof=tuple(answer["accountProof"]),
            storage_proof=tuple(answer["storageProof"][0]["proof"]),
        )
    except (TypeError, KeyError, IndexError):
        raise BadInput(
            f"block {number}: the node gave no storage proof (eth_getProof): not sealed", detail={"block": number}
        ) from None
    later = str(block["hash"]).lower()
    sealed = anchor.sealed.model_copy(update={"state": state}) if anchor.sealed is not None else None
    try:
        check_state_against(
            anchor.model_copy(update={"sealed": sealed}),
            root,
            seen.submitter,
            seen.timestamp,
            later,
            anchor.code_hash,
            "the chain's hash",
        )
    except AnchorError as exc:
        raise BadInput(
            f"block {number}: the node's state proof does not check ({exc}): not sealed", detail={"block": number}
        ) from None
    return state, number, later


def _block_receipts(rpc: Rpc, number: int, block: dict[str, Any]) -> list[dict[str, Any]]:
    """Every receipt of block `number`: `eth_getBlockReceipts` where the node has it, else one by one."""
    from anchor.chain.rpc import RpcError

    try:
        found = rpc.request("eth_getBlockReceipts", [hex(number)])
        if isinstance(found, list):
            return found
    except RpcError:
        pass
    out = []
    for tx in block.get("transactions") or []:
        one = rpc.get_transaction_receipt(str(tx))
        if one:
            out.append(one)
    return out


def seal(settings: Settings, target: Path, refresh: bool = False) -> SealedProof:
    """Seal every anchor of the proof of `target` (a path, or the proof file itself), reading the chain
    each names (its `--rpc-url`, or the local chain); the proof is rewritten atomically, and nothing but
    each anchor's `sealed` section changes. Each seal carries the registry's record as of the latest block
    (`sealed.state`), which shows offline whether it was retracted by then; `refresh` moves that state on
    to the latest block for anchors sealed before. A pending proof is sealed when it is upgraded."""
    from anchor.chain.open import open_chain
    from anchor.chain.presets import chain_name
    from anchor.proof.file import PendingProof, load_any, write_proof
    from anchor.proof.locate import proof_of

    proof_path = proof_of(target)
    proof = load_any(proof_path)
    if isinstance(proof, PendingProof):
        raise NotAnchored(
            f"{proof_path}: pending, nothing on chain to seal yet (hint: anchor upgrade --seal)",
            detail={"file": str(proof_path)},
        )
    handle = open_chain(settings)
    anchors = proof.all_anchors()
    done, already, refreshed, stateless, blocks = 0, 0, 0, 0, []
    new: list[Any] = []
    elsewhere: list[int] = []
    for each in anchors:
        anchor = each.anchor
        if anchor.chain_id != handle.chain_id:  # sealed by a second run, with that chain's --rpc-url
            elsewhere.append(anchor.chain_id)
            new.append(each)
            continue
        if anchor.sealed is not None and not refresh:
            already += 1
            new.append(each)
            continue
        root = bytes.fromhex(each.batch.root[2:])
        if anchor.sealed is not None:
            sealed, block_hash = anchor.sealed, str((handle.rpc.get_block(anchor.block_number) or {}).get("hash", ""))
            already, refreshed = already + 1, refreshed + 1
        else:
            (sealed, block_hash), done = seal_anchor(handle.rpc, anchor), done + 1
        state, later, later_hash = seal_state(
            handle.rpc, anchor.model_copy(update={"sealed": sealed}), root, block_hash.lower()
        )
        blocks.append((anchor.chain_id, anchor.block_number, block_hash.lower()))
        if later != anchor.block_number and state is not None:
            blocks.append((anchor.chain_id, later, later_hash))
        if state is None:
            stateless += 1
        else:
            sealed = sealed.model_copy(update={"state": state})
        new.append(each.model_copy(update={"anchor": anchor.model_copy(update={"sealed": sealed})}))
    if not done and not already:
        chains = ", ".join(chain_name(c) for c in sorted(set(elsewhere)))
        raise BadInput(
            f"{proof_path}: its anchors are on {chains}, the RPC endpoint serves"
            f" {chain_name(handle.chain_id)}: seal it with that chain's rpc_url",
            detail={"field": "anchor.chain_id", "inputs": ["rpc_url"]},
        )
    first, rest = new[0], new[1:]
    updated = proof.model_copy(update={"anchor": first.anchor, "anchors": tuple(rest) if proof.anchors else None})
    if done or refreshed:
        write_proof(updated, proof_path)
    return SealedProof(proof_path, done, already, tuple(blocks), refreshed, stateless)
