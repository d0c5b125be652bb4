"""The proof store: each anchored batch kept once, and any item's proof derived from it on demand.

Why not a file per item (what data dirs held up to stop 54): at a million stamps that was 4.2 GB and a
million inodes, where a batch's Merkle tree (32 bytes a node) and the journal's rows (the item's
manifest and annotations, which the journal keeps anyway) already determine every item's proof. Now a
confirmed batch leaves one file, `<data dir>/batches/<chain>/<registry>/<root>.tree`:

    one line of JSON (format, chain_id, registry, code_hash, tx_hash, block_number, nodes), "\\n",
    then the tree's nodes, 32 bytes each, in OpenZeppelin's heap order (anchor.batch.merkle)

An item's proof is its journal row, the header's anchor and its Merkle path read from those nodes
(the leaves are sorted, so a binary search finds it): byte for byte the file the store used to write
(tests/anchoring/test_proof_store.py compares them). Nothing here is trusted more than a proof file was: a path
that does not lead from the item to the journal's root is not used (the proof is rebuilt from the
journal's items of the batch instead), and every proof is checked against the chain when verified.
A data dir from before keeps its per-item files; they are still read, first.

User-requested copies (`anchor stamp --out`, a folder's `<DIR>.anchor.json`) are still written per
item, where the user asked for them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from anchor.batch.merkle import BatchTree, leaf_of, process_proof
from anchor.errors import AnchorError, JournalError
from anchor.files import atomic_write_many, private_dir
from anchor.journal.reads import confirmed_batch_rows, confirmed_item
from anchor.journal.store import Journal
from anchor.layout import DataDir
from anchor.proof.file import BatchPath, ChainAnchor, ProofFile, decode_json, load_proof, past_64_bits
from anchor.settings.session import Settings

TREE_FORMAT = "anchor-batch-tree/1"
NODE = 32
CHAIN_FIELDS = ("chain_id", "registry", "code_hash", "tx_hash", "block_number")


def _anchor_of(effect: Any, registry: str, code_hash: str) -> ChainAnchor:
    return ChainAnchor(
        chain_id=effect["chain_id"],
        registry=registry,
        code_hash=code_hash,
        tx_hash="0x" + bytes(effect["tx_hash"] or b"\0" * 32).hex(),
        block_number=int(effect["block_number"]),
    )


def _proof_of(item: Any, siblings: list[bytes], root: bytes, anchor: ChainAnchor) -> ProofFile:
    """One item's proof: its journal row, its Merkle path and the batch's anchor (the one layout)."""
    digest = bytes(item["digest"])
    payload = decode_json(item["payload"])  # the listing of a folder of 100,000 files is 15 MB of it
    if past_64_bits(payload.get("annotations")):  # a user's integer past 64 bits, read exactly
        payload = json.loads(item["payload"])
    files = payload.get("files")
    return ProofFile(
        manifest=decode_json(item["identity"]),
        annotations=payload.get("annotations", {}),
        files=None if files is None else tuple(files),
        manifest_digest="0x" + digest.hex(),
        batch=BatchPath(
            item="0x" + digest.hex(),
            leaf="0x" + leaf_of(digest).hex(),
            proof=tuple("0x" + p.hex() for p in siblings),
            root="0x" + root.hex(),
        ),
        anchor=anchor,
    )


def _batch_tree(effect: Any, items: list[Any]) -> BatchTree:
    """The tree of a mined root effect; its items (and the batch's salt, when a stranger took its first
    root: anchor.journal.effects) must rebuild the anchored root."""
    salt = json.loads(effect["args"] or "{}").get("salt")
    tree = BatchTree.build([bytes(item["digest"]) for item in items] + ([bytes.fromhex(salt)] if salt else []))
    if tree.root != bytes(effect["key"]):
        raise JournalError(f"journal: the items of batch {effect['id']} do not rebuild its root")
    return tree


def tree_bytes(tree: BatchTree, anchor: ChainAnchor) -> bytes:
    head = {"format": TREE_FORMAT, **{k: getattr(anchor, k) for k in CHAIN_FIELDS}, "nodes": len(tree.tree)}
    return json.dumps(head, sort_keys=True, separators=(",", ":")).encode() + b"\n" + b"".join(tree.tree)


def write_batch_proofs(
    layout: DataDir,
    effect: Any,
    items: list[Any],
    registry: str,
    code_hash: str,
    paths: dict[int, list[Path]],
    built: dict[bytes, tuple[ProofFile, bytes]] | None = None,
) -> dict[int, str]:
    """Keep the batch in the store and write the copies users asked for; returns {item id: reason} for
    the items whose proof could not be kept. `built`, when given, receives each kept proof and its written
    bytes by manifest digest: what the process that flushed may give again without reading the store.

    Why per item: the root is on chain whatever happens here, so one proof that cannot be written (a
    symlink planted at its path, a full disk, a journal row no JSON writer can encode) must fail that
    item alone; raising would leave the effect `mined` and stop every later flush behind it."""
    tree = _batch_tree(effect, items)
    anchor = _anchor_of(effect, registry, code_hash)
    store = layout.batch_tree(anchor.chain_id, registry, tree.root)
    owners: list[int | None] = [None]
    writes: list[tuple[Path, bytes]] = [(store, tree_bytes(tree, anchor))]
    failed: dict[int, str] = {}
    try:
        private_dir(store.parent)
    except AnchorError as exc:
        failed.update({int(item["id"]): f"{store}: {exc.message}"[:500] for item in items})
        writes.clear()
        owners.clear()
    for item in items:
        item_id = int(item["id"])
        proof = _proof_of(item, tree.proof(bytes(item["digest"])), tree.root, anchor)
        try:  # every item's proof is encoded, asked for or not: the store must never hold one it cannot give
            data = proof.dumps().encode("utf-8")
        except ValueError as exc:  # UnicodeEncodeError: a row no UTF-8 writer can encode
            failed[item_id] = f"{type(exc).__name__}: {exc}"[:500]
            continue
        for target in paths.get(item_id, []):
            owners.append(item_id)
            writes.append((target, data))
        if built is not None:
            built[bytes(item["digest"])] = (proof, data)
    for index, error in atomic_write_many(writes).items():
        reason = error.message if isinstance(error, AnchorError) else f"{type(error).__name__}: {error}"
        owner = owners[index]
        for item_id in [owner] if owner is not None else [int(item["id"]) for item in items]:
            failed.setdefault(item_id, f"{writes[index][0]}: {reason}"[:500])
    if built is not None:
        for item in items:
            if int(item["id"]) in failed:
                built.pop(bytes(item["digest"]), None)
    return failed


def _path_in_tree(data: bytes, digest: bytes) -> tuple[dict[str, Any], list[bytes], bytes] | None:
    """(header, siblings, root) of `digest` in a tree file's bytes; None when the file does not hold it."""
    end = data.find(b"\n")
    try:
        head = json.loads(data[:end]) if end > 0 else None
    except ValueError:
        return None
    if not isinstance(head, dict) or head.get("format") != TREE_FORMAT or not isinstance(head.get("nodes"), int):
        return None
    size, body = head["nodes"], data[end + 1 :]
    if size < 1 or size % 2 == 0 or len(body) != size * NODE:
        return None

    def node(i: int) -> bytes:
        return body[i * NODE : (i + 1) * NODE]

    # the leaves sit at size-1-k for the k-th smallest (anchor.batch.merkle): search k
    wanted, low, high = leaf_of(digest), 0, (size + 1) // 2
    while low < high:
        middle = (low + high) // 2
        if node(size - 1 - middle) < wanted:
            low = middle + 1
        else:
            high = middle
    index = size - 1 - low
    if low == (size + 1) // 2 or node(index) != wanted:
        return None
    siblings = []
    while index > 0:
        siblings.append(node(index + 1 if index % 2 == 1 else index - 1))
        index = (index - 1) // 2
    return head, siblings, node(0)


