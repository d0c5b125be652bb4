"""The once-per-root floor verifier: what a verifier of one-file proofs must read from the chain, read
once per thing it needs, and nothing of ours.

For each path listed (one a line, as `anchor verify --from` reads them): read `<PATH>.anchor.json` and
BLAKE3 the file against the proof's entry. From the chain, on one kept-alive HTTP connection: one
`eth_getTransactionReceipt` per transaction (the submitter, from its RootAnchored log) and one
`eth_call verifyInclusion(submitter, root, path, item)` per (registry, root), with the first item's
path; every other item of that root has its path walked here (OpenZeppelin's sorted-pair keccak tree,
as the registry walks it) to the same root. No canonical JSON, no file-tree root, no registry code
check, no finality: a floor, not a verifier anyone should use. Beside benchmarks/floor_verify.py,
which makes one eth_call per proof, this is the floor of a verifier that reads the chain once per root.

    python benchmarks/floor_verify_per_root.py RPC_URL REGISTRY paths.txt
"""

from __future__ import annotations

import sys

from floor_verify import connect, inclusion, listed
from sha3 import keccak_256


def _keccak(data: bytes) -> bytes:
    return keccak_256(data).digest()


def root_of(item: bytes, siblings: list[bytes]) -> bytes:
    node = _keccak(_keccak(item))
    for sibling in siblings:
        node = _keccak(node + sibling) if node < sibling else _keccak(sibling + node)
    return node


def main() -> None:
    rpc, registry, listing = sys.argv[1], sys.argv[2], sys.argv[3]
    call = connect(rpc)
    roots: dict[tuple[str, str], bool] = {}
    bad = 0
    for proof, submitter in listed(listing, call):
        if proof is None:
            bad += 1
            continue
        root = proof["batch"]["root"]
        key = (proof["anchor"]["registry"].lower(), root)
        if key not in roots:
            data = inclusion(submitter, proof)
            roots[key] = int(str(call("eth_call", [{"to": registry, "data": data}, "latest"])), 16) == 1
        siblings = [bytes.fromhex(s[2:]) for s in proof["batch"]["proof"]]
        walked = root_of(bytes.fromhex(proof["manifest_digest"][2:]), siblings) == bytes.fromhex(root[2:])
        bad += not (roots[key] and walked)
    print(f"floor: {bad} not verified ({len(roots)} roots read)")


if __name__ == "__main__":
    main()
