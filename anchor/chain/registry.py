"""Typed access to the deployed AnchorRegistry, recognised by the hash of its code.

A batch root is keyed by (submitter, root), so a root is read as one submitter's record, and the
submitters of a root are found by its events. A lineage record is keyed by (researcher, commit) and keeps
its block number in its slot, so it is read with a constant number of calls at any height (slot, one
block's logs, the commitment check); without a researcher, the commit's events are found by a bounded
walk from the deployment block (anchor.chain.logs), never by asking for block 0 to latest.

Either kind of record may carry a retraction by its owner: its slot says in which block, and that
block's `RootRetracted` / `LineageRetracted` event says why (a 32-byte reason digest). Every read first
checks the code at the address."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from anchor.chain.abi import checksum_address, interface
from anchor.chain.artifact import LATEST, registry_abi, version_of
from anchor.chain.deployment import check_code
from anchor.chain.logs import scan_logs
from anchor.manifest.onchain import commit_of_key
from anchor.record import Value

if TYPE_CHECKING:
    from web3 import Web3

    from anchor.chain.keys import Signer
    from anchor.chain.rpc import Rpc
    from anchor.chain.signed import SignedLineage, SignedRetraction


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class TxResult(Value):
    tx_hash: str
    block_number: int
    gas_used: int


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Retraction(Value):
    """A record's retraction, as the chain holds it: who, when, where and the reason's digest."""

    by: str
    reason: str
    """0x-prefixed 32-byte digest of the reason (Anchor writes keccak256 of its UTF-8 text)."""
    block_number: int
    timestamp: int
    tx_hash: str | None


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class RootRecord(Value):
    root: str
    submitter: str
    timestamp: int
    block_number: int
    tx_hash: str | None = None
    """The transaction that wrote it, when the read already had it (a receipt): no log scan for it."""
    retracted_block: int = 0
    """The block of the submitter's retraction of it; 0 if it stands."""
    retracted_at: int = 0


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class LineageRecord(Value):
    commit: str
    parent: str
    diff_hash: str
    metric_hash: str
    kept: bool
    researcher: str
    timestamp: int
    tx_hash: str
    block_number: int
    retracted_block: int = 0
    """The block of the researcher's retraction of it; 0 if it stands."""


def _hex(value: bytes) -> str:
    return "0x" + bytes(value).hex()


