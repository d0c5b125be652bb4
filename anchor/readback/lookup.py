"""Find what the chain knows about a key: a path, a manifest digest, a batch root or a git commit.

Every answer comes from a live read of the registry; the local proof store only tells which root
a manifest digest was batched into.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from anchor.chain.explorer import links
from anchor.chain.open import open_chain, open_registry
from anchor.chain.registry import LineageRecord, Registry, Retraction
from anchor.errors import NotAnchored
from anchor.manifest.filetree import hash_tree
from anchor.manifest.onchain import commit_key, parse_address, parse_hex32
from anchor.proof.file import ProofFile, load_proof
from anchor.settings.session import Settings


def lookup(
    key: str, settings: Settings, researcher: str | None = None, find: Callable[[bytes], ProofFile | None] | None = None
) -> dict[str, Any]:
    """A JSON-able description of the on-chain record for `key`; raises `NotAnchored` if none exists.
    `find`: the proof store (anchor.anchoring.proofs), which tells which batch a manifest digest is in.

    A commit's lineage record is read by (researcher, commit) on registry v2 when `researcher` is
    given (a constant number of calls at any height); otherwise the earliest record of the commit,
    found by a bounded walk of the registry's events from its deployment block."""
    if researcher is not None:  # a typo is exit 2 before any chain is opened
        researcher = parse_address(researcher, "researcher").lower()
    body = key.lower().removeprefix("0x")
    if not Path(key).exists() and not (_is_hex(body) and (7 <= len(body) <= 40 or len(body) == 64)):
        from anchor.errors import BadInput, did_you_mean_path

        raise BadInput(
            f"{key}: no such file or folder{did_you_mean_path(key)}, and not a digest, batch root or commit (hex)",
            detail={"field": "key"},
        )
    handle = open_chain(settings)
    registry = open_registry(settings, handle)

    value: bytes | None = None
    stored_proof: Path | None = None
    if Path(key).exists():
        stored_proof, body = _path_key(Path(key))
    elif 7 <= len(body) < 40 and _is_hex(body):  # a commit prefix, as git and the chain-only explorer take
        body = _commit_with_prefix(registry, body, researcher)
    if len(body) == 40:
        by_commit = registry.lineage(commit_key(body), researcher)
        if by_commit is None:
            by = f" by {researcher}" if researcher else ""
            raise NotAnchored(f"no lineage record for commit {body}{by}", detail={"key": key})
        return _lineage_answer(by_commit, handle.chain_id, registry, settings)

    value = parse_hex32(body, "key")
    root, digest_hex, record = value, None, None
    stored = stored_proof or settings.layout.proof(value)
    proof = load_proof(stored) if stored.is_file() else find(value) if find is not None else None
    if proof is not None:
        root, digest_hex = bytes.fromhex(proof.batch.root[2:]), proof.manifest_digest
        record = registry.root_record_of_tx(root, proof.anchor.tx_hash)  # v3: the proof's transaction's submitter
    else:
        record = registry.root_record(root)  # v3: its first submitter's, found by the root's events
    if record is not None:
        tx_hash = record.tx_hash or registry.root_tx(root, record.block_number, record.submitter)
        read_at = registry.checked_block()
        return {
            "kind": "batch_root",
            "manifest_digest": digest_hex,
            "root": record.root,
            "submitter": record.submitter,
            "timestamp": record.timestamp,
            "anchored_at": datetime.fromtimestamp(record.timestamp, UTC).isoformat(timespec="seconds"),
            "block_number": record.block_number,
            "tx_hash": tx_hash,
            "chain_id": handle.chain_id,
            "registry": registry.address,
            "read_at_block": read_at,
            "finality": registry.finality(record.block_number, read_at)[0],
            "retracted": _retraction(registry.root_retraction(record), proof),
            "links": links(
                handle.chain_id,
                tx_hash=tx_hash,
                block=record.block_number,
                address=registry.address,
                page=f"/explorer/bundle/{digest_hex}" if digest_hex else f"/explorer/batch/{record.root}",
                data_dir=settings.data_dir,
                explorer_url=settings.env.explorer_url,
            ),
        }
    lineage = registry.lineage(value, researcher)
    if lineage is not None:
        return _lineage_answer(lineage, handle.chain_id, registry, settings)
    raise NotAnchored(
        f"nothing is anchored under {key} on chain {handle.chain_id}",
        detail={"key": key, "read_at_block": registry.checked_block()},
    )


