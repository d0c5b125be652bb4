"""The effect protocol: every on-chain write goes intent → signed → broadcast → mined → confirmed,
each step committed to the journal before the next one starts.

Crash safety comes from two rules. The signed transaction (hash and raw bytes) is recorded before it
is broadcast, so after a crash we always know what may be on the chain. And an unfinished effect is
reconciled by looking, never by resending blindly: its recorded transactions' receipts, then the
registry's own views (is this root anchored? by which transaction?). A resend is only ever the same
signed bytes, so it cannot anchor twice; the registry's write-once rule is the last line of defence.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from anchor.chain import transactions as txs
from anchor.errors import (
    BadInput,
    ChainUnreachable,
    Conflict,
    InsufficientFunds,
    JournalError,
    NonceTooLow,
    RegistryRevert,
    Underpriced,
)
from anchor.journal.faults import fault_point
from anchor.journal.store import Journal, now
from anchor.record import Value

if TYPE_CHECKING:
    import sqlite3

    from anchor.chain.keys import Signer
    from anchor.chain.registry import Registry
    from anchor.chain.rpc import Rpc
    from anchor.chain.signed import SignedLineage

# Default confirmation depth per chain id (anchor.chain.presets); the local chain confirms on inclusion.


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class RunnerConfig(Value):
    confirmations: int = 0
    stuck_after_s: float = 30.0
    """A broadcast transaction with no receipt after this long is replaced with a fee bump."""
    poll_s: float = 0.02
    max_fee_cap: int | None = None
    """Never bump the max fee per gas beyond this (wei); None: no cap."""
    quiet_blocks_s: float = 20.0
    """No new block for this long while a transaction waits: say so, with what to do."""


@dataclass
class RunReport:
    confirmed: list[int] = field(default_factory=list)
    signed: list[int] = field(default_factory=list)
    adopted: list[int] = field(default_factory=list)
    reanchored: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    errors: dict[int, Exception] = field(default_factory=dict)
    """Why each effect in `failed` was parked (what the command that waited on it says)."""
    fee_bumps: int = 0
    chain_reset: bool = False


# Identical signed bytes are the identical transaction (same hash): after a reset chain or a reorg a
# re-signed transaction can be byte for byte the one we dropped, so the journaled row is revived.
_INSERT_TX = (
    "INSERT INTO txs (effect_id, sender, nonce, tx_hash, raw, gas, max_fee, priority_fee, state, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'signed', ?)"
    " ON CONFLICT (tx_hash) DO UPDATE SET effect_id = excluded.effect_id, state = 'signed',"
    " created_at = excluded.created_at"
)


PROGRESS = logging.getLogger("anchor.progress")
"""Lines for a person waiting at a terminal (the CLI shows them on stderr; a server's log may)."""


ONE_BY_ONE = 3
"""Up to this many transactions in flight, the wait names each one; more, and it counts them."""


class _Watch:
    """Says what a wait is waiting for: "tx 0x… sent", "block N: waiting for K confirmations (i/K)", and
    a hint when no block arrives for a while. Silent when everything lands within a second (the local
    chain mines on arrival), so quick runs print nothing extra. The head is read at most once a second."""

    def __init__(self, rpc: Rpc, config: RunnerConfig, sent: Callable[[int], bytes | None]) -> None:
        self.rpc, self.depth, self.quiet_s, self.sent = rpc, config.confirmations, config.quiet_blocks_s, sent
        self.started = time.monotonic()
        self.said: dict[int, tuple[str, int | None]] = {}
        self.head: int | None = None
        self.head_seen = self.started
        self.next_read = self.started + 1.0
        self.hinted = False
        self.counts: tuple[int, int] | None = None

    def look(self, open_effects: Callable[[], list[sqlite3.Row]]) -> None:
        """Called every poll; reads the journal and the head only when a second has passed."""
        now_ = time.monotonic()
        if now_ < self.next_read:
            return
        self.next_read = now_ + 1.0
        waiting = [e for e in open_effects() if e["state"] in ("broadcast", "mined")]
        if not waiting:
            return
        head = self.rpc.block_number()
        if head != self.head:
            self.head, self.head_seen, self.hinted = head, now_, False
        if len(waiting) > ONE_BY_ONE:
            self._say_all(waiting, head)
        else:
            for effect in waiting:
                self._say(effect, head)
        if now_ - self.head_seen >= self.quiet_s and not self.hinted:
            self.hinted = True
            PROGRESS.info(
                f"no new block for {now_ - self.head_seen:.0f} s (head {head}): is the chain producing blocks?"
                " Everything is journaled: Ctrl-C is safe, and `anchor journal flush` resumes the wait later"
            )

    def _say_all(self, waiting: list[sqlite3.Row], head: int) -> None:
        """One line for many effects in flight (a flush at batch size 1 pipelines them all): said when
        the counts change, at most once a second, not a line per transaction."""
        sent = sum(1 for effect in waiting if effect["state"] == "broadcast")
        mined = len(waiting) - sent
        if (sent, mined) == self.counts:
            return
        self.counts = (sent, mined)
        parts = [f"{sent} sent, waiting to be mined"] if sent else []
        parts += [f"{mined} mined, waiting for {self.depth} confirmations"] if mined else []
        PROGRESS.info(f"block {head}: {len(waiting)} transactions in flight: {'; '.join(parts)}")

    def _say(self, effect: sqlite3.Row, head: int) -> None:
        tx = effect["tx_hash"]
        if effect["state"] == "broadcast":
            key: tuple[str, int | None] = ("sent", None)
            sent = self.sent(int(effect["id"]))
            line = f"tx 0x{(sent or b'').hex()} sent; block {head}: waiting for it to be mined"
        else:
            got = max(0, head - int(effect["block_number"]))
            key = ("mined", min(got, self.depth))
            line = (
                f"tx 0x{bytes(tx).hex()} in block {effect['block_number']}; block {head}: waiting for"
                f" {self.depth} confirmations ({min(got, self.depth)}/{self.depth})"
            )
        if self.said.get(effect["id"]) != key:
            self.said[effect["id"]] = key
            PROGRESS.info(line)


def _bump(value: int) -> int:
    return value * 9 // 8 + 1  # +12.5%: above the 10% replacement rule of geth and anvil


class EffectRunner:
    """Drives the effects of one chain and registry to confirmation."""

    def __init__(
        self,
        journal: Journal,
        registry: Registry,
        signer: Signer,
        config: RunnerConfig,
        on_confirmed: Callable[[sqlite3.Row, list[sqlite3.Row]], None] | None = None,
    ) -> None:
        self.journal = journal
        self.registry = registry
        self.chain_id = registry.chain_id
        self.signer = signer
        self.config = config
        self.on_confirmed = on_confirmed
        self.report = RunReport()
        self._quote: tuple[int, int] | None = None

    @property
    def rpc(self) -> Rpc:
        """The chain, as JSON-RPC: every read, estimate and broadcast of the protocol goes through it, and
        transactions are signed by anchor.chain.eip1559, so driving effects imports neither web3 nor
        eth_account (a second of start-up: eth_account's py_ecc builds pairing tables)."""
        return self.registry.rpc

    # ------------------------------------------------------------------ creating effects

    def open_batches(self, max_items: int, max_age_s: float = 0.0) -> list[int]:
        """Turn pending items into root effects of at most `max_items`; a partial batch only once its
        oldest item is `max_age_s` old. One journal transaction per batch."""
        from anchor.batch.merkle import BatchTree  # keccak's import only where batches are built, not at start-up

        created: list[int] = []
        while True:
            with self.journal.tx() as db:
                rows = db.execute(
                    "SELECT id, digest, created_at FROM items WHERE chain_id = ? AND state != 'confirmed'"
                    " AND state = 'pending'"  # the first term is items_open's (the partial index)
                    " ORDER BY id LIMIT ?",
                    (self.chain_id, max_items),
                ).fetchall()
                if not rows or (len(rows) < max_items and now() - rows[0]["created_at"] < max_age_s):
                    return created
                root = BatchTree.build([bytes(r["digest"]) for r in rows]).root
                effect = self._insert_effect(db, "root", root, {"items": len(rows)})
                # one statement: the pending items up to the last one read are exactly `rows` (no submission
                # commits beside this transaction: it holds the writer lock)
                moved = db.execute(
                    "UPDATE items SET state = 'batched', effect_id = ? WHERE chain_id = ? AND state != 'confirmed'"
                    " AND state = 'pending' AND id <= ?",
                    (effect, self.chain_id, rows[-1]["id"]),
                ).rowcount
                if moved != len(rows):
                    raise JournalError(f"journal: batch {effect} took {moved} items where {len(rows)} were read")
                created.append(effect)

    def open_lineage(
        self,
        commit: bytes,
        parent: bytes,
        diff_hash: bytes,
        metric_hash: bytes,
        kept: bool,
        signed: SignedLineage | None = None,
    ) -> int:
        """A direct lineage-record effect (kept and champion attempts); idempotent per (researcher, commit).

        The researcher is the signer of `signed` (relayed with `anchorBySig`), else our own signing key.
        The effect's key is keccak(researcher, commit), so one journal relays the same commit for several
        researchers."""
        if signed is not None:
            f = signed.fields
            if (f.commit, f.parent, f.diff_hash, f.metric_hash, f.kept) != (
                commit,
                parent,
                diff_hash,
                metric_hash,
                kept,
            ):
                raise BadInput("the signed lineage record is not the one being journaled")
        researcher = (signed.fields.researcher if signed is not None else self.signer.address).lower()
        args: dict[str, Any] = {
            "parent": parent.hex(),
            "diff_hash": diff_hash.hex(),
            "metric_hash": metric_hash.hex(),
            "kept": kept,
            "researcher": researcher,
        }
        from eth_hash.auto import keccak

        args["commit"] = commit.hex()
        key = keccak(bytes.fromhex(researcher[2:]) + commit)
        with self.journal.tx() as db:
            row = db.execute(
                "SELECT id, args FROM effects WHERE chain_id = ? AND registry = ? AND kind = 'lineage' AND key = ?",
                (self.chain_id, self.registry.address, key),
            ).fetchone()
            if row is not None:
                known = json.loads(row["args"])
                known.setdefault("researcher", researcher)  # journaled before records named their researcher
                stored = known.pop(
                    "signed", None
                )  # a fresh signature (new deadline) of the same record is the same record
                if known != args:
                    differ = ", ".join(k for k in sorted(args) if known.get(k) != args[k])
                    raise Conflict(
                        f"commit 0x{commit.hex()} already has a lineage record of this researcher (effect"
                        f" #{row['id']}) whose {differ} differs: a record is written once per researcher and"
                        " commit, so a second search that measures the same commit with another result (a noisy"
                        " metric, another contract) cannot record it (hint: start the new search from a commit"
                        " of its own, e.g. `git commit --allow-empty -m 'a new search'`, or continue the earlier"
                        " search in its own --workdir)",
                        detail={"effect": int(row["id"]), "fields": differ},
                    )
                if signed is not None and (stored is None or signed.fields.deadline > int(stored["deadline"])):
                    self._resign(db, int(row["id"]), {**args, "signed": signed.to_json()})
                return int(row["id"])
            if signed is not None:
                args["signed"] = signed.to_json()
            return self._insert_effect(db, "lineage", key, args)

    def _resign(self, db: sqlite3.Connection, effect_id: int, args: dict[str, Any]) -> None:
        """The researcher signed the same record again, with a later deadline (the first one expired
        before it was relayed, say): the new signature replaces the stored one, and an effect parked as
        failed, or abandoned, is opened again from its intent. A record already on chain is left alone:
        the next flush adopts it (write-once), whoever relayed it; so is one already sent."""
        row = db.execute("SELECT state, failure, abandoned_at FROM effects WHERE id = ?", (effect_id,)).fetchone()
        parked = row["failure"] is not None or row["abandoned_at"] is not None
        if not parked and row["state"] in ("broadcast", "mined", "confirmed"):
            return  # on its way with the old signature, or there: a second transaction would only revert
        db.execute("UPDATE txs SET state = 'dropped' WHERE effect_id = ? AND state != 'mined'", (effect_id,))
        db.execute(
            "UPDATE effects SET args = ?, state = 'intent', failure = NULL, abandoned_at = NULL, updated_at = ?"
            " WHERE id = ?",
            (json.dumps(args, sort_keys=True), now(), effect_id),
        )

    def _insert_effect(self, db: sqlite3.Connection, kind: str, key: bytes, args: dict[str, Any]) -> int:
        inserted = db.execute(
            "INSERT INTO effects (chain_id, kind, key, args, state, registry, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, 'intent', ?, ?, ?) RETURNING id",
            (self.chain_id, kind, key, json.dumps(args, sort_keys=True), self.registry.address, now(), now()),
        )
        return int(inserted.fetchone()[0])

    # ------------------------------------------------------------------ driving effects

    def open_effects(self) -> list[sqlite3.Row]:
        """Effects still to drive: not confirmed, not failed (parked until `journal retry`), not abandoned."""
        rows: list[sqlite3.Row] = self.journal.db.execute(
            "SELECT * FROM effects WHERE chain_id = ? AND registry = ? AND state != 'confirmed'"
            " AND failure IS NULL ORDER BY id",
            (self.chain_id, self.registry.address),
        ).fetchall()
        return rows

    def run(self, deadline_s: float = 600.0, progress: Callable[[int, int], None] | None = None) -> RunReport:
        """Drive every open effect to confirmation: sign and broadcast all first (pipelined), then
        collect receipts and confirm. Raises the first typed error; the journal stays consistent."""
        deadline = time.monotonic() + deadline_s
        total = len(self.open_effects())
        watch = _Watch(self.rpc, self.config, self._latest_tx_hash)
        while True:
            self.journal.keepalive()  # a PostgreSQL flush lease is renewed while receipts are awaited
            effects = self.open_effects()
            if progress:
                progress(total - len(effects), total)
            if not effects:
                return self.report
            if time.monotonic() > deadline:
                raise ChainUnreachable(f"{len(effects)} effects still unconfirmed after {deadline_s:.0f}s")
            progressed, self._quote = False, None
            for effect in effects:
                try:
                    progressed |= self.step(effect)
                except (RegistryRevert, Conflict) as exc:  # this effect's own refusal: park it, go on
                    self._fail(effect, exc)
                    progressed = True
            watch.look(self.open_effects)
            if not progressed:
                time.sleep(self.config.poll_s)

    def step(self, effect: sqlite3.Row) -> bool:
        """Advance one effect by at most one state; True if it moved."""
        state = effect["state"]
        if state == "intent":
            return self._sign(effect)
        if state == "signed":
            return self._broadcast(effect)
        if state == "broadcast":
            return self._await_receipt(effect)
        if state == "mined":
            return self._confirm(effect)
        return False

    def _fail(self, effect: sqlite3.Row, exc: Conflict) -> None:
        """Park `effect` as failed with its reason; every other effect keeps flowing. Nothing of it is
        lost: its transactions and items stay journaled, and `journal retry` resumes it from scratch."""
        reason = f"{exc.code}: {exc.message}"[:1000]
        with self.journal.tx() as db:
            db.execute("UPDATE effects SET failure = ?, updated_at = ? WHERE id = ?", (reason, now(), effect["id"]))
        self.report.failed.append(effect["id"])
        self.report.errors[effect["id"]] = exc

    def _set(self, effect_id: int, state: str, **fields: Any) -> None:
        columns = "".join(f", {name} = ?" for name in fields)
        with self.journal.tx() as db:
            db.execute(
                f"UPDATE effects SET state = ?, updated_at = ?{columns} WHERE id = ?",  # noqa: S608 - fixed names
                (state, now(), *fields.values(), effect_id),
            )

    def _call_data(self, effect: sqlite3.Row) -> bytes:
        """The registry call that writes `effect`, as calldata."""
        key = bytes(effect["key"])
        if effect["kind"] == "root":
            return self.registry.call_data("anchorRoot", key)
        a = json.loads(effect["args"])
        if "signed" in a:
            from anchor.chain.signed import SignedLineage

            return self.registry.signed_call_data(SignedLineage.from_json(a["signed"]))
        commit = bytes.fromhex(a["commit"]) if "commit" in a else key
        parent, diff_hash, metric_hash = (bytes.fromhex(a[k]) for k in ("parent", "diff_hash", "metric_hash"))
        return self.registry.call_data("anchor", commit, parent, diff_hash, metric_hash, bool(a["kept"]))

    def _on_chain(self, effect: sqlite3.Row) -> tuple[bytes, int] | None:
        """(tx hash, block) if the registry already holds this effect's record, whoever wrote it."""
        key = bytes(effect["key"])
        if effect["kind"] == "root":
            # only our own record of the root counts: a stranger's record of the same root is theirs
            record = self.registry.root_record(key, self.signer.address)
            if record is None:
                return None
            tx_hash = self.registry.root_tx(key, record.block_number, record.submitter)
            return (bytes.fromhex(tx_hash[2:]) if tx_hash else b"", record.block_number)
        a = json.loads(effect["args"])
        commit = bytes.fromhex(a["commit"]) if "commit" in a else key
        researcher = a.get("researcher") or self.signer.address.lower()
        lineage = self.registry.lineage(commit, researcher)
        if lineage is None:
            return None
        # adopted only if every field, researcher included, is ours: a stranger's record of our commit
        # is not our record
        mine = (
            lineage.parent[2:],
            lineage.diff_hash[2:],
            lineage.metric_hash[2:],
            lineage.kept,
            lineage.researcher.lower(),
        )
        if mine != (a["parent"], a["diff_hash"], a["metric_hash"], a["kept"], researcher):
            what = (
                "with other lineage fields"
                if lineage.researcher.lower() == researcher
                else f"first by {lineage.researcher}, not by our researcher {researcher}"
            )
            raise Conflict(
                f"commit {lineage.commit} was anchored {what}",
                detail={"tx": lineage.tx_hash, "researcher": lineage.researcher},
            )
        return bytes.fromhex(lineage.tx_hash[2:]), lineage.block_number

    def _adopt(self, effect: sqlite3.Row, found: tuple[bytes, int]) -> bool:
        tx_hash, block = found
        self.report.adopted.append(effect["id"])
        receipt = txs.get_receipt(self.rpc, tx_hash) if tx_hash else None
        self._set(
            effect["id"],
            "mined",
            tx_hash=tx_hash,
            block_number=block,
            block_hash=txs.block_hash(self.rpc, block),
            gas_used=None if receipt is None else int(receipt["gasUsed"]),
        )
        return True

    def _sign(self, effect: sqlite3.Row) -> bool:
        """Estimate, sign and journal the effect's transaction. A record already on chain (a lost journal,
        a concurrent writer, a crash after broadcast) makes the estimate revert: the registry is write-once
        per (submitter, root) and (researcher, commit). Only then is the registry read, and our record
        adopted, never resent; a stranger's record of our commit is a `Conflict`. (Reading the registry
        first cost every effect two or three calls for what the estimate says anyway.)"""
        fault_point("before_sign")
        data = self._call_data(effect)
        try:
            gas = txs.estimate_gas(self.rpc, self.registry.address, data, self.signer.address)
        except RegistryRevert as exc:
            found = self._on_chain(effect)
            if found is not None:  # anchored already: adopt, never resend
                return self._adopt(effect, found)
            if exc.detail.get("error") in ("RootAlreadyAnchored", "LineageAlreadyAnchored"):
                return False  # the record is not readable yet where the estimate ran: the next pass looks again
            raise
        except InsufficientFunds:  # the node's estimate checked the balance: said as a refused broadcast says it
            raise txs.unfunded(self.rpc, self.signer.address, 0, 0, self.chain_id, int(effect["id"])) from None
        max_fee, priority = self._fees()
        chain_nonce = txs.transaction_count(self.rpc, self.signer.address)
        with self.journal.tx() as db:
            nonce = self._next_nonce(db, chain_nonce)
            tx_hash, raw = self.signer.sign_type2(
                chain_id=self.chain_id,
                to=self.registry.address,
                data=data,
                gas=gas,
                nonce=nonce,
                max_fee=max_fee,
                priority_fee=priority,
            )
            db.execute(
                _INSERT_TX,
                (effect["id"], self.signer.address, nonce, tx_hash, raw, gas, max_fee, priority, now()),
            )
            db.execute("UPDATE effects SET state = 'signed', updated_at = ? WHERE id = ?", (now(), effect["id"]))
        self.report.signed.append(effect["id"])
        fault_point("after_sign")
        return True

    def _fees(self) -> tuple[int, int]:
        """The fee quote, read once per pass of `run` over the open effects: a pass signs every effect
        that waits (64 of a flush at batch size 1), and two reads each were a fifth of its calls. A quote
        that is stale by then is what replacement (`_replace`) exists for."""
        if self._quote is None:
            self._quote = txs.fee_quote(self.rpc)
        return self._quote

    def _next_nonce(self, db: sqlite3.Connection, chain_nonce: int) -> int:
        """The node's pending nonce, or one past our highest transaction still in flight (signed but
        perhaps not broadcast yet), whichever is higher. Derived, never stored: nothing to drift.
        Runs inside the journal transaction that records the new transaction, so two submitters
        sharing one key never pick the same nonce."""
        row = db.execute(
            "SELECT max(txs.nonce) FROM txs JOIN effects ON effects.id = txs.effect_id"
            " WHERE effects.chain_id = ? AND txs.sender = ? AND effects.state IN ('signed', 'broadcast')"
            " AND effects.failure IS NULL AND txs.state != 'dropped'",
            (self.chain_id, self.signer.address),
        ).fetchone()
        return max(chain_nonce, -1 if row[0] is None else int(row[0]) + 1)

    def _latest_tx_hash(self, effect_id: int) -> bytes | None:
        sent = self._txs(effect_id)
        return bytes(sent[-1]["tx_hash"]) if sent else None

    def _txs(self, effect_id: int) -> list[sqlite3.Row]:
        rows: list[sqlite3.Row] = self.journal.db.execute(
            "SELECT * FROM txs WHERE effect_id = ? AND state != 'dropped' ORDER BY id", (effect_id,)
        ).fetchall()
        return rows

    def _send(self, effect: sqlite3.Row, latest: sqlite3.Row) -> bool | None:
        """Broadcast `latest`'s signed bytes: None once the node has them; on a refusal, what handling
        it did (a used nonce is reconciled, an underpriced transaction replaced)."""
        try:
            txs.broadcast(self.rpc, bytes(latest["raw"]))
        except NonceTooLow:
            return self._nonce_consumed(effect)
        except Underpriced:
            return self._replace(effect, latest)
        except InsufficientFunds:  # parked as failed by `run`: nothing else waits on an unfunded key
            raise txs.unfunded(
                self.rpc, latest["sender"], int(latest["gas"]), int(latest["max_fee"]), self.chain_id, int(effect["id"])
            ) from None
        return None

    def _broadcast(self, effect: sqlite3.Row) -> bool:
        latest = self._txs(effect["id"])[-1]
        refused = self._send(effect, latest)
        if refused is not None:
            return refused
        fault_point("after_broadcast")  # sent, but the journal still says "signed"
        with self.journal.tx() as db:
            db.execute("UPDATE txs SET state = 'broadcast' WHERE id = ?", (latest["id"],))
            db.execute("UPDATE effects SET state = 'broadcast', updated_at = ? WHERE id = ?", (now(), effect["id"]))
        return True

    def _nonce_consumed(self, effect: sqlite3.Row) -> bool:
        """Our nonce was used and none of our transactions has a receipt: look at the registry."""
        if self._receipt_of_any(effect) is not None:
            return self._await_receipt(effect)
        found = self._on_chain(effect)
        if found is not None:
            return self._adopt(effect, found)
        self._back_to_intent(effect["id"])
        return True

    def _receipt_of_any(self, effect: sqlite3.Row) -> tuple[sqlite3.Row, dict[str, Any]] | None:
        for tx in reversed(self._txs(effect["id"])):
            receipt = txs.get_receipt(self.rpc, bytes(tx["tx_hash"]))
            if receipt is not None:
                return tx, receipt
        return None

    def _await_receipt(self, effect: sqlite3.Row) -> bool:
        hit = self._receipt_of_any(effect)
        if hit is None:
            return self._maybe_replace(effect)
        tx, receipt = hit
        if receipt["status"] != 1:  # reverted on chain: someone anchored it first, or a real error
            found = self._on_chain(effect)
            if found is None:
                reason = txs.replay_revert(
                    self.rpc,
                    self.registry.address,
                    self._call_data(effect),
                    self.signer.address,
                    int(receipt["blockNumber"]),
                )
                raise RegistryRevert(
                    f"{reason.message} (tx 0x{bytes(tx['tx_hash']).hex()})",
                    detail={**reason.detail, "tx_hash": "0x" + bytes(tx["tx_hash"]).hex()},
                )
            return self._adopt(effect, found)
        fault_point("after_receipt")
        with self.journal.tx() as db:
            db.execute("UPDATE txs SET state = 'mined' WHERE id = ?", (tx["id"],))
            db.execute(
                "UPDATE effects SET state = 'mined', tx_hash = ?, block_number = ?, block_hash = ?, gas_used = ?,"
                " updated_at = ? WHERE id = ?",
                (
                    bytes(receipt["transactionHash"]),
                    int(receipt["blockNumber"]),
                    bytes(receipt["blockHash"]),
                    int(receipt["gasUsed"]),
                    now(),
                    effect["id"],
                ),
            )
        return True

    def _maybe_replace(self, effect: sqlite3.Row) -> bool:
        latest = self._txs(effect["id"])[-1]
        if not txs.is_pending(self.rpc, bytes(latest["tx_hash"])):
            # the node forgot it (restart, eviction): resend the very same signed bytes
            refused = self._send(effect, latest)
            return False if refused is None else refused
        if now() - latest["created_at"] < self.config.stuck_after_s:
            return False
        return self._replace(effect, latest)

    def _replace(self, effect: sqlite3.Row, latest: sqlite3.Row) -> bool:
        """Sign a replacement at the same nonce with fees bumped past the market and the 10% rule."""
        quote_max, quote_priority = txs.fee_quote(self.rpc)
        max_fee = max(_bump(latest["max_fee"]), quote_max)
        priority = max(_bump(latest["priority_fee"]), quote_priority)
        if self.config.max_fee_cap is not None:
            max_fee = min(max_fee, self.config.max_fee_cap)
            if max_fee <= latest["max_fee"]:
                return False  # at the cap: wait rather than overpay
        priority = min(priority, max_fee)
        data = self._call_data(effect)
        gas = int(latest["gas"])
        tx_hash, raw = self.signer.sign_type2(
            chain_id=self.chain_id,
            to=self.registry.address,
            data=data,
            gas=gas,
            nonce=latest["nonce"],
            max_fee=max_fee,
            priority_fee=priority,
        )
        with self.journal.tx() as db:
            db.execute("UPDATE txs SET state = 'replaced' WHERE id = ?", (latest["id"],))
            db.execute(
                _INSERT_TX,
                (effect["id"], self.signer.address, latest["nonce"], tx_hash, raw, gas, max_fee, priority, now()),
            )
            db.execute("UPDATE effects SET state = 'signed', updated_at = ? WHERE id = ?", (now(), effect["id"]))
        self.report.fee_bumps += 1
        return True

    def _confirm(self, effect: sqlite3.Row) -> bool:
        fault_point("during_confirmation")
        head = self.rpc.block_number()
        block = int(effect["block_number"])
        if head - block < self.config.confirmations:
            return False
        # The block that holds the record (our mined transaction's, or the one we adopted) is still the
        # chain's at its height: a block hash commits to every block before it and to the state after it,
        # so the record is there (the registry never deletes one). Reading the registry again here cost
        # four calls an effect for what the hash already says.
        canonical = txs.block_hash(self.rpc, block)
        if canonical != bytes(effect["block_hash"] or b""):
            self._back_to_intent(effect["id"])  # reorged out (or the chain was reset): anchor again
            self.report.reanchored.append(effect["id"])
            return True
        items = self.journal.db.execute(
            "SELECT * FROM items WHERE effect_id = ? ORDER BY id", (effect["id"],)
        ).fetchall()
        fresh = self.journal.db.execute("SELECT * FROM effects WHERE id = ?", (effect["id"],)).fetchone()
        if self.on_confirmed is not None:
            self.on_confirmed(fresh, items)  # proof files first: rewriting them after a crash is harmless
        with self.journal.tx() as db:
            db.execute("UPDATE effects SET state = 'confirmed', updated_at = ? WHERE id = ?", (now(), effect["id"]))
            db.execute("UPDATE items SET state = 'confirmed' WHERE effect_id = ?", (effect["id"],))
        self.report.confirmed.append(effect["id"])
        return True

    def _back_to_intent(self, effect_id: int) -> None:
        with self.journal.tx() as db:
            db.execute("UPDATE txs SET state = 'dropped' WHERE effect_id = ?", (effect_id,))
            db.execute(
                "UPDATE effects SET state = 'intent', tx_hash = NULL, block_number = NULL, block_hash = NULL,"
                " gas_used = NULL, updated_at = ? WHERE id = ?",
                (now(), effect_id),
            )
            db.execute("UPDATE items SET state = 'batched' WHERE effect_id = ?", (effect_id,))

    # ------------------------------------------------------------------ reconciliation

    def _lost_history(self) -> bool:
        """The chain's head is below a block that held one of our confirmed anchors: it forgot blocks.
        A local chain restarted within the second of its first start has the same genesis hash (anvil's
        genesis is a function of its timestamp), so the genesis alone cannot tell."""
        row = self.journal.db.execute(
            "SELECT max(block_number) FROM effects WHERE chain_id = ? AND state = 'confirmed'", (self.chain_id,)
        ).fetchone()
        highest = row[0] if row is not None else None
        return highest is not None and self.registry.rpc.block_number() < int(highest)

    def reconcile_chain_identity(self) -> bool:
        """Detect a chain that forgot its history (a reset local chain, a deep reorg of everything):
        its genesis hash differs from the one recorded. Then every effect is re-checked and nonces
        follow from the node again. Returns True if a reset was found."""
        # read through the light client: opening a service (a submission) must not cost web3's import
        header = self.registry.rpc.get_block(0)
        key = f"genesis:{self.chain_id}"
        recorded = self.journal.meta(key)
        current = str(header["hash"]).removeprefix("0x") if header is not None else ""
        if recorded == current and not self._lost_history():
            return False
        with self.journal.tx() as db:
            db.execute(
                "INSERT INTO meta VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = ?", (key, current, current)
            )
            if recorded is None:
                return False
            db.execute(
                "UPDATE effects SET state = 'intent', registry = ?, tx_hash = NULL, block_number = NULL,"
                " block_hash = NULL, gas_used = NULL, updated_at = ? WHERE chain_id = ?",
                (self.registry.address, now(), self.chain_id),
            )
            db.execute(
                "UPDATE txs SET state = 'dropped' WHERE effect_id IN (SELECT id FROM effects WHERE chain_id = ?)",
                (self.chain_id,),
            )
            db.execute(
                "UPDATE items SET state = 'batched' WHERE chain_id = ? AND state = 'confirmed'", (self.chain_id,)
            )
        self.report.chain_reset = True
        return True
