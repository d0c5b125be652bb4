"""The anchoring service: submit manifests to the journal, batch them, drive them on chain, reconcile.

One object per (data directory, chain). Opening it reconciles: a reset local chain gets its registry
redeployed and every effect re-checked; unfinished effects are finished by looking, not resending.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from anchor.errors import BadInput, DeploymentMismatch, NotDeployed
from anchor.journal.effects import EffectRunner, RunnerConfig, RunReport
from anchor.journal.store import Journal, now, open_journal
from anchor.journal.submit import Submission, Submitted, proof_paths, submit_many
from anchor.session import ChainHandle, Settings, open_chain, open_registry

if TYPE_CHECKING:
    from anchor.chain.registry import Registry

DEFAULT_BATCH = 256


@dataclass(frozen=True, slots=True)
class Status:
    chain_id: int
    items: dict[str, int]
    effects: dict[str, int]
    recent: list[dict[str, Any]]
    proof_errors: list[dict[str, Any]]
    failed: list[dict[str, Any]]
    """Effects the registry refused, parked with their reason until `journal retry` or `abandon`."""

    def to_json(self) -> dict[str, Any]:
        return {
            "chain_id": self.chain_id, "items": self.items, "effects": self.effects, "recent": self.recent,
            "proof_errors": self.proof_errors, "failed": self.failed,
        }  # fmt: skip


class AnchorService:
    def __init__(self, settings: Settings, handle: ChainHandle, registry: Registry, journal: Journal) -> None:
        from anchor.chain.keys import load_signer

        self.settings = settings
        self.handle = handle
        self.registry = registry
        self.journal = journal
        self.chain_id = handle.chain_id
        self.runner = EffectRunner(
            journal,
            registry,
            load_signer(handle.chain_id, settings.keystore),
            RunnerConfig.for_chain(handle.chain_id),
            on_confirmed=self._write_proofs,
        )

    @classmethod
    def open(cls, settings: Settings, *, start_local: bool = True) -> AnchorService:
        """Connect, check (or, on a reset local chain, redeploy) the registry, and reconcile identity."""
        handle = open_chain(settings, start_local=start_local)
        try:
            registry = open_registry(settings, handle)
        except NotDeployed:
            if not handle.local:
                raise  # a real chain: deploying costs money and is the user's decision (`anchor deploy`)
            registry = _redeploy_local(settings, handle)  # the embedded chain just works on first use
        try:
            registry.checked_block()
        except DeploymentMismatch as exc:
            if not (handle.local and "no code" in exc.message):
                raise
            registry = _redeploy_local(settings, handle)
        service = cls(settings, handle, registry, open_journal(settings.data_dir))
        service.runner.reconcile_chain_identity()
        return service

    def _write_proofs(self, effect: Any, items: list[Any]) -> None:
        if effect["kind"] != "root":
            return
        # imported here: proof files (pydantic models) cost ~100 ms of start-up that `journal status`
        # and a submission never need (the import budget of issue 13)
        from anchor.journal.proofs import write_batch_proofs

        paths = proof_paths(self.journal.db, [int(item["id"]) for item in items])
        failed = write_batch_proofs(
            self.settings.proofs_dir, effect, items, self.registry.address, self.registry.code_hash, paths
        )
        with self.journal.tx() as db:
            db.executemany(
                "UPDATE items SET proof_error = ? WHERE id = ?",
                [(failed.get(int(item["id"])), item["id"]) for item in items],
            )

    def submit(self, submissions: Sequence[Submission]) -> list[Submitted]:
        """Journal `submissions`; one already confirmed (anchored before) gets its proof file now, since
        no later flush will write it."""
        from anchor.proof_file import load_proof, write_proof

        done = submit_many(self.journal, self.chain_id, submissions)
        for sub, result in zip(submissions, done, strict=True):
            if result.state == "confirmed" and sub.proof_path is not None:
                write_proof(load_proof(self.settings.proofs_dir / f"{result.digest.hex()}.json"), sub.proof_path)
        return done

    def flush(
        self, max_items: int = DEFAULT_BATCH, max_age_s: float = 0.0, progress: Callable[[int, int], None] | None = None
    ) -> RunReport:
        """Batch what is pending and drive every open effect to confirmation.

        One flush at a time per data directory (an exclusive flock): several API workers, CLI runs and
        researchers share one journal without driving the same effect twice."""
        import fcntl

        with open(self.settings.data_dir / "flush.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                self.runner.open_batches(max_items, max_age_s)
                return self.runner.run(progress=progress)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def item(self, digest: bytes) -> Any:
        return self.journal.db.execute(
            "SELECT items.*, effects.state AS effect_state, effects.gas_used, effects.tx_hash AS effect_tx"
            " FROM items LEFT JOIN effects ON effects.id = items.effect_id WHERE items.chain_id = ? AND digest = ?",
            (self.chain_id, digest),
        ).fetchone()

    def status(self, recent: int = 5) -> Status:
        return journal_status(self.journal, self.chain_id, recent)

    def close(self) -> None:
        self.journal.close()


def journal_status(journal: Journal, chain_id: int, recent: int = 5) -> Status:
    """What is pending, in flight and confirmed on `chain_id`: the journal alone, no key and no write."""
    db = journal.db
    items = dict(
        db.execute("SELECT state, count(*) FROM items WHERE chain_id = ? GROUP BY state", (chain_id,)).fetchall()
    )
    effects = dict(
        db.execute("SELECT state, count(*) FROM effects WHERE chain_id = ? GROUP BY state", (chain_id,)).fetchall()
    )
    rows = db.execute(
        "SELECT id, kind, key, state, tx_hash, block_number, gas_used FROM effects WHERE chain_id = ?"
        " ORDER BY id DESC LIMIT ?",
        (chain_id, recent),
    ).fetchall()
    failed = db.execute(
        "SELECT id, kind, key, args, failure, abandoned_at FROM effects WHERE chain_id = ? AND failure IS NOT NULL"
        " ORDER BY id",
        (chain_id,),
    ).fetchall()
    unwritten = db.execute(
        "SELECT id, digest, proof_error FROM items WHERE chain_id = ? AND proof_error IS NOT NULL ORDER BY id",
        (chain_id,),
    ).fetchall()
    return Status(
        chain_id,
        {state: items.get(state, 0) for state in ("pending", "batched", "confirmed")},
        {
            **{state: effects.get(state, 0) for state in ("intent", "signed", "broadcast", "mined", "confirmed")},
            "failed": sum(1 for r in failed if r["abandoned_at"] is None),
            "abandoned": sum(1 for r in failed if r["abandoned_at"] is not None),
        },
        [
            {
                "id": r["id"],
                "kind": r["kind"],
                "key": "0x" + bytes(r["key"]).hex(),
                "state": r["state"],
                "tx_hash": None if r["tx_hash"] is None else "0x" + bytes(r["tx_hash"]).hex(),
                "block_number": r["block_number"],
                "gas_used": r["gas_used"],
            }
            for r in rows
        ],
        [
            {"item": r["id"], "manifest_digest": "0x" + bytes(r["digest"]).hex(), "error": r["proof_error"]}
            for r in unwritten
        ],
        [
            {
                "id": r["id"],
                "kind": r["kind"],
                "key": "0x" + bytes(r["key"]).hex(),
                "reason": r["failure"],
                "commit": json.loads(r["args"]).get("commit"),
                "abandoned": r["abandoned_at"] is not None,
            }  # fmt: skip
            for r in failed
        ],
    )


def retry_effect(journal: Journal, chain_id: int, effect_id: int) -> None:
    """Resume a failed effect from its intent (after the cause is fixed: a new signature, a v2
    registry). The next flush re-checks the chain before signing, so nothing is ever sent twice."""
    with journal.tx() as db:
        row = _failed_effect(db, chain_id, effect_id, "retry")
        db.execute("UPDATE txs SET state = 'dropped' WHERE effect_id = ? AND state != 'mined'", (row["id"],))
        db.execute(
            "UPDATE effects SET failure = NULL, state = 'intent', updated_at = ? WHERE id = ?", (now(), row["id"])
        )


def abandon_effect(journal: Journal, chain_id: int, effect_id: int) -> None:
    """Close a failed effect for good. Nothing is deleted: the effect, its reason and its items stay
    in the journal (status counts it as abandoned) and are never sent."""
    with journal.tx() as db:
        row = _failed_effect(db, chain_id, effect_id, "abandon")
        db.execute("UPDATE effects SET abandoned_at = ?, updated_at = ? WHERE id = ?", (now(), now(), row["id"]))


def _failed_effect(db: Any, chain_id: int, effect_id: int, verb: str) -> Any:
    row = db.execute(
        "SELECT id, failure, abandoned_at FROM effects WHERE id = ? AND chain_id = ?", (effect_id, chain_id)
    ).fetchone()
    if row is None:
        raise BadInput(
            f"no effect #{effect_id} on chain {chain_id} (see `anchor journal status`)", detail={"field": "id"}
        )
    if row["failure"] is None or row["abandoned_at"] is not None:
        state = "abandoned" if row["abandoned_at"] is not None else "not failed"
        done = "abandoned" if verb == "abandon" else "retried"
        raise BadInput(f"effect #{effect_id} is {state}: only a failed effect can be {done}", detail={"field": "id"})
    return row


def _redeploy_local(settings: Settings, handle: ChainHandle) -> Registry:
    """The local chain has no registry (first use, or it lost its state): deploy it (real chains are
    never touched)."""
    from anchor.chain.compiler import compile_registry
    from anchor.chain.deployment import deploy
    from anchor.chain.keys import load_signer
    from anchor.chain.registry import Registry

    record = deploy(
        handle.w3,
        handle.chain_id,
        load_signer(handle.chain_id),
        compile_registry(settings.data_dir / "build"),
        settings.data_dir,
    )
    return Registry(handle.w3, handle.chain_id, record.address, record.code_hash, record.block_number)
