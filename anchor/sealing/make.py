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

from anchor.errors import BadInput, NotAnchored

if TYPE_CHECKING:
    from anchor.chain.rpc import Rpc
    from anchor.proof.file import ChainAnchor, Sealed
    from anchor.settings.session import Settings


@dataclass(frozen=True, slots=True)
class SealOutcome:
    proof: Path
    sealed: int
    """Anchors sealed now."""
    already: int
    """Anchors that were sealed before (left as they were)."""
    blocks: tuple[tuple[int, int, str], ...]
    """(chain id, block number, block hash) of each sealed anchor: the blocks a verifier must trust."""


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


def seal(settings: Settings, target: Path) -> SealOutcome:
    """Seal every anchor of the proof of `target` (a path, or the proof file itself), reading the chain
    each names (its `--rpc-url`, or the local chain); the proof is rewritten atomically, and nothing but
    each anchor's `sealed` section changes. A pending proof is sealed when it is upgraded."""
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
    done, already, blocks = 0, 0, []
    new: list[Any] = []
    elsewhere: list[int] = []
    for each in anchors:
        anchor = each.anchor
        if anchor.chain_id != handle.chain_id:  # sealed by a second run, with that chain's --rpc-url
            elsewhere.append(anchor.chain_id)
            new.append(each)
            continue
        if anchor.sealed is not None:
            already += 1
            new.append(each)
            continue
        sealed, block_hash = seal_anchor(handle.rpc, anchor)
        blocks.append((anchor.chain_id, anchor.block_number, block_hash))
        new.append(each.model_copy(update={"anchor": anchor.model_copy(update={"sealed": sealed})}))
        done += 1
    if not done and not already:
        chains = ", ".join(chain_name(c) for c in sorted(set(elsewhere)))
        raise BadInput(f"{proof_path}: its anchors are on {chains}, the RPC endpoint serves"
                       f" {chain_name(handle.chain_id)}: seal it with that chain's rpc_url",
                       detail={"field": "anchor.chain_id", "inputs": ["rpc_url"]})  # fmt: skip
    first, rest = new[0], new[1:]
    updated = proof.model_copy(update={"anchor": first.anchor, "anchors": tuple(rest) if proof.anchors else None})
    if done:
        write_proof(updated, proof_path)
    return SealOutcome(proof_path, done, already, tuple(blocks))
