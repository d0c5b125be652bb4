"""The Merkle-Patricia proof walk (Yellow Paper, appendix D): the value a trie of a given root holds
under a key, from the nodes of one path, with nothing else trusted.

Why our own: `trie.hexary.HexaryTrie.get_from_proof` answers the same question, but importing it costs
a quarter of a second (`rlp`, `eth_utils`, `hexbytes`), more than the rest of an offline verdict. The
walk is thirty lines; tests/sealing/test_sealing_mpt.py holds it to py-trie on more than ten thousand random
tries (branch, extension and leaf nodes, embedded nodes, absent keys, wrong roots, extra nodes).

Where py-trie is lax this walk refuses, because a sealed proof is evidence and evidence has one form:
every node of the proof must be one the walk visits (an extra node, a repeated node or an extra empty
node is refused, so no two byte strings prove the same thing); a hex-prefix path must be canonical (flag
0-3, a zero pad nibble); an extension must have a path; a child reference must be empty, 32 bytes, or an
embedded node. Every refusal is a `TrieProofError` (a `ValueError`), never a RecursionError: the walk
is a loop that consumes at least one nibble of the key per node, and RLP nesting is bounded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from anchor.manifest.keccak import keccak256
from anchor.sealing.rlp import RlpError, decode, encode

if TYPE_CHECKING:
    from collections.abc import Sequence

    from anchor.sealing.rlp import Item

EMPTY_TRIE_ROOT = keccak256(b"\x80")
"""The root of a trie with no keys: keccak256 of the empty string's RLP."""


class TrieProofError(ValueError):
    """A proof that does not lead from the root to the key's value, or to the key's absence."""


def _nibbles(data: bytes) -> list[int]:
    return [half for byte in data for half in (byte >> 4, byte & 15)]


def _partial_path(encoded: Item) -> tuple[list[int], bool]:
    """(nibbles, is a leaf) of a hex-prefix encoded path (Yellow Paper, appendix C)."""
    if not isinstance(encoded, bytes) or not encoded:
        raise TrieProofError("a trie node's path is not a non-empty byte string")
    flag = encoded[0] >> 4
    if flag > 3 or (not flag & 1 and encoded[0] & 15):
        raise TrieProofError(f"a trie node's path prefix {encoded[0]:#04x} is not hex-prefix encoding")
    nibbles = _nibbles(encoded)
    return nibbles[1:] if flag & 1 else nibbles[2:], bool(flag & 2)


def proof_value(root: bytes, key: bytes, proof: Sequence[bytes]) -> bytes:
    """The value the trie of `root` holds under `key` (b"" when the proof shows the key absent), walking
    `proof`, the RLP of the nodes on the key's path in any order. `TrieProofError` when the proof lacks a
    node the path needs, holds one it does not, or holds anything malformed."""
    by_hash: dict[bytes, bytes] = {}
    for raw in proof:
        digest = keccak256(raw)
        if digest in by_hash:
            raise TrieProofError(f"the proof holds node {digest.hex()[:16]}… twice")
        by_hash[digest] = raw
    unused = set(by_hash)

    def node_at(ref: Item) -> Item:
        if isinstance(ref, list):  # embedded: a node whose RLP is under 32 bytes sits in its parent
            unused.discard(keccak256(encode(ref)))
            return ref
        if ref == b"" or ref == EMPTY_TRIE_ROOT:
            return b""
        if len(ref) != 32:
            raise TrieProofError(f"a trie child reference of {len(ref)} bytes (neither a hash nor a node)")
        raw = by_hash.get(ref)
        if raw is None:
            raise TrieProofError(f"the proof has no node hashing to {ref.hex()[:16]}…")
        unused.discard(ref)
        try:
            return decode(raw)
        except RlpError as exc:
            raise TrieProofError(f"trie node {ref.hex()[:16]}…: {exc}") from None

    if len(root) != 32:
        raise TrieProofError(f"a trie root of {len(root)} bytes")
    path, at = _nibbles(key), 0
    node = node_at(root)
    while True:
        if node == b"":  # an empty slot: the key is absent
            value: Item = b""
            break
        if not isinstance(node, list):
            raise TrieProofError("a trie node is not a list")
        if len(node) == 17:  # branch: sixteen children, then the value of a key ending here
            if at == len(path):
                value = node[16]
                break
            ref, at = node[path[at]], at + 1
        elif len(node) == 2:  # leaf (the rest of a key, a value) or extension (a shared run, a child)
            partial, leaf = _partial_path(node[0])
            if leaf:
                value = node[1] if path[at:] == partial else b""
                break
            if not partial:
                raise TrieProofError("a trie extension with an empty path")
            if path[at : at + len(partial)] != partial:
                value = b""
                break
            ref, at = node[1], at + len(partial)
        else:
            raise TrieProofError(f"a trie node of {len(node)} items")
        node = node_at(ref)
    if not isinstance(value, bytes):
        raise TrieProofError("a trie value is a list, not a byte string")
    if unused:
        raise TrieProofError(f"the proof holds {len(unused)} node(s) off the key's path")
    return value
