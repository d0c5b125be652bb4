"""Reading ahead of a verify of many proofs: the per-root reads of the next proofs asked together.

A verify of 1,000 proofs of 1,000 batches asks, per root, the transaction's receipt and the registry's
record: 2,000 round trips, each paid in this process's HTTP work and the endpoint's. Before checking the
next proof, `read_ahead` looks at the anchors of the next `AHEAD` proof files and asks their receipts in
one JSON-RPC batch, then their records in another (`Registry.read_ahead`). It changes no verdict: the
checklist asks every read as before, and is given the answer read ahead only for the same method and
params (the same registry, root, transaction and pinned block), which it checks as it checks any answer.
It only guesses which reads come next, from what the files claim: a file it cannot read or decode, or a
claim that is false, costs a read that is not used, and the checklist says what is wrong with the file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from anchor.readback.checklist import ChainReads

AHEAD = 32
"""How many proofs are read ahead at a time: a batch that anvil answers at about a third of the time of
its calls one by one, and little read in vain when a call is stopped early."""


def read_ahead(scope: ChainReads, paths: Sequence[Path]) -> int:
    """Ask, for each of `paths` whose proof names a registry this scope has read (and pinned), its
    receipt and its record, as `Registry.read_ahead` does: in one batch per kind and registry. Returns
    how many (root, transaction) pairs were asked that no read had asked before."""
    from anchor.proof.locate import claimed_anchor

    registries = tuple(r for r in scope.registries if r.rpc.url not in scope.down)  # a silent one: not asked
    forget(scope)  # what the window before read and no verdict took (a claim that was false) is dropped
    if not registries:
        return 0
    wanted: dict[int, list[tuple[bytes, str]]] = {}
    for path in paths:
        claim = claimed_anchor(path)
        if claim is None:  # whatever is wrong with it, the checklist says it for this path
            continue
        chain_id, address, tx_hash, root = claim
        for n, registry in enumerate(registries):
            if registry.chain_id == chain_id and registry.address.lower() == address.lower():
                wanted.setdefault(n, []).append((root, tx_hash))
    asked = 0
    for n, pairs in wanted.items():
        try:
            asked += registries[n].read_ahead(pairs)
        except Exception:  # noqa: BLE001, S112 - a guess that failed: each verdict reads for itself
            continue
    return asked


def forget(scope: ChainReads) -> None:
    """Drop what was read ahead and not taken (a call stopped early): it was this call's."""
    for registry in scope.registries:
        registry.rpc.forget_ahead()
