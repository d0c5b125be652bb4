"""Every proof form decoded once into one typed `Proof(subject, anchors)`.

Why one type: a proof reaches a verifier as a single-anchor file, a file stamped through several
services (more anchors, their signed receipts), a pending file (receipts only), a file whose anchors
are sealed for an offline check, or the in-toto statements `anchor attest` writes around a proof. The
checklist (anchor.readback.checklist) runs the same numbered steps on all of them; only decoding
differs, and decoding is where a malformed file is refused, with its field named (`ProofFormatError`,
`BadInput`, `Tampered` for a statement that contradicts the proof it carries), never a raw exception.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, NamedTuple

from anchor.errors import BadInput, Tampered
from anchor.proof.file import (
    BatchPath,
    ChainAnchor,
    PendingProof,
    ProofFile,
    Sealed,
    SealedState,
    load_any,
    parse_proof,
)
from anchor.proof.receipt import Receipt

Form = Literal["single", "multi", "pending", "statements"]
STATEMENTS_SUFFIX = ".intoto.jsonl"
"""How a statements file is named (`anchor attest` writes NAME.intoto.jsonl beside NAME)."""


def is_statements(path: Path) -> bool:
    """Whether `path` is a statements file rather than data with a proof beside it (its decoder,
    anchor.readback.statements, is imported only for one)."""
    return path.name.endswith(STATEMENTS_SUFFIX) and path.is_file()


class Anchor(NamedTuple):
    """One anchor of a proof and the evidence it carries: a chain anchor (read live through the quorum of
    read endpoints, or offline through its sealed header and receipt proof, and the registry's later
    storage proof), and a service's signed receipt. A pending anchor is a receipt with no chain anchor."""

    service: str | None
    """The service (URL) it was stamped through, or None: stamped with a key here ("local key")."""
    batch: BatchPath | None = None
    chain: ChainAnchor | None = None
    receipt: Receipt | None = None

    @property
    def sealed(self) -> Sealed | None:
        """The block header, receipt and receipts-trie proof (`anchor seal`), when it carries them."""
        return self.chain.sealed if self.chain is not None else None

    @property
    def state(self) -> SealedState | None:
        """The registry's record as of a later block (account and storage proof), when it carries it."""
        return self.sealed.state if self.sealed is not None else None

    @property
    def evidence(self) -> tuple[str, ...]:
        """What this anchor offers, in words: "chain", "sealed", "state", "receipt"."""
        kinds = [("chain", self.chain), ("sealed", self.sealed), ("state", self.state), ("receipt", self.receipt)]
        return tuple(kind for kind, held in kinds if held is not None)


class Proof(NamedTuple):
    """A proof as the checklist reads it: what is anchored (`subject`: the manifest identity, its digest
    and its listing, as the file holds them) and every anchor of it."""

    subject: ProofFile | PendingProof
    anchors: tuple[Anchor, ...]
    form: Form
    name: str
    """Where it was read from, for messages (a file, or a statements file's `predicate.proof`)."""
    statements: tuple[dict[str, Any], ...] = ()
    """The statements around the proof (form "statements"), each checked against what it binds."""

    @property
    def file(self) -> ProofFile | None:
        """The subject as a complete proof file (None while pending)."""
        return self.subject if isinstance(self.subject, ProofFile) else None


def from_file(found: ProofFile | PendingProof, name: str) -> Proof:
    """A decoded proof file, complete or pending, with one anchor or several."""
    if isinstance(found, PendingProof):
        receipts = tuple(Anchor(service=r.url, receipt=r) for r in found.receipts)
        return Proof(subject=found, anchors=receipts, form="pending", name=name)
    if not (found.anchors or found.receipts or found.service):
        return Proof(
            subject=found,
            anchors=(Anchor(service=None, batch=found.batch, chain=found.anchor),),
            form="single",
            name=name,
        )
    unclaimed = list(found.receipts or ())  # each receipt once: with the first anchor of its service, or alone
    held: list[Anchor] = []
    for each in found.all_anchors():
        receipt = next((r for r in unclaimed if r.url == each.service), None)
        if receipt is not None:
            unclaimed.remove(receipt)
        held.append(Anchor(service=each.service, batch=each.batch, chain=each.anchor, receipt=receipt))
    waiting = [Anchor(service=r.url, receipt=r) for r in unclaimed]
    return Proof(subject=found, anchors=(*held, *waiting), form="multi", name=name)


def load(path: Path) -> Proof:
    """A proof file at `path`, decoded once (`ProofFormatError` naming the file and field)."""
    return from_file(load_any(path), str(path))


def from_statements(path: Path) -> Proof:
    """The statements `anchor attest` wrote: exactly one chain-anchor statement, whose predicate carries
    the proof (decoded as any proof file) and states its digest, root and manifest, which must be the
    proof's (`Tampered` naming the field); the statements themselves are kept for the checklist."""
    from anchor.readback.statements import CHAIN_ANCHOR, read_statements

    statements = read_statements(path)
    anchors = [s for s in statements if s["predicateType"] == CHAIN_ANCHOR]
    if len(anchors) != 1:
        raise BadInput(
            f"{path}: expected one {CHAIN_ANCHOR} statement, found {len(anchors)}", detail={"file": str(path)}
        )
    predicate = anchors[0]["predicate"]
    if not isinstance(predicate, dict):
        raise BadInput(
            f"{path}: the {CHAIN_ANCHOR} predicate is not an object", detail={"file": str(path), "field": "predicate"}
        )
    proof = parse_proof(json.dumps(predicate.get("proof")).encode(), f"{path}: predicate.proof")
    for field, bound in (
        ("manifestDigest", proof.manifest_digest),
        ("batchRoot", proof.batch.root),
        ("manifest", proof.manifest),
    ):
        if predicate.get(field) != bound:
            raise Tampered(f"{path}: predicate.{field} is not what its proof binds", detail={"field": field})
    single = from_file(proof, f"{path}: predicate.proof")
    return Proof(
        subject=proof, anchors=single.anchors[:1], form="statements", name=single.name, statements=tuple(statements)
    )


def by_first_anchor(found: ProofFile, name: str) -> Proof:
    """A complete proof read by its first anchor alone, as a proof already loaded is verified by the API's
    routes and the explorer, and before `anchor attest` writes statements of it: one anchor, the one
    `anchor` names, whatever else the file holds."""
    return Proof(
        subject=found,
        anchors=(Anchor(service=found.service, batch=found.batch, chain=found.anchor),),
        form="single",
        name=name,
    )
