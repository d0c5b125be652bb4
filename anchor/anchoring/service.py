"""The anchoring service: submit manifests to the journal, batch them, drive them on chain, reconcile.

One object per (data directory, chain). Opening it reconciles: a reset local chain gets its registry
redeployed and every effect re-checked; unfinished effects are finished by looking, not resending.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from anchor.chain.open import ChainHandle, open_chain, open_registry
from anchor.errors import DeploymentMismatch, NotDeployed
from anchor.journal.backends import open_journal
from anchor.journal.effects import EffectRunner, RunnerConfig, RunReport
from anchor.journal.reads import item_with_effect, record_proof_errors
from anchor.journal.status import Status, journal_status
from anchor.journal.store import Journal
from anchor.journal.submit import Submission, Submitted, proof_paths, submit_many
from anchor.settings.session import Settings

if TYPE_CHECKING:
    from anchor.chain.registry import Registry
    from anchor.proof.file import ProofFile

DEFAULT_BATCH = 256
SERVICE_BATCH = 4096
"""The most items a service's flusher puts in one root. It takes every pending item up to this bound, so
batches grow with the arrival rate and gas per item falls as load rises: a root costs about 46,000 gas
whatever it holds (53,000 for 256 items is 207 an item; 4,096 is 11). The bound keeps one flush's tree,
proof encoding and tree file (256 KiB) small; a Merkle path is 12 siblings."""


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
            load_signer(handle.chain_id, settings.keystore, settings.env),
            runner_config(handle.chain_id, settings),
            on_confirmed=self._write_proofs,
        )
        self._built: dict[bytes, tuple[ProofFile, bytes]] = {}
        """The proofs the last flush kept, with their written bytes, by manifest digest (`proof`): only the
        last one's, or a flusher that runs for days would hold every proof it ever wrote."""

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
        service = cls(settings, handle, registry, open_journal(settings.data_dir, settings.journal_url))
        service.runner.reconcile_chain_identity()
        return service

    def _write_proofs(self, effect: Any, items: list[Any]) -> None:
        if effect["kind"] != "root":
            return
        # imported here: proof files (pydantic models) cost ~100 ms of start-up that `journal status`
        # and a submission never need (the CLI's import budget)
        from anchor.anchoring.proofs import write_batch_proofs

        paths = proof_paths(self.journal.db, [int(item["id"]) for item in items])
        failed = write_batch_proofs(
            self.settings.layout, effect, items, self.registry.address, self.registry.code_hash, paths, self._built
        )
        record_proof_errors(self.journal, {int(item["id"]): failed.get(int(item["id"])) for item in items})

    def submit(self, submissions: Sequence[Submission]) -> list[Submitted]:
        """Journal `submissions`; one already confirmed (anchored before) gets its proof file now, since
        no later flush will write it."""
        from anchor.proof.file import holds_it_sealed, write_proof

        done = submit_many(self.journal, self.chain_id, submissions)
        for sub, result in zip(submissions, done, strict=True):
            if result.state == "confirmed" and sub.proof_path is not None:
                proof = self.proof(result.digest)
                if proof is not None and not holds_it_sealed(sub.proof_path, proof):  # a seal is kept
                    write_proof(proof, sub.proof_path)
        return done

    def proof(self, digest: bytes) -> ProofFile | None:
        """The proof of a manifest confirmed on this chain (None: not confirmed here): the one a flush of
        this service kept, as it built it (a folder of 100,000 files is 15 MB to decode and validate
        again), else from the store."""
        from anchor.anchoring.proofs import stored_proof

        if digest in self._built:
            return self._built[digest][0]
        return stored_proof(self.settings.layout, self.journal, digest, self.chain_id, self.registry.code_hash)

    def proof_bytes(self, digest: bytes) -> bytes | None:
        """The written bytes of the proof a flush of this service kept (`proof`); None for any other."""
        kept = self._built.get(digest)
        return None if kept is None else kept[1]

    def flush(
        self, max_items: int = DEFAULT_BATCH, max_age_s: float = 0.0, progress: Callable[[int, int], None] | None = None
    ) -> RunReport:
        """Batch what is pending and drive every open effect to confirmation.

        One flush at a time per journal: several API workers, CLI runs and researchers share one
        journal without driving the same effect twice. On SQLite that is an flock in the data
        directory; on PostgreSQL a lease with a fencing token per chain and registry, so replicas on
        several hosts take turns, and one that stalls past its lease cannot commit afterwards."""
        name = f"flush:{self.chain_id}:{self.registry.address.lower()}"
        self._built.clear()
        with self.journal.exclusive(name, ttl_s=self.settings.env.lease_s):
            self.runner.open_batches(max_items, max_age_s)
            report = self.runner.run(progress=progress)
        self.journal.compact_counts()  # PostgreSQL's count rows, one per state again (anchor.journal.pg)
        return report

    def item(self, digest: bytes) -> Any:
        return item_with_effect(self.journal, self.chain_id, digest)

    def status(self, recent: int = 5) -> Status:
        return journal_status(self.journal, self.chain_id, recent)

    def close(self) -> None:
        self.journal.close()


def runner_config(chain_id: int, settings: Settings) -> RunnerConfig:
    """The effect runner's knobs for `chain_id`: the chain preset's confirmation depth unless
    ANCHOR_CONFIRMATIONS says otherwise, the stuck-transaction delay and the fee cap. Read here, not in
    the journal, so that the store never reads settings."""
    from anchor.chain.presets import DEFAULT_CONFIRMATIONS, PRESETS

    preset = PRESETS.get(chain_id)
    env = settings.env
    given = env.confirmations
    depth = given if given is not None else preset.confirmations if preset else DEFAULT_CONFIRMATIONS
    stuck, cap, quiet = env.stuck_after_s, env.max_fee_wei, env.quiet_blocks_s
    return RunnerConfig(confirmations=depth, stuck_after_s=stuck, max_fee_cap=cap or None, quiet_blocks_s=quiet)


def _redeploy_local(settings: Settings, handle: ChainHandle) -> Registry:
    """The local chain has no registry (first use, or it lost its state): deploy it (real chains are
    never touched)."""
    from anchor.chain.compiler import compile_registry
    from anchor.chain.deployment import deploy
    from anchor.chain.keys import load_signer
    from anchor.chain.registry import Registry

    logging.getLogger("anchor.progress").info(
        f"no registry on the local chain yet: deploying one (recorded in {settings.layout.deployments})"
    )
    record = deploy(
        handle.w3,
        handle.chain_id,
        load_signer(handle.chain_id, None, settings.env),
        compile_registry(),
        settings.data_dir,
    )
    return Registry(handle.rpc, handle.chain_id, record.address, record.code_hash, record.block_number)
