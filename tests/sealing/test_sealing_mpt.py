"""anchor.sealing.mpt, the offline verdict's receipt-proof walker, against py-trie
(`HexaryTrie.get_from_proof`), Ethereum's maintained Merkle-Patricia trie.

A seeded generator builds random tries with py-trie (keys that share prefixes and keys that are prefixes
of others, so branch values, extensions and leaves all occur; short values, so nodes are embedded in
their parents; receipts-trie keys, rlp(index), beside arbitrary ones), then asks both for a key, present
or absent, with the honest proof or an edited one: a wrong root, a node dropped, a byte flipped, a node
of another path added, the proof shuffled, another key asked. The rule: where the walker answers, py-trie
gives the same answer; where py-trie refuses, the walker refuses with a `TrieProofError`; where py-trie
answers and the walker refuses, the proof held a node off the key's path, which the walker refuses by
design. Hostile nodes (5,000-deep nesting, extra nodes, an extra empty node) give typed errors."""

from __future__ import annotations

import os
import random
from collections import Counter

import pytest
import rlp
from trie.hexary import HexaryTrie

from anchor.manifest.keccak import keccak256
from anchor.sealing.mpt import EMPTY_TRIE_ROOT, TrieProofError, proof_value
from anchor.sealing.rlp import encode
from tests.reference_impl import rlp_nested_lists

TRIES = 1_000
QUERIES = 11  # per trie: 11,000 cases


def _key(rng: random.Random) -> bytes:
    if rng.random() < 0.3:
        return encode(rng.randrange(0, 300))  # a receipts trie's key
    return bytes(rng.choice(b"\x00\x01\x10\x11\xff") for _ in range(rng.randrange(0, 5)))


def _value(rng: random.Random) -> bytes:
    return rng.randbytes(rng.choice([1, 2, 5, 20, 40, 120]))


def _build(rng: random.Random) -> tuple[HexaryTrie, dict[bytes, bytes]]:
    trie, held = HexaryTrie({}), {}
    for _ in range(rng.randrange(1, 40)):
        key, value = _key(rng), _value(rng)
        trie.set(key, value)  # type: ignore[no-untyped-call]
        held[key] = value
    return trie, held


def _proof(trie: HexaryTrie, key: bytes) -> list[bytes]:
    return [rlp.encode(node) for node in trie.get_proof(key)]  # type: ignore[no-untyped-call]


def _py_trie(root: bytes, key: bytes, proof: list[bytes]) -> bytes | type[Exception]:
    try:
        return bytes(HexaryTrie.get_from_proof(root, key, [rlp.decode(n) for n in proof]))  # type: ignore[no-untyped-call]
    except Exception:  # noqa: BLE001 -- any refusal of py-trie's (BadTrieProof, ValidationError, ...) is a refusal
        return Exception


def _walker(root: bytes, key: bytes, proof: list[bytes]) -> bytes | type[Exception]:
    try:
        return proof_value(root, key, proof)
    except TrieProofError:
        return Exception


def test_the_walker_agrees_with_py_trie_on_eleven_thousand_random_proofs() -> None:
    seed = int(os.environ.get("ANCHOR_MPT_SEED", "20260"))
    rng, seen = random.Random(seed), Counter[str]()
    for _ in range(TRIES):
        trie, held = _build(rng)
        other, _ = _build(rng)
        root = bytes(trie.root_hash)
        for _ in range(QUERIES):
            key = rng.choice([*held, _key(rng)])
            honest = _proof(trie, key)
            proof, ask, at = list(honest), key, root
            edit = rng.choice(["honest", "wrong root", "drop", "flip", "extra", "shuffle", "other key"])
            if edit == "wrong root":
                at = rng.choice([bytes(other.root_hash), rng.randbytes(32), EMPTY_TRIE_ROOT])
            elif edit == "drop" and proof:
                del proof[rng.randrange(len(proof))]
            elif edit == "flip" and proof:
                node = bytearray(proof.pop(rng.randrange(len(proof))))
                node[rng.randrange(len(node))] ^= 1 << rng.randrange(8)
                proof.insert(rng.randrange(len(proof) + 1), bytes(node))
            elif edit == "extra":
                proof.append(rng.choice([*_proof(trie, rng.choice([*held])), *_proof(other, _key(rng)), b"\x80"]))
            elif edit == "shuffle":
                rng.shuffle(proof)
            elif edit == "other key":
                ask = rng.choice([*held, _key(rng)])
            theirs, ours = _py_trie(at, ask, proof), _walker(at, ask, proof)
            where = f"seed {seed}, {edit}: root {at.hex()}, key {ask.hex()}, proof {[n.hex() for n in proof]}"
            if ours is not Exception:
                assert ours == theirs, where
            elif theirs is not Exception:  # refused by the walker alone: only for a node off the path
                on_path = set(_proof(trie, ask)) if at == root else set()
                assert len(set(proof)) < len(proof) or not set(proof) <= on_path, where
            seen[f"{edit}: {'refused' if ours is Exception else 'absent' if ours == b'' else 'value'}"] += 1
            seen["embedded node"] += any(isinstance(c, list) for n in honest for c in _children(n))
            seen["branch value"] += ask in held and any(k != ask and k.startswith(ask) for k in held)
    assert sum(seen[f"{e}: {o}"] for e in ["honest"] for o in ["value", "absent"]) > 1000, seen
    for case in [
        "honest: value",
        "honest: absent",
        "wrong root: refused",
        "drop: refused",
        "flip: refused",
        "extra: refused",
        "shuffle: value",
        "other key: value",
        "other key: absent",
        "embedded node",
        "branch value",
    ]:
        assert seen[case] > 30, (case, sorted(seen.items()))


def _children(node: bytes) -> list[object]:
    decoded = rlp.decode(node)
    return list(decoded) if isinstance(decoded, list) else []


def test_hostile_nodes_are_refused_with_typed_errors_never_recursion() -> None:
    trie = HexaryTrie({})
    for n in range(40):
        trie.set(encode(n), b"receipt %d" % n * 4)  # type: ignore[no-untyped-call]
    root, key = bytes(trie.root_hash), encode(7)
    honest = _proof(trie, key)
    assert proof_value(root, key, honest) == b"receipt 7" * 4
    deep = rlp_nested_lists(5000)
    cases = {
        "nested deeper": (keccak256(deep), [deep]),
        "off the key's path": (root, [*honest, _proof(trie, encode(30))[-1]]),
        "off the key's path ": (root, [*honest, b"\x80"]),  # an extra empty trie node
        "twice": (root, [*honest, honest[-1]]),
        "no node hashing": (root, honest[1:]),
        "a trie node of 3 items": (keccak256(encode([b"a", b"b", b"c"])), [encode([b"a", b"b", b"c"])]),
        "not hex-prefix": (keccak256(encode([b"\x40", b"v"])), [encode([b"\x40", b"v"])]),
        "extension with an empty path": (keccak256(encode([b"\x00", bytes(32)])), [encode([b"\x00", bytes(32)])]),
    }
    for why, (at, proof) in cases.items():
        with pytest.raises(TrieProofError, match=why.strip()):
            proof_value(at, key, proof)
