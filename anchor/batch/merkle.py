"""OpenZeppelin StandardMerkleTree over one `bytes32` value per leaf.

Why this tree and not our own: the EVM (`AnchorRegistry.verifyInclusion`, OpenZeppelin's
`MerkleProof.verify`) and public tools (`@openzeppelin/merkle-tree`) all check it, so a proof needs
nothing from us. Leaves are keccak256(keccak256(abi.encode(value))); pairs are sorted before hashing;
leaves are sorted by hash and laid out in OpenZeppelin's heap order, so roots match the JS tool.
"""

from __future__ import annotations

from dataclasses import dataclass

from anchor.errors import BadInput
from anchor.manifest.keccak import keccak256 as keccak
from anchor.record import Value


def leaf_of(item: bytes) -> bytes:
    """The leaf of a 32-byte value: abi.encode(bytes32) is the value itself."""
    if len(item) != 32:
        raise BadInput(f"a batch item is 32 bytes, got {len(item)}")
    return keccak(keccak(item))


def hash_pair(a: bytes, b: bytes) -> bytes:
    return keccak(a + b) if a < b else keccak(b + a)


def process_proof(item: bytes, proof: list[bytes]) -> bytes:
    """The root that `proof` leads to from `item`, exactly as the registry computes it."""
    node = leaf_of(item)
    for sibling in proof:
        node = hash_pair(node, sibling)
    return node


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class BatchTree(Value):
    """A built tree; `proof(item)` gives the sibling list for one of its items."""

    tree: tuple[bytes, ...]
    positions: dict[bytes, int]

    @classmethod
    def build(cls, items: list[bytes]) -> BatchTree:
        if not items:
            raise BadInput("a batch needs at least one item")
        if len(set(items)) != len(items):
            raise BadInput("a batch must not contain the same item twice")
        leaves = sorted((leaf_of(item), item) for item in items)
        size = 2 * len(leaves) - 1
        tree: list[bytes] = [b""] * size
        positions: dict[bytes, int] = {}
        for index, (leaf, item) in enumerate(leaves):
            tree[size - 1 - index] = leaf
            positions[item] = size - 1 - index
        for i in range(size - len(leaves) - 1, -1, -1):
            tree[i] = hash_pair(tree[2 * i + 1], tree[2 * i + 2])
        return cls(tuple(tree), positions)

    @property
    def root(self) -> bytes:
        return self.tree[0]

    def proof(self, item: bytes) -> list[bytes]:
        try:
            index = self.positions[item]
        except KeyError:
            raise BadInput(f"0x{item.hex()} is not in this batch") from None
        siblings = []
        while index > 0:
            siblings.append(self.tree[index + 1 if index % 2 == 1 else index - 1])
            index = (index - 1) // 2
        return siblings