def lookup_agreed(
    key: str,
    settings: Settings,
    researcher: str | None = None,
    quorum: int | None = None,
    find_for: Callable[[Settings], Callable[[bytes], ProofFile | None]] | None = None,
) -> dict[str, Any]:
    """`anchor lookup KEY`: `lookup` on every read endpoint of `settings`, `quorum` of them agreeing on the
    record (not on how far each has synced: the read block, finality and links may differ); with several
    endpoints, the answer says how it was agreed (`quorum`). `find_for(settings)`: the proof store each
    endpoint's lookup may consult."""
    from anchor.readback.quorum import read_agreed

    found, agreement = read_agreed(
        settings,
        lambda one: lookup(key, one, researcher, find_for(one) if find_for else None),
        lambda answer: {k: v for k, v in answer.items() if k not in ("read_at_block", "links", "finality")},
        quorum,
    )
    return found if agreement is None else {**found, "quorum": agreement}


def _retraction(retraction: Retraction | None, proof: ProofFile | None) -> dict[str, Any] | None:
    """A record's retraction in the words of the `Retracted` verdict (`retraction_fields`), or None."""
    from anchor.readback.verifier import retraction_fields

    return None if retraction is None else retraction_fields(retraction, proof)


def _path_key(path: Path) -> tuple[Path | None, str]:
    """A path's key: the manifest digest its proof names when it has one (the proof also says which root
    it was batched into), else its digest under the default rules (.git/ and .anchorignore left out, as
    `stamp` leaves them out)."""
    from anchor.manifest.exclude import Rules
    from anchor.proof.locate import find_proof

    proof = find_proof(path)
    if proof.is_file():
        return proof, load_proof(proof).manifest_digest.removeprefix("0x")
    return None, hash_tree(path, Rules.for_root(path, (), defaults=True)).digest.hex()


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdef" for c in text)


def _commit_with_prefix(registry: Registry, prefix: str, researcher: str | None) -> str:
    """The one commit on chain whose id starts with `prefix` (7+ hex digits, as git abbreviates); a
    prefix two commits share is refused naming both, one no record has is not anchored."""
    from anchor.errors import BadInput

    matches = sorted({c for c in registry.lineage_commits(researcher) if c.startswith(prefix)})
    if not matches:
        raise NotAnchored(f"no lineage record for a commit starting {prefix}", detail={"key": prefix})
    if len(matches) > 1:
        raise BadInput(
            f"commit prefix {prefix} is ambiguous: {', '.join(m[:12] for m in matches[:5])}; give more digits",
            detail={"field": "key", "matches": matches[:20]},
        )
    return matches[0]


def _lineage_answer(record: LineageRecord, chain_id: int, registry: Registry, settings: Settings) -> dict[str, Any]:
    from anchor.manifest.onchain import PROMOTION_TAG

    read_at = registry.checked_block()
    # a model's promotion (anchor.mlflow) is a lineage record too, told apart by its diffHash
    promotion = record.diff_hash == "0x" + PROMOTION_TAG.hex()
    page = f"/explorer/promotion/{record.commit}" if promotion else f"/explorer/attempt/{record.commit[2:42]}"
    return {
        "kind": "lineage",
        "what": "model promotion" if promotion else "attempt",
        "record": {k: getattr(record, k) for k in record.__slots__},
        "read_at_block": read_at,
        "finality": registry.finality(record.block_number, read_at)[0],
        "retracted": _retraction(registry.lineage_retraction(record), None),
        "links": links(
            chain_id,
            tx_hash=record.tx_hash,
            block=record.block_number,
            address=registry.address,
            page=page,
            data_dir=settings.data_dir,
            explorer_url=settings.env.explorer_url,
        ),
    }
