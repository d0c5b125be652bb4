"""Typed access to one deployed AnchorRegistry (v1 or v2, told apart by the hash of its code).

Every read first checks the code at the address. Lineage reads differ by version: v2 keys a record by
(researcher, commit) and keeps its block number in the slot, so a record is read with a constant
number of calls at any height (slot, one block's logs, the commitment check); without a researcher,
or on v1, the commit's events are found by a bounded walk from the deployment block
(anchor.chain.logs), never by asking for block 0 to latest."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from anchor.chain.artifact import LATEST, registry_abi, version_of
from anchor.chain.deployment import check_code
from anchor.chain.logs import scan_logs, with_backoff
from anchor.chain.transactions import send

if TYPE_CHECKING:
    from web3 import Web3

    from anchor.chain.keys import Signer
    from anchor.chain.signed import SignedLineage


@dataclass(frozen=True, slots=True)
class TxResult:
    tx_hash: str
    block_number: int
    gas_used: int


@dataclass(frozen=True, slots=True)
class RootRecord:
    root: str
    submitter: str
    timestamp: int
    block_number: int


@dataclass(frozen=True, slots=True)
class LineageRecord:
    commit: str
    parent: str
    diff_hash: str
    metric_hash: str
    kept: bool
    researcher: str
    timestamp: int
    tx_hash: str
    block_number: int


def _hex(value: bytes) -> str:
    return "0x" + bytes(value).hex()


class Registry:
    """One registry on one chain. Reads raise `DeploymentMismatch` if the code is not the registry."""

    def __init__(self, w3: Web3, chain_id: int, address: str, code_hash: str, from_block: int = 0) -> None:
        self.w3 = w3
        self.chain_id = chain_id
        self.address = w3.to_checksum_address(address)
        self.code_hash = code_hash
        self.version = version_of(code_hash) or LATEST
        self.from_block = from_block
        """The deployment block: no event of this registry is older, so no log query starts earlier."""
        self.contract = w3.eth.contract(address=self.address, abi=registry_abi(self.version))
        self._checked_at: int | None = None

    @property
    def researcher_bound(self) -> bool:
        """v2: lineage records are keyed by (researcher, commit) and can be signed by the researcher."""
        return self.version != "1.0.0"

    def checked_block(self) -> int:
        """Check the code (once per block) and return the block number the following reads see."""
        block = int(self.w3.eth.block_number)
        if self._checked_at != block:
            check_code(self.w3, self.address, self.code_hash)
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
        """Relay a record the researcher signed (v2): `sender` pays, the signer is the researcher."""
        return self._send(sender, self.signed_call(signed))

    def signed_call(self, signed: SignedLineage) -> Any:
        f = signed.fields
        return self.contract.functions.anchorBySig(
            self.w3.to_checksum_address(f.researcher), f.commit, f.parent, f.diff_hash, f.metric_hash, f.kept,
            f.deadline, signed.v, signed.r, signed.s,
        )  # fmt: skip

    def _send(self, signer: Signer, call: Any) -> TxResult:
        self.checked_block()
        receipt = send(self.w3, self.chain_id, signer, call)
        return TxResult(_hex(receipt["transactionHash"]), int(receipt["blockNumber"]), int(receipt["gasUsed"]))

    # ------------------------------------------------------------------ reads

    def root_record(self, root: bytes) -> RootRecord | None:
        block = self.checked_block()
        submitter, timestamp, block_number = self.contract.functions.rootRecord(root).call(block_identifier=block)
        if int(block_number) == 0 and int(submitter, 16) == 0:
            return None
        return RootRecord(_hex(root), submitter, int(timestamp), int(block_number))

    def verify_inclusion(self, root: bytes, proof: list[bytes], item: bytes) -> bool:
        block = self.checked_block()
        return bool(self.contract.functions.verifyInclusion(root, proof, item).call(block_identifier=block))

    def root_tx(self, root: bytes, block_number: int) -> str | None:
        """The hash of the transaction that anchored `root`, found by its event in `block_number`."""
        logs = self.contract.events.RootAnchored().get_logs(
            from_block=block_number, to_block=block_number, argument_filters={"root": root}
        )
        return _hex(logs[0]["transactionHash"]) if logs else None

    def lineage(self, commit: bytes, researcher: str | None = None) -> LineageRecord | None:
        """The lineage record of `commit` (by `researcher`, on v2), read from its event and checked
        against the stored commitment. On v2 without a researcher: the earliest record of the commit."""
        records = self.lineages(commit, researcher, first_only=True)
        return records[0] if records else None

    def lineages(self, commit: bytes, researcher: str | None = None, first_only: bool = False) -> list[LineageRecord]:
        """Every verified lineage record of `commit` (one per researcher on v2; at most one on v1)."""
        block = self.checked_block()
        event = self.contract.events.LineageAnchored()
        topics: list[str | None]
        if self.researcher_bound and researcher is not None:
            who = self.w3.to_checksum_address(researcher)
            _, at = with_backoff(
                lambda: self.contract.functions.lineageRecord(who, commit).call(block_identifier=block), "lineageRecord"
            )
            if int(at) == 0:
                return []
            topics = [event_topic(event), _address_topic(who), "0x" + commit.hex()]
            raw = scan_logs(self.w3, self.address, topics, int(at), int(at))
        else:
            if not self.researcher_bound and not self.contract.functions.exists(commit).call(block_identifier=block):
                return []
            topics = (
                [event_topic(event), None, "0x" + commit.hex()] if self.researcher_bound  # v2: researcher, commit
                else [event_topic(event), "0x" + commit.hex()]  # v1: commit, parent, researcher
            )  # fmt: skip
            one = first_only or not self.researcher_bound  # v1 holds at most one record per commit
            raw = scan_logs(self.w3, self.address, topics, self.from_block, block, stop=bool if one else None)
        out = []
        for log in raw:
            a = event.process_log(log)["args"]
            who = a["researcher"]
            fields = (commit, a["parent"], a["diffHash"], a["metricHash"], a["kept"])
            check = (who, *fields, a["timestamp"]) if self.researcher_bound else (*fields, who, a["timestamp"])
            if self.contract.functions.verifyLineage(*check).call(block_identifier=block):
                out.append(LineageRecord(
                    _hex(commit), _hex(a["parent"]), _hex(a["diffHash"]), _hex(a["metricHash"]), bool(a["kept"]),
                    who, int(a["timestamp"]), _hex(log["transactionHash"]), int(log["blockNumber"]),
                ))  # fmt: skip
                if first_only:
                    break
        return out

    def lineage_commits(self, researcher: str | None = None) -> set[str]:
        """Every commit (SHA-1 as 40 hex, SHA-256 as 64) with a lineage event, by `researcher` if given:
        the one walk a commit prefix needs. Events only: the caller reads the record it picks in full."""
        event = self.contract.events.LineageAnchored()
        who = [_address_topic(self.w3.to_checksum_address(researcher))] if researcher and self.researcher_bound else []
        topics: list[str | None] = [event_topic(event), *who]
        commits = set()
        for log in scan_logs(self.w3, self.address, topics, self.from_block, self.checked_block()):
            args = event.process_log(log)["args"]
            key = bytes(args["commit"]).hex()
            commits.add(key[:40] if key.endswith("0" * 24) else key)
        return commits


def event_topic(event: Any) -> str:
    """topic0 of a contract event: keccak256 of its signature."""
    from eth_hash.auto import keccak

    abi = event.abi
    signature = f"{abi['name']}({','.join(i['type'] for i in abi['inputs'])})"
    return "0x" + keccak(signature.encode()).hex()


def _address_topic(address: str) -> str:
    return "0x" + "00" * 12 + address.lower().removeprefix("0x")
