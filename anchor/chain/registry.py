"""Typed access to one deployed AnchorRegistry. Every read first checks the code at the address."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from anchor.chain.artifact import registry_abi
from anchor.chain.deployment import check_code
from anchor.chain.transactions import send

if TYPE_CHECKING:
    from web3 import Web3

    from anchor.chain.keys import Signer


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

    def __init__(self, w3: Web3, chain_id: int, address: str, code_hash: str) -> None:
        self.w3 = w3
        self.chain_id = chain_id
        self.address = w3.to_checksum_address(address)
        self.code_hash = code_hash
        self.contract = w3.eth.contract(address=self.address, abi=registry_abi())
        self._checked_at: int | None = None

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

    def lineage(self, commit: bytes) -> LineageRecord | None:
        """The lineage record of `commit`, read from its event and checked against the stored commitment."""
        block = self.checked_block()
        if not self.contract.functions.exists(commit).call(block_identifier=block):
            return None
        logs = self.contract.events.LineageAnchored().get_logs(
            from_block=0, to_block=block, argument_filters={"commit": commit}
        )
        for log in logs:
            a = log["args"]
            if self.contract.functions.verifyLineage(
                commit, a["parent"], a["diffHash"], a["metricHash"], a["kept"], a["researcher"], a["timestamp"]
            ).call(block_identifier=block):
                return LineageRecord(
                    _hex(commit), _hex(a["parent"]), _hex(a["diffHash"]), _hex(a["metricHash"]), bool(a["kept"]),
                    a["researcher"], int(a["timestamp"]), _hex(log["transactionHash"]), int(log["blockNumber"]),
                )  # fmt: skip
        return None
