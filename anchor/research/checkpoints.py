"""A trial count the chain checks: the ledger head anchored during the search, and read back.

Why: the ledger is a local file. An operator (or the agent, given write access) could drop the losing
entries and recompute the hash chain, and a ledger that only checks itself would say "4 trials" where
12 were run. So the head (digest of the last entry, and the entry count) is anchored at checkpoints
while the search runs: after every `every` attempts, after `every_s` seconds, and at each promotion
(with the kept attempts' lineage records: `anchor_search` is idempotent). Each head's proof is kept in
`<workdir>/checkpoints/`. `research verify` reads every one of them back from the chain and refuses a
local ledger that is shorter than an anchored head, or whose entry at that head's seq differs.

A head whose proof file was deleted is still found: each checkpoint also writes a lineage record of
the ledger (`anchoring.checkpoint_record`: commit = the head digest, parent = the contract digest, diffHash =
LEDGER_TAG, metricHash = the first 24 bytes of the ledger's first row digest, then the length as 8
bytes), under the researcher's address (its own key, relayed, or the signing key). Its parent is
an indexed topic of the event, so `research verify` finds every checkpoint of a contract from the
chain alone (bounded log windows from the deployment block), and compares the ledger with those
written by addresses it trusts (`--researcher-address`, the keys configured here); records by other
addresses are listed, never trusted: anyone can write a record whose parent is a public contract
digest. The first row tells two searches under one contract apart. A ledger rewritten from its first
row on is another ledger with no checkpoint of its own: verify then lists the ledgers of the contract
it did find, with their lengths, for the reader to compare (it cannot tell such a rewrite from a
second search of the same contract).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from anchor.errors import BadInput, Tampered
from anchor.manifest.onchain import LEDGER_TAG
from anchor.record import Value
from anchor.research.ledger import AnyLedger, LedgerRow

if TYPE_CHECKING:
    from anchor.anchoring.stamper import Stamper
from anchor.settings.session import Settings


class Checkpoints:
    """The `on_entry` hook of a search: journals the ledger head (and what is new since the last
    checkpoint) when a checkpoint is due, and lets a background flusher take it to the chain.

    Why in the background (anchor.anchoring.flusher): a flush waits for receipts (about 0.2 s on the
    local chain, a block or more on a real one) and the search need not wait with it. The journal is
    durable: what a checkpoint journaled is anchored by the flusher, or after a crash by the next
    run's first flush. A flush that fails (the chain out of reach) is reported on stderr and retried
    at the next checkpoint; the search goes on, and the end of the run anchors everything or fails
    with the reason. `close()` waits for the last flush."""

    def __init__(self, stamper: Stamper, ledger: AnyLedger, every: int = 10, every_s: float = 300.0) -> None:
        """`stamper`: the key here (journaled, flushed by the background flusher) or services (each
        checkpoint sends what is new and writes the head's pending proof; the services flush on their own)."""
        self.stamper, self.ledger, self.every, self.every_s = stamper, ledger, every, every_s
        self.pending = 0
        self.last = time.monotonic()
        self.anchored = 0
        self.length = 0
        """Ledger entries already journaled by an earlier checkpoint of this run."""
        self._flusher = stamper._flusher("checkpoint")

    def __call__(self, entry: LedgerRow) -> None:
        self.pending += 1
        if entry.get("kept") or self.pending >= self.every or time.monotonic() - self.last >= self.every_s:
            from anchor.research.anchoring import anchor_search

            done = anchor_search(self.stamper, self.ledger, since=self.length, flush=False)
            self.length = done["ledger_length"]
            self.pending, self.last, self.anchored = 0, time.monotonic(), self.anchored + 1
            if self._flusher is not None:
                self._flusher.kick()

    def close(self) -> None:
        """Wait for the flusher to take the last checkpoint to the chain (the stamper keeps the journal
        open for the end of the run; its owner closes it)."""
        if self._flusher is not None:
            self._flusher.close()


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class AnchoredHeads(Value):
    checkpoints: int
    """How many anchored heads were read back and matched."""
    length: int
    """The longest anchored head: entries 0..length-1 are on chain."""
    block: int | None
    anchored_at: str | None
    where: dict[str, Any] | None = None
    """Where the longest head is recorded, for a reader to find it from a paper: {chain_id, chain,
    registry, tx_hash, root, head, length} (the proof's own anchor, checked by the verdict above)."""


def check_anchored_heads(ledger: AnyLedger, settings: Settings) -> AnchoredHeads:
    """Read every checkpoint proof beside the ledger back from the chain and compare the ledger with it.

    Raises `Tampered` naming the first seq that cannot be the anchored one (missing, or differing at or
    before the head's seq); the chain errors of `verify` (not anchored, unreachable) as they are."""
    from anchor.proof.file import load_proof
    from anchor.readback.checklist import leaned_on
    from anchor.research.anchoring import checkpoint_path

    entries = ledger.rows()  # anchored heads count rows, traces included
    from anchor.chain.presets import chain_name

    best: tuple[int, int | None, str | None] = (0, None, None)
    where: dict[str, Any] | None = None
    proofs = sorted((ledger.workdir / "checkpoints").glob("*.anchor.json"))
    for path in proofs:
        proof = load_proof(path)
        if proof.manifest.get("kind") != "ledger":
            raise BadInput(f"{path}: not a ledger checkpoint proof", detail={"file": str(path)})
        verdict = leaned_on(proof, settings)
        length, head = proof.manifest["length"], str(proof.manifest["head"])
        if not isinstance(length, int):
            raise BadInput(f"{path}: its ledger length is not a number", detail={"file": str(path)})
        if path != checkpoint_path(ledger, length):  # a checkpoint is filed under the length it holds
            raise Tampered(
                f"{path}: a checkpoint of {length} rows under another name (a copy?)", detail={"file": str(path)}
            )
        _hold(
            ledger.where,
            entries,
            length,
            head,
            verdict.anchored_block,
            f"anchored ({verdict.anchored_at})",
            held=best[0],
        )
        if length > best[0]:
            best = (length, verdict.anchored_block, verdict.anchored_at)
            where = {
                "chain_id": proof.anchor.chain_id,
                "chain": chain_name(proof.anchor.chain_id),
                "registry": proof.anchor.registry,
                "tx_hash": proof.anchor.tx_hash,
                "root": proof.batch.root,
                "head": head,
                "length": length,
            }
    return AnchoredHeads(len(proofs), *best, where=where)


def _hold(
    where: str, entries: list[LedgerRow], length: int, head: str, block: int | None, said: str, held: int = 0
) -> None:
    """The ledger holds the anchored head (`length` rows, the last one `head`), or `Tampered` naming the
    first seq that cannot be the anchored one; `held`: the longest shorter head already found to hold,
    so the edit is narrowed to the rows between the two."""
    if len(entries) < length:
        raise Tampered(
            f"{where}: {len(entries)} entries, but a head of {length} entries is {said}, block {block}:"
            f" seq {len(entries)} to {length - 1} are missing",
            detail={"seq": len(entries), "anchored_length": length, "anchored_block": block},
        )
    if length == 0 or entries[length - 1]["digest"] != head:
        since = (
            f" (one of seq {held} to {length - 1}: the anchored head of {held} rows holds)" if 0 < held < length else ""
        )
        raise Tampered(
            f"{where}: the entry at seq {length - 1}, or one before it{since}, is not the one {said}, block {block}:"
            " entries were removed, reordered or rewritten",
            detail={"seq": length - 1, "anchored_length": length, "anchored_block": block},
        )


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class ChainHeads(Value):
    checkpoints: int
    """Checkpoint records by trusted addresses, read from the chain and matched."""
    length: int
    block: int | None
    anchored_at: str | None
    trusted: tuple[str, ...]
    others: tuple[str, ...]
    """Addresses that wrote checkpoint records for this contract and were not trusted (not compared)."""
    other_ledgers: tuple[tuple[str, int], ...] = ()
    """Other ledgers of this contract with trusted checkpoints: (first row digest prefix, longest head)."""
    first_row: str = ""
    """This ledger's first row digest (what tells it from the others)."""


def check_chain_heads(
    rows: list[LedgerRow], where: str, registry: Any, contract_digest: str, trusted: set[str]
) -> ChainHeads:
    """Find a ledger's checkpoint records on chain by its contract digest (no proof file needed) and
    compare the ledger's `rows` with every one written by a `trusted` address (lower-case hex).

    Raises `Tampered` naming the first seq that cannot be the anchored one; the chain errors as they are."""
    from datetime import UTC, datetime

    genesis = rows[0]["digest"][:48] if rows else ""
    best: tuple[int, int | None, str | None] = (0, None, None)
    matched, others, elsewhere = 0, set(), dict[str, int]()
    for record in registry.lineages_by_parent(bytes.fromhex(contract_digest)):
        if record.diff_hash != "0x" + LEDGER_TAG.hex():
            continue
        if record.researcher.lower() not in trusted:
            others.add(record.researcher)
            continue
        which, head = record.metric_hash.removeprefix("0x"), record.commit.removeprefix("0x")
        length = int(which[48:], 16)
        if which[:48] != genesis:
            elsewhere[which[:48]] = max(length, elsewhere.get(which[:48], 0))
            continue
        when = datetime.fromtimestamp(record.timestamp, UTC).isoformat()
        said = f"on chain ({when}, by {record.researcher}, found without a proof file)"
        _hold(where, rows, length, head, record.block_number, said)
        matched += 1
        if length > best[0]:
            best = (length, record.block_number, when)
    return ChainHeads(matched, *best, tuple(sorted(trusted)), tuple(sorted(others)), tuple(sorted(elsewhere.items())))


def trusted_addresses(settings: Settings, chain_id: int, given: list[str]) -> set[str]:
    """Whose checkpoint records bind this ledger: the addresses given, the researcher key and the
    signing key configured here for `chain_id` (whoever wrote the records when this host ran the search)."""
    from anchor.chain.keys import load_researcher, load_signer
    from anchor.errors import AnchorError

    out = {a.lower() for a in given}
    researcher = load_researcher(settings.env)
    if researcher is not None:
        out.add(researcher.address.lower())
    with contextlib.suppress(AnchorError):  # no signing key for this chain: the addresses given, the researcher's
        out.add(load_signer(chain_id, settings.keystore, settings.env).address.lower())
    return out