def stored_proof(
    layout: DataDir, journal: Journal | None, digest: bytes, chain_id: int | None = None, code_hash: str | None = None
) -> ProofFile | None:
    """The proof of manifest `digest` as this data dir (and its journal) can give it; None when the
    manifest is not anchored here (on `chain_id`, when given).

    Read in this order: a per-item file from before the batch store; the batch's tree file with the
    journal's row; the journal alone (a replica sharing a PostgreSQL journal has no tree file of a
    batch another replica flushed: it rebuilds the same proof, byte for byte, from the batch's items).
    `code_hash`: the registry's, for that last case (the tree file keeps it; the journal does not)."""
    legacy = layout.proof(digest)
    if legacy.is_file():
        proof = load_proof(legacy)
        if chain_id is None or proof.anchor.chain_id == chain_id:  # a data dir used on two chains kept both
            return proof
    if journal is None:
        return None
    found = confirmed_item(journal, digest, chain_id)
    if found is None:
        return None
    effect, item = found
    store = layout.batch_tree(int(effect["chain_id"]), str(effect["registry"]), bytes(effect["key"]))
    try:
        held = _path_in_tree(store.read_bytes(), digest)
    except OSError:
        held = None
    if held is not None:
        head, siblings, root = held
        registry = str(head.get("registry", ""))
        try:  # the journal's row says which transaction; the file adds the registry's spelling and code hash
            anchor = _anchor_of(effect, registry, str(head.get("code_hash")))
        except ValueError:  # RecordError: a header someone edited
            anchor = None
        same = registry.lower() == str(effect["registry"]).lower() and root == bytes(effect["key"])
        same = same and (code_hash is None or anchor is None or anchor.code_hash == code_hash)
        if anchor is not None and same and process_proof(digest, siblings) == root:
            return _proof_of(item, siblings, root, anchor)
    if code_hash is None:
        from anchor.chain.artifact import runtime_code_hash

        code_hash = runtime_code_hash()
    return proof_from_journal(journal, int(effect["chain_id"]), digest, code_hash)


def proof_from_journal(journal: Journal, chain_id: int, digest: bytes, code_hash: str) -> ProofFile | None:
    """The proof of a confirmed item rebuilt from the journal alone, whatever the data dir holds (None:
    not anchored here): what a replica that flushed nothing gives."""
    found = confirmed_batch_rows(journal, chain_id, digest)
    if found is None:
        return None
    effect, items = found
    item = next(i for i in items if bytes(i["digest"]) == digest)
    tree = _batch_tree(effect, items)
    return _proof_of(item, tree.proof(digest), tree.root, _anchor_of(effect, effect["registry"], code_hash))


def store_finder(settings: Settings) -> Callable[[bytes], ProofFile | None]:
    """`stored_proof` for a reader holding only settings (the CLI's verify, lookup, statements): the
    journal is opened only when no older per-item file answers, and never created."""

    def find(digest: bytes) -> ProofFile | None:
        layout = settings.layout
        if layout.proof(digest).is_file():
            return stored_proof(layout, None, digest)
        if settings.journal_url is None and not layout.journal.is_file():
            return None
        from anchor.journal.backends import open_journal

        journal = open_journal(settings.data_dir, settings.journal_url)
        try:
            return stored_proof(layout, journal, digest)
        finally:
            journal.close()

    return find
