"""Follow a registry's events from its deployment block into the chain-only index.

Why it is built this way:
- The registry is recognised by its runtime code hash (any address that does not hold a known
  AnchorRegistry version is refused), never by a record of ours: the auditor has none.
- Logs are read in bounded windows (anchor/chain/logs.py: halved when a provider caps the range, backed
  off when it throttles), and the cursor is persisted after each window, so a stopped follower resumes
  where it was and a provider's caps never force a 0..latest query.
- Reorgs: each window stores the hash of its last block and of every block that held an event. Before
  reading further, the follower checks the cursor block's hash (a block hash commits to all blocks
  below it, so one call proves the whole prefix). When it differs, or the chain is now shorter (an
  `evm_revert`), every record of the last `confirmations` blocks is dropped and those blocks are read
  again: what is still on the chain comes back, what was reverted does not. A changed hash below that
  range means a deeper reorg, reported (`IndexReorgTooDeep`) instead of guessed at.
- Given one RPC endpoint, the index shows what it says, and every page names it. Given several, every
  read the index keeps (each window's events, block hashes and times, the registry's code, a live
  record) is kept only when a quorum of them (default: a majority) agree on it, through the vote
  verdicts use (anchor.readback.quorum.agree): a split stores nothing and is `NoQuorum`; a dissenter is
  named in the sync report. Only where honest endpoints may differ is there no vote: the head is the
  highest block a quorum has reached, and the deployment block the earliest any reports (starting
  early is only slower; starting late would hide events).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from anchor.chain.deployment import deployment_block
from anchor.chain.logs import scan_logs
from anchor.errors import ChainUnreachable, DeploymentMismatch, IndexReorgTooDeep, NoQuorum
from anchor.index.store import IndexStore
from anchor.readback.quorum import agree, asked, down_once, needed
from anchor.record import Value
from anchor.settings.session import endpoint_of as redact_url

if TYPE_CHECKING:
    from anchor.chain.rpc import Rpc

DEFAULT_CONFIRMATIONS = 12
WINDOW = 2_000
T = TypeVar("T")


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class SyncReport(Value):
    head: int
    cursor: int
    added: int
    dropped: int
    disagreeing: dict[str, str] = field(default_factory=dict)
    """Endpoints outvoted during this sync, and what each said."""


def registry_code_hash(rpc: Rpc, address: str) -> str | None:
    """keccak256 of the code at `address` if it is an AnchorRegistry version we know; None otherwise."""
    from anchor.chain.artifact import version_of
    from anchor.chain.deployment import code_hash_at

    digest = code_hash_at(rpc, address)
    return digest if digest is not None and version_of(digest) else None


class Follower:
    """Keeps one IndexStore in step with one registry, read from one endpoint or a quorum of several."""

    def __init__(
        self,
        rpc: Rpc | Sequence[Rpc],
        store: IndexStore,
        address: str,
        from_block: int | None = None,
        confirmations: int = DEFAULT_CONFIRMATIONS,
        progress: Callable[[str], None] | None = None,
        quorum: int | None = None,
    ) -> None:
        from anchor.chain.abi import checksum_address, interface
        from anchor.chain.artifact import LATEST, version_of

        self.rpcs = list(rpc) if isinstance(rpc, Sequence) else [rpc]
        self.need = needed(quorum, len(self.rpcs))  # a quorum no list could meet: refused before any read
        self.rpc, self.store, self.confirmations = self.rpcs[0], store, max(1, confirmations)
        self.endpoints = [redact_url(r.url) for r in self.rpcs]
        self._dissent: dict[str, str] = {}
        self.address = checksum_address(address)
        code_hash = self._agreed(lambda r: registry_code_hash(r, self.address))
        if code_hash is None:
            raise DeploymentMismatch(
                f"--registry {self.address}: no AnchorRegistry code there (not deployed, or another contract)",
                detail={"field": "registry", "address": self.address},
            )
        self.code_hash = code_hash
        self.version = version_of(code_hash) or ""
        self._abi = interface(self.version or LATEST)
        self._lineage, self._root = self._abi.events["LineageAnchored"], self._abi.events["RootAnchored"]
        self._progress = progress
        start = store.meta("from_block")
        if start is None:
            start = str(from_block if from_block is not None else self._deployment_block())
            with store.tx():
                store.set_meta("from_block", start)
                store.set_meta("code_hash", code_hash)
        self.from_block = int(start)

    def _agreed(self, read: Callable[[Rpc], T], asserts: Callable[[T], object] = repr) -> T:
        """`read` of the one endpoint, or the answer a quorum of them agree on (dissenters noted)."""
        if len(self.rpcs) == 1:
            return read(self.rpc)
        voters = [(shown, partial(self._ask, read, r)) for shown, r in zip(self.endpoints, self.rpcs, strict=True)]
        value, agreement = agree(voters, self.need, asserts)
        self._dissent.update(agreement["disagreeing"])
        return value

    def _reachable(self, read: Callable[[Rpc], T]) -> list[T]:
        """`read` of every endpoint that answers; `NoQuorum` when fewer than the quorum do."""
        answers, silent = [], []
        for shown, r in zip(self.endpoints, self.rpcs, strict=True):
            try:
                answers.append(self._ask(read, r))
            except ChainUnreachable:
                silent.append(shown)
        if len(answers) < self.need:
            raise NoQuorum(
                f"only {len(answers)} of {len(self.rpcs)} endpoints answer, {self.need} must agree;"
                f" unreachable: {', '.join(silent)}",
                detail={"unreachable": silent},
            )
        return answers

    def _ask(self, read: Callable[[Rpc], T], rpc: Rpc) -> T:
        """`read(rpc)`; within a sync, an endpoint out of reach is asked once (anchor.readback.quorum.asked)."""
        return asked(rpc.url, partial(read, rpc))()

    def _deployment_block(self) -> int:
        if len(self.rpcs) == 1:
            return deployment_block(self.rpc, self.address, self._head(), self._progress)
        head = self._head()
        return min(self._reachable(lambda r: deployment_block(r, self.address, head)))

    def _head(self) -> int:
        """The highest block a quorum of the endpoints has reached (one endpoint: its head)."""
        if len(self.rpcs) == 1:
            return self.rpc.block_number()
        return sorted(self._reachable(lambda r: r.block_number()), reverse=True)[self.need - 1]

    def _block_hash(self, number: int) -> str | None:
        def read(rpc: Rpc) -> str | None:
            block = rpc.get_block(number)
            return None if block is None else str(block["hash"]).lower()

        return self._agreed(read)

    def block_time(self, number: int) -> int | None:
        """The block's timestamp (a root's time on the pages), agreed like everything else kept."""

        def read(rpc: Rpc) -> int | None:
            block = rpc.get_block(number)
            return None if block is None else int(str(block["timestamp"]), 16)

        return self._agreed(read)

    def root_record(self, root: str, submitter: str) -> dict[str, Any] | None:
        """The registry's own record of `root` by `submitter` (the one the index holds), read live at the
        head (not from the index): submitter, time, block and retraction; None when the chain does not
        hold it (now)."""
        from anchor.chain.abi import checksum_address

        block = self._head()
        function = self._abi.functions["rootRecord"]
        key = bytes.fromhex(root.removeprefix("0x"))
        data = function.call_data(checksum_address(submitter), key)
        answer = self._agreed(lambda rpc: function.result(rpc.call(self.address, data, block)))
        timestamp, at, retracted_at, retracted_block = answer
        if int(at) == 0:
            return None
        return {
            "submitter": submitter.lower(),
            "timestamp": int(timestamp),
            "block": int(at),
            "read_at": block,
            "retracted_at": int(retracted_at),
            "retracted_block": int(retracted_block),
        }

    def _topics(self) -> list[Any]:
        return [[self._lineage.topic, self._root.topic]]

    def unwind(self, head: int) -> int:
        """Drop what a reorg (or a revert) may have taken away; returns how many records went.

        When the cursor block changed, the last `confirmations` blocks are read again: records there
        that are still on the chain come back with the next window, the others stay gone. A retained
        hash below that range that changed too means the reorg was deeper than the index can repair."""
        cursor = self.store.cursor()
        if cursor is None:
            return 0
        if cursor <= head and self._block_hash(cursor) == self._stored_hash(cursor):
            return 0  # the cursor block is unchanged, so is every block below it
        rewind = max(self.from_block, min(cursor, head) - self.confirmations)
        below = self.store.db.execute(
            "SELECT number, hash FROM blocks WHERE number < ? ORDER BY number DESC LIMIT 1", (rewind,)
        ).fetchone()
        if below is not None and self._block_hash(int(below["number"])) != below["hash"]:
            raise IndexReorgTooDeep(
                f"the chain changed more than {self.confirmations} blocks deep, below what this index can"
                f" repair (hint: delete {self.store.path} and serve again to rebuild it from the chain)",
                detail={"index": str(self.store.path), "cursor": cursor},
            )
        with self.store.tx():
            dropped = 0
            for table in ("lineage", "roots"):
                dropped += self.store.db.execute(f"DELETE FROM {table} WHERE block >= ?", (rewind,)).rowcount  # noqa: S608
            self.store.db.execute("DELETE FROM blocks WHERE number >= ?", (rewind,))
            self.store.set_meta("cursor", str(rewind - 1))
        return dropped

    def _stored_hash(self, number: int) -> str | None:
        row = self.store.db.execute("SELECT hash FROM blocks WHERE number = ?", (number,)).fetchone()
        return None if row is None else str(row["hash"])

    def sync(self) -> SyncReport:
        """Bring the index to the chain's head: unwind a reorg, then read the new blocks window by window.
        An endpoint out of reach is asked once a sync, not once a read (`down_once`)."""
        self._dissent = {}
        with down_once():
            return self._sync()

    def _sync(self) -> SyncReport:
        head = self._head()
        dropped = self.unwind(head)
        cursor = self.store.cursor()
        start = self.from_block if cursor is None else cursor + 1
        added = 0
        while start <= head:
            end = min(head, start + WINDOW - 1)
            logs = self._agreed(partial(self._logs, start, end), asserts=_log_key)
            end_hash = self._block_hash(end)
            if end_hash is None:  # the chain got shorter while we read: the next sync unwinds it
                break
            added += self._store(logs, end, end_hash, head)
            if self._progress and head - self.from_block > WINDOW:
                self._progress(f"indexed blocks {self.from_block}..{end} of {head} ({added} records)")
            start = end + 1
        cursor = self.store.cursor()
        return SyncReport(
            head=head,
            cursor=cursor if cursor is not None else self.from_block - 1,
            added=added,
            dropped=dropped,
            disagreeing=dict(self._dissent),
        )

    def _logs(self, start: int, end: int, rpc: Rpc) -> list[dict[str, Any]]:
        return scan_logs(rpc, self.address, self._topics(), start, end)

    def _store(self, logs: list[dict[str, Any]], end: int, end_hash: str, head: int) -> int:
        root_topic = self._topics()[0][1]
        with self.store.tx():
            db = self.store.db
            for log in logs:
                block, block_hash = int(str(log["blockNumber"]), 16), str(log["blockHash"]).lower()
                tx, index = str(log["transactionHash"]).lower(), int(str(log["logIndex"]), 16)
                if str(log["topics"][0]).lower() == root_topic:
                    a = self._root.args(log)
                    # the first submitter of a root is kept: a later one's record of the same root
                    # is theirs, and must never replace what this page shows as anchored first
                    db.execute(
                        "INSERT OR IGNORE INTO roots VALUES (?, ?, ?, ?, ?, ?)",
                        (
                            "0x" + bytes(a["root"]).hex(),
                            a["submitter"].lower(),
                            block,
                            block_hash,
                            tx,
                            index,
                        ),
                    )
                else:
                    a = self._lineage.args(log)
                    db.execute(
                        "INSERT OR REPLACE INTO lineage VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            a["researcher"].lower(),
                            "0x" + bytes(a["commit"]).hex(),
                            "0x" + bytes(a["parent"]).hex(),
                            "0x" + bytes(a["diffHash"]).hex(),
                            "0x" + bytes(a["metricHash"]).hex(),
                            int(a["kept"]),
                            int(a["timestamp"]),
                            block,
                            block_hash,
                            tx,
                            index,
                        ),
                    )
                db.execute("INSERT OR REPLACE INTO blocks VALUES (?, ?)", (block, block_hash))
            db.execute("INSERT OR REPLACE INTO blocks VALUES (?, ?)", (end, end_hash))
            # hashes kept for twice the depth: the repairable range, and a block below it to prove that
            db.execute("DELETE FROM blocks WHERE number < ? AND number <> ?", (head - 2 * self.confirmations, end))
            self.store.set_meta("cursor", str(end))
        return len(logs)


def _log_key(logs: list[dict[str, Any]]) -> object:
    """What a window's events assert (where, which transaction, what they say), for the vote: their
    count and a digest of every field, so that a dissenter is shown by what differs."""
    import hashlib

    said = [
        (
            str(log["blockNumber"]),
            str(log["blockHash"]).lower(),
            str(log["transactionHash"]).lower(),
            str(log["logIndex"]),
            [str(t).lower() for t in log["topics"]],
            str(log["data"]).lower(),
        )
        for log in logs
    ]
    return {"events": len(said), "events_sha256": hashlib.sha256(repr(said).encode()).hexdigest()[:16]}


def progress_to_stderr(line: str) -> None:
    sys.stderr.write(line + "\n")