class Registry:
    """One registry on one chain. Reads raise `DeploymentMismatch` if the code is not the registry.

    Reads go through `rpc` with the ABI encoded here (anchor.chain.abi): no web3 is imported to read.
    Writes build their transaction with web3 (`w3`, `contract`), made on first use."""

    def __init__(self, rpc: Rpc, chain_id: int, address: str, code_hash: str, from_block: int = 0) -> None:
        self.rpc = rpc
        self.chain_id = chain_id
        self.address = checksum_address(address)
        self.code_hash = code_hash
        self.version = version_of(code_hash) or LATEST
        self.from_block = from_block
        """The deployment block: no event of this registry is older, so no log query starts earlier."""
        self.abi = interface(self.version)
        self._checked_at: int | None = None
        self._pinned: int | None = None
        self._tags: dict[str, int | None] = {}
        self._asked: set[tuple[bytes, str]] = set()
        """(root, transaction) pairs asked of this object: not read ahead again."""

    @cached_property
    def w3(self) -> Web3:
        from anchor.chain.connection import web3_for

        return web3_for(self.rpc)

    @cached_property
    def contract(self) -> Any:
        return self.w3.eth.contract(address=self.address, abi=registry_abi(self.version))  # type: ignore[call-overload]

    def _call(self, name: str, *args: Any, block: int) -> list[Any]:
        """One view function, read at `block` (a throttling provider is waited out by the RPC client)."""
        function = self.abi.functions[name]
        data = function.call_data(*args)
        answer = self.rpc.call(self.address, data, block)
        try:
            return function.result(answer)
        except ValueError:
            from anchor.errors import DeploymentMismatch

            raise DeploymentMismatch(
                f"{self.address}: {name} gave an answer that is not the registry's ({len(answer)} bytes)",
                detail={"address": self.address, "function": name},
            ) from None

    def pin(self, block: int) -> None:
        """Make every later read of this object one at `block`, whose code `checked_block` checked: the
        head is not read again, nor the safe and finalized heads after their first read. For a scope that
        reads many roots as one snapshot (anchor.readback.checklist.reads_once)."""
        if self._checked_at != block:
            raise ValueError(f"block {block} is not the block the code was checked at")
        self._pinned = block

    def checked_block(self) -> int:
        """Check the code (once per block) and return the block number the following reads see."""
        if self._pinned is not None:
            return self._pinned
        block = self.rpc.block_number()
        if self._checked_at != block:
            check_code(self.rpc, self.address, self.code_hash)
            self._checked_at = block
        return block

    # ------------------------------------------------------------------ writes

    def anchor_root(self, signer: Signer, root: bytes) -> TxResult:
        return self._send(signer, self.contract.functions.anchorRoot(root))

    def anchor_lineage(
        self, signer: Signer, commit: bytes, parent: bytes, diff_hash: bytes, metric_hash: bytes, kept: bool
    ) -> TxResult:
        return self._send(signer, self.contract.functions.anchor(commit, parent, diff_hash, metric_hash, kept))

    def anchor_signed(self, sender: Signer, signed: SignedLineage) -> TxResult:
        """Relay a record the researcher signed: `sender` pays, the signer is the researcher."""
        f = signed.fields
        return self._send(
            sender,
            self.contract.functions.anchorBySig(
                self.w3.to_checksum_address(f.researcher),
                f.commit,
                f.parent,
                f.diff_hash,
                f.metric_hash,
                f.kept,
                f.deadline,
                signed.v,
                signed.r,
                signed.s,
            ),
        )

    def call_data(self, name: str, *args: Any) -> bytes:
        """The calldata of the write `name(args)`, encoded by anchor.chain.abi (no web3: the effect
        protocol signs and sends it itself)."""
        return self.abi.functions[name].call_data(*args)

    def signed_call_data(self, signed: SignedLineage) -> bytes:
        """The calldata that relays `signed` (anchorBySig)."""
        f = signed.fields
        return self.call_data(
            "anchorBySig",
            f.researcher,
            f.commit,
            f.parent,
            f.diff_hash,
            f.metric_hash,
            f.kept,
            f.deadline,
            signed.v,
            signed.r,
            signed.s,
        )

    def retract_root(self, signer: Signer, root: bytes, reason: bytes) -> TxResult:
        """Retract `signer`'s own record of `root` (the registry refuses anyone else's)."""
        return self._send(signer, self.contract.functions.retract(root, reason))

    def retract_lineage(self, signer: Signer, commit: bytes, reason: bytes) -> TxResult:
        """Retract `signer`'s own lineage record of `commit`, as its researcher."""
        return self._send(signer, self.contract.functions.retractLineage(commit, reason))

    def retract_signed(self, sender: Signer, signed: SignedRetraction) -> TxResult:
        """Relay a retraction the researcher signed: `sender` pays, the signer's record is retracted."""
        call = self.contract.functions.retractLineageBySig(
            self.w3.to_checksum_address(signed.researcher),
            signed.commit,
            signed.reason,
            signed.deadline,
            signed.v,
            signed.r,
            signed.s,
        )
        return self._send(sender, call)

    def _send(self, signer: Signer, call: Any) -> TxResult:
        from anchor.chain.transactions import send

        self.checked_block()
        receipt = send(self.w3, self.chain_id, signer, call)
        return TxResult(_hex(receipt["transactionHash"]), int(receipt["blockNumber"]), int(receipt["gasUsed"]))

    # ------------------------------------------------------------------ reads

    def root_record(self, root: bytes, submitter: str | None = None) -> RootRecord | None:
        """`submitter`'s record of `root`; without one, the earliest submitter's (found by the root's events)."""
        block = self.checked_block()
        if submitter is None:
            records = self._records_by_events(root, block)
            return records[0] if records else None
        return self._submitters_record(root, checksum_address(submitter), block)

    def _submitters_record(
        self, root: bytes, submitter: str, block: int, tx_hash: str | None = None
    ) -> RootRecord | None:
        timestamp, block_number, retracted_at, retracted_block = self._call("rootRecord", submitter, root, block=block)
        if int(block_number) == 0:
            return None
        return RootRecord(
            _hex(root), submitter, int(timestamp), int(block_number), tx_hash, int(retracted_block), int(retracted_at)
        )

    def root_records(self, root: bytes) -> list[RootRecord]:
        """Every record of `root`, oldest first: one per submitter (from its events, each checked against
        storage)."""
        return self._records_by_events(root, self.checked_block())

    def _records_by_events(self, root: bytes, block: int) -> list[RootRecord]:
        """Each submitter's record of `root`, found by its events up to `block` and read there."""
        topics: list[Any] = [self.abi.events["RootAnchored"].topic, "0x" + root.hex()]
        found: dict[str, RootRecord] = {}
        for log in scan_logs(self.rpc, self.address, topics, self.from_block, block):
            who = checksum_address("0x" + str(log["topics"][2])[-40:])
            tx = str(log["transactionHash"])
            if who not in found and (record := self._submitters_record(root, who, block, tx)) is not None:
                found[who] = record
        return sorted(found.values(), key=lambda r: r.block_number)

    def submitter_of(self, root: bytes, tx_hash: str) -> str | None:
        """Who anchored `root` in transaction `tx_hash`: the `RootAnchored` event of this registry in
        that transaction's receipt (root and submitter indexed), or None. How a proof is bound to its
        submitter without trusting the file: the transaction it names is on chain, and only its sender's
        record of the root is the proof's (a stranger's record of the same root is another transaction)."""
        receipt = self.rpc.get_transaction_receipt(tx_hash)
        if not receipt or int(str(receipt.get("status", "0x1")), 16) != 1:
            return None
        topic, wanted = self.abi.events["RootAnchored"].topic, "0x" + root.hex()
        for log in receipt.get("logs") or []:
            topics = [str(t).lower() for t in log.get("topics") or []]
            if str(log.get("address", "")).lower() == self.address.lower() and topics[:2] == [topic.lower(), wanted]:
                return checksum_address("0x" + topics[2][-40:]) if len(topics) > 2 else None
        return None

    def root_record_of_tx(self, root: bytes, tx_hash: str | None) -> RootRecord | None:
        """The record of `root` that transaction `tx_hash` wrote (a journal's own batch, a proof's): its
        sender's, never another submitter's of the same root."""
        if tx_hash:
            self._asked.add((root, tx_hash.lower()))
        submitter = self.submitter_of(root, tx_hash) if tx_hash else None
        if submitter is None:
            return None
        record = self._submitters_record(root, submitter, self.checked_block(), tx_hash)
        if record is None and self._pinned is not None:  # mined after the pinned block: read at the head now
            self._repin()
            record = self._submitters_record(root, submitter, self.checked_block(), tx_hash)
        return record

    def read_ahead(self, wanted: list[tuple[bytes, str]]) -> int:
        """Ask now, in two JSON-RPC batches, what `root_record_of_tx` will ask of each (root, transaction)
        of `wanted`: the receipts, then each sender's record at the pinned block (`Rpc.read_ahead`: the
        calls themselves check every answer as before, and an answer not kept is asked again, alone). For a
        verify of many proofs (anchor.readback.ahead). An object not pinned reads nothing ahead: the block
        its reads will be made at is not known yet. Returns how many pairs were new to this object."""
        block, fresh = self._pinned, dict[tuple[bytes, str], tuple[bytes, str]]()
        for root, tx_hash in wanted:  # as the proofs name them (a read is taken for the same params only)
            if (root, tx_hash.lower()) not in self._asked:
                fresh.setdefault((root, tx_hash.lower()), (root, tx_hash))
        if block is None or not fresh:
            return 0
        self._asked.update(fresh)
        wanted = list(fresh.values())
        hashes = [tx_hash.lower() for _, tx_hash in wanted]
        receipts = self.rpc.read_ahead(
            [("eth_getTransactionReceipt", [tx_hash]) for _, tx_hash in wanted],
            lambda n, receipt: (
                receipt is None or (isinstance(receipt, dict) and _lower(receipt.get("transactionHash")) == hashes[n])
            ),
        )
        topic = self.abi.events["RootAnchored"].topic.lower()
        records: list[tuple[str, list[Any]]] = []
        for n, (root, _) in enumerate(wanted):
            submitter = _submitter_in(receipts.get(n), self.address.lower(), topic, "0x" + root.hex())
            if submitter is not None:
                data = self.abi.functions["rootRecord"].call_data(checksum_address(submitter), root)
                records.append(("eth_call", [{"to": self.address, "data": "0x" + data.hex()}, hex(block)]))
        self.rpc.read_ahead(records)
        return len(wanted)

    def _repin(self) -> None:
        """Pin the chain's head now, its code checked there, its tagged heads read again: a transaction
        whose receipt exists was mined after the block a scope began at, and its record is read later."""
        self._pinned, self._tags = None, {}
        self._pinned = self.checked_block()

    def verify_inclusion(self, root: bytes, proof: list[bytes], item: bytes, submitter: str | None = None) -> bool:
        """Whether `item` is under `root` as `submitter` anchored it (a proof names who anchored its root)."""
        block = self.checked_block()
        if submitter is None:
            return False
        return bool(self._call("verifyInclusion", checksum_address(submitter), root, proof, item, block=block)[0])

    def root_retraction(self, record: RootRecord) -> Retraction | None:
        """Why and by whom `record` was retracted (its `RootRetracted` event, in the block its slot names)."""
        if not record.retracted_block:
            return None
        topics: list[Any] = [self.abi.events["RootRetracted"].topic, record.root, _address_topic(record.submitter)]
        return self._retraction("RootRetracted", topics, record.submitter, record.retracted_block, record.retracted_at)

    def lineage_retraction(self, record: LineageRecord) -> Retraction | None:
        """Why `record` was retracted (its `LineageRetracted` event, in the block its slot names)."""
        if not record.retracted_block:
            return None
        topics: list[Any] = [
            self.abi.events["LineageRetracted"].topic,
            _address_topic(record.researcher),
            record.commit,
        ]
        return self._retraction("LineageRetracted", topics, record.researcher, record.retracted_block, 0)

    def _retraction(self, event: str, topics: list[Any], by: str, block: int, timestamp: int) -> Retraction:
        logs = scan_logs(self.rpc, self.address, topics, block, block)
        reason = _hex(self.abi.events[event].args(logs[0])["reason"]) if logs else "0x" + "00" * 32
        if not timestamp:
            header = self.rpc.get_block(block) or {}
            timestamp = int(str(header.get("timestamp", "0x0")), 16)
        return Retraction(by, reason, block, timestamp, str(logs[0]["transactionHash"]) if logs else None)

    def finality(self, block: int, read_at: int) -> tuple[str, int | None, int | None]:
        """(finality, safe head, finalized head) of `block` read at `read_at`: "finalized" or "safe" once
        the chain's tagged head has reached it, else "N confirmations"."""
        safe, finalized = self._tagged_head("safe"), self._tagged_head("finalized")
        confirmations = read_at - block + 1
        finality = (
            "finalized"
            if finalized is not None and finalized >= block
            else "safe"
            if safe is not None and safe >= block
            else f"{confirmations} confirmation{'s' if confirmations != 1 else ''}"
        )
        return finality, safe, finalized

    def _tagged_head(self, tag: str) -> int | None:
        """The number of the chain's `safe` or `finalized` block; None if the node does not know the tag."""
        from anchor.chain.rpc import RpcError

        if self._pinned is not None and tag in self._tags:
            return self._tags[tag]
        try:
            block = self.rpc.get_block(tag)
            number = None if block is None else int(str(block["number"]), 16)
        except (RpcError, KeyError, ValueError):  # a node without the tag: finality falls back to confirmations
            number = None
        if self._pinned is not None:
            self._tags[tag] = number
        return number

    def root_tx(self, root: bytes, block_number: int, submitter: str | None = None) -> str | None:
        """The hash of the transaction that anchored `root` (as `submitter`, if given), found by its
        event in `block_number`."""
        topics: list[Any] = [self.abi.events["RootAnchored"].topic, "0x" + root.hex()]
        if submitter is not None:
            topics.append(_address_topic(checksum_address(submitter)))
        logs = scan_logs(self.rpc, self.address, topics, block_number, block_number)
        return str(logs[0]["transactionHash"]) if logs else None

    def lineage(self, commit: bytes, researcher: str | None = None) -> LineageRecord | None:
        """The lineage record of `commit` by `researcher`, read from its event and checked against the
        stored commitment; without a researcher, the earliest record of the commit."""
        records = self.lineages(commit, researcher, first_only=True)
        return records[0] if records else None

    def lineages(self, commit: bytes, researcher: str | None = None, first_only: bool = False) -> list[LineageRecord]:
        """Every verified lineage record of `commit` (one per researcher)."""
        block = self.checked_block()
        event = self.abi.events["LineageAnchored"]
        if researcher is not None:
            who = checksum_address(researcher)
            _, at, _ = self._call("lineageRecord", who, commit, block=block)
            if int(at) == 0:
                return []
            topics: list[str | None] = [event.topic, _address_topic(who), "0x" + commit.hex()]
            raw = scan_logs(self.rpc, self.address, topics, int(at), int(at))
        else:
            topics = [event.topic, None, "0x" + commit.hex()]
            raw = scan_logs(self.rpc, self.address, topics, self.from_block, block, stop=bool if first_only else None)
        out = []
        for log in raw:
            record = self._verified(log, block)
            if record is not None:
                out.append(record)
                if first_only:
                    break
        return out

    def lineages_by_parent(self, parent: bytes) -> list[LineageRecord]:
        """Every verified lineage record whose parent is `parent`, oldest first, by anyone (the caller
        decides whose it trusts): the parent is an indexed topic, so the walk reads only those events."""
        block = self.checked_block()
        event = self.abi.events["LineageAnchored"]
        topics: list[str | None] = [event.topic, None, None, "0x" + parent.hex()]
        raw = scan_logs(self.rpc, self.address, topics, self.from_block, block)
        return [r for r in (self._verified(log, block) for log in raw) if r is not None]

    def _verified(self, log: dict[str, Any], block: int) -> LineageRecord | None:
        """The record one LineageAnchored log stands for, if the stored commitment confirms it."""
        a = self.abi.events["LineageAnchored"].args(log)
        who = a["researcher"]
        fields = (bytes(a["commit"]), a["parent"], a["diffHash"], a["metricHash"], a["kept"])
        if not self._call("verifyLineage", who, *fields, a["timestamp"], block=block)[0]:
            return None
        _, _, retracted = self._call("lineageRecord", who, fields[0], block=block)
        return LineageRecord(
            _hex(fields[0]),
            _hex(a["parent"]),
            _hex(a["diffHash"]),
            _hex(a["metricHash"]),
            bool(a["kept"]),
            who,
            int(a["timestamp"]),
            str(log["transactionHash"]),
            int(str(log["blockNumber"]), 16),
            int(retracted),
        )

    def lineage_commits(self, researcher: str | None = None) -> set[str]:
        """Every commit (SHA-1 as 40 hex, SHA-256 as 64) with a lineage event, by `researcher` if given:
        the one walk a commit prefix needs. Events only: the caller reads the record it picks in full."""
        event = self.abi.events["LineageAnchored"]
        who = [_address_topic(checksum_address(researcher))] if researcher else []
        topics: list[str | None] = [event.topic, *who]
        commits = set()
        for log in scan_logs(self.rpc, self.address, topics, self.from_block, self.checked_block()):
            commits.add(commit_of_key(bytes(event.args(log)["commit"]).hex()))
        return commits


_HEX = frozenset("0123456789abcdef")


def _lower(value: object) -> str | None:
    return value.lower() if isinstance(value, str) else None


def _submitter_in(receipt: object, registry: str, topic: str, root: str) -> str | None:
    """The submitter a receipt's `RootAnchored` log of `registry` names for `root`, as far as an answer
    read ahead shows it (a guess at the next read: `submitter_of` checks the receipt when it is taken)."""
    if not isinstance(receipt, dict) or receipt.get("status", "0x1") != "0x1":  # as `submitter_of` reads it
        return None
    try:
        for log in receipt["logs"]:
            topics = [str(t).lower() for t in log["topics"]]
            if str(log["address"]).lower() == registry and topics[:2] == [topic, root] and len(topics) > 2:
                submitter = "0x" + topics[2][-40:]
                return submitter if len(topics[2]) == 66 and all(c in _HEX for c in topics[2][2:]) else None
    except (KeyError, TypeError, AttributeError):
        return None
    return None


def _address_topic(address: str) -> str:
    return "0x" + "00" * 12 + address.lower().removeprefix("0x")
