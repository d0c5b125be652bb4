"""One `Stamper`, two ways to anchor: with a key here, or through anchoring services.

Why one decision: "a key here, or services" was decided in nine places and they disagreed (`anchor
stamp` honoured ANCHOR_SERVICE_URLS, `bundle --anchor`, `mission run` and `research run` did not, and
started a local chain of their own). `Stamper.from_settings` is the only reader of `--service` and
ANCHOR_SERVICE_URLS (`settings.service_urls`); every writer (stamp, bundle, research, its checkpoints
and champions, missions) takes the Stamper it returns and branches on nothing: what differs between
the two ways is behind these methods.

    stamper = Stamper.from_settings(settings)           # services if configured, else the key here
    stamped = stamper.stamp(Path("results"))            # Stamped: state "anchored" or "pending"
    stamper.upgrade(stamped.proof_path)                 # pending → complete once the services anchored it
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from anchor.errors import AnchorError, BadInput, ServiceError
from anchor.record import Value
from anchor.settings.session import Settings

if TYPE_CHECKING:
    from anchor.anchoring.client import StampOutcome, Upgraded
    from anchor.anchoring.flusher import Flusher
    from anchor.anchoring.service import AnchorService
    from anchor.anchoring.stamp import AnchorOutcome
    from anchor.manifest.bundle import BundleManifest
    from anchor.manifest.exclude import Rules
    from anchor.manifest.filetree import FileTreeManifest
    from anchor.manifest.hashing import Progress
    from anchor.proof.file import PendingProof, ProofFile
    from anchor.proof.receipt import Receipt

Lineage = tuple[bytes, bytes, bytes, bytes, bool]
"""(commit, parent, diffHash, metricHash, kept) of one lineage record."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class LineageWritten(Value):
    """One lineage record sent: whose it is, and where it landed (None: relayed, not mined yet)."""

    researcher: str
    tx_hash: str | None = None
    block: int | None = None
    services: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Stamped(Value):
    """What a stamp did, the same shape whichever way it went."""

    proof_path: Path
    digest: str
    """The manifest digest, 0x-prefixed."""
    state: Literal["anchored", "pending"]
    """anchored: the proof names its transaction now; pending: services hold it (`upgrade` later)."""
    proof: ProofFile | PendingProof
    file_count: int = 0
    receipts: tuple[Receipt, ...] = ()
    """The services' signed receipts (through services only)."""
    not_taken: dict[str, str] = field(default_factory=dict)
    """Services that did not take it now, and why (`upgrade` submits to them again)."""
    already_anchored: bool = False
    """Anchored before (same bytes): nothing was sent now."""
    gas_used: int | None = None
    superseded: Path | None = None
    """Where the proof of other bytes that stood at `proof_path` was kept."""
    refreshed: tuple[Path, ...] = ()
    stale: tuple[Path, ...] = ()

    @property
    def anchored(self) -> bool:
        return self.state == "anchored"

    @property
    def anchored_proof(self) -> ProofFile:
        """The complete proof of an anchored stamp (`Pending` for a pending one: nothing to name yet)."""
        from anchor.errors import Pending
        from anchor.proof.file import ProofFile

        if not isinstance(self.proof, ProofFile):
            raise Pending(
                f"{self.proof_path}: pending at the services; `anchor upgrade` completes it",
                detail={"proof": str(self.proof_path)},
            )
        return self.proof

    @classmethod
    def _of_key(cls, outcome: AnchorOutcome) -> Stamped:
        return cls(
            outcome.proof_path,
            outcome.proof.manifest_digest,
            "anchored",
            outcome.proof,
            outcome.file_count,
            already_anchored=outcome.already_anchored,
            gas_used=outcome.gas_used,
            superseded=outcome.superseded,
            refreshed=outcome.refreshed,
            stale=outcome.stale,
        )

    @classmethod
    def _of_services(cls, outcome: StampOutcome, proof: ProofFile | PendingProof) -> Stamped:
        return cls(
            outcome.proof_path,
            outcome.digest,
            "pending",
            proof,
            outcome.file_count,
            receipts=outcome.receipts,
            not_taken=dict(outcome.failed),
        )


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Queued(Value):
    """One path `Stamper.queue` took: in the journal here, or pending at services."""

    path: Path
    digest: str
    """The manifest digest, 0x-prefixed."""
    state: str
    """The journal's state for the item ("pending" until a flush batches it), or "pending" at services."""
    duplicate: bool = False
    """Journaled before (the same bytes, or the same idempotency key and content): nothing new was queued."""
    services: tuple[str, ...] = ()
    not_taken: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {"path": str(self.path), "manifest_digest": self.digest, "state": self.state}
        if self.services or self.not_taken:
            return {**row, "services": list(self.services), "not_taken": self.not_taken}
        return {**row, "duplicate": self.duplicate}


class Stamper(ABC):
    """Anchors manifests and writes their proofs; `KeyStamper` or `ServiceStamper`, chosen once by
    `from_settings`. A context manager: `close()` lets go of what it opened (a journal)."""

    settings: Settings
    services: tuple[Any, ...] = ()

    @staticmethod
    def from_settings(
        settings: Settings | None = None,
        services: Sequence[str] | None = None,
        *,
        allow_insecure_token: bool = False,
        start_chain: bool = False,
    ) -> Stamper:
        """Services when `services` (`--service`, repeatable) or `settings.service_urls`
        (ANCHOR_SERVICE_URLS) name any, each with its token from ANCHOR_SERVICE_TOKEN; else the key
        here. A bad URL, or a token that would travel in clear, is refused before anything is hashed.
        `start_chain=True`: the embedded local chain, if not running, is started and stopped when this
        interpreter exits (`Settings.local_chain_start`); otherwise the settings say (a library call's
        refuse: no process left behind unasked)."""
        from anchor.anchoring.client import services_from

        settings = settings or Settings.load()
        if start_chain:
            settings = replace(settings, local_chain_start="until_exit")
        urls = list(services or ()) or list(settings.service_urls)
        if not urls:
            return KeyStamper(settings)
        given_as = "services" if services else "ANCHOR_SERVICE_URLS"  # what a refusal names
        return ServiceStamper(settings, services_from(urls, allow_insecure_token, given_as, settings.env))

    @property
    def through_services(self) -> bool:
        return bool(self.services)

    # -- the writes every door makes -----------------------------------------------------------------------
    def stamp(
        self,
        path: Path,
        *,
        out: Path | None = None,
        symlinks: Literal["refuse", "record", "follow-inside"] = "refuse",
        rehash: bool = False,
    ) -> Stamped:
        """Anchor the file-tree manifest of `path`; its proof at `out` (default `<PATH>.anchor.json`),
        .git/ and PATH's .anchorignore left out (and recorded), as on the command line. Files unchanged
        since the last stamp of `path` (the data dir's stat cache, git's rules: anchor.manifest.statcache)
        are not read again; `rehash` reads every one."""
        return self._stamp(path, out=out, symlinks=symlinks, rehash=rehash)

    def _stamp(
        self,
        path: Path,
        *,
        out: Path | None = None,
        rules: Rules | None = None,
        symlinks: str = "refuse",
        progress: Progress | None = None,
        rehash: bool = False,
    ) -> Stamped:
        """`stamp`, with the exclusion `rules` and a `progress` report a door chooses (the command line's
        options, an MLflow run's tree, which excludes nothing)."""
        from anchor.manifest.exclude import Rules
        from anchor.manifest.filetree import hash_tree
        from anchor.manifest.statcache import StatCache
        from anchor.manifest.walk import root_kind
        from anchor.proof.file import check_output_path
        from anchor.proof.locate import default_proof_path

        root_kind(path)  # a missing or linked root is refused before anything is made (the cache's folder)
        proof_out = out or default_proof_path(path)
        check_output_path(proof_out, given=out is not None)
        from anchor.files import private_dir

        # the cache names the folder's files, as its proof does: the data dir's, readable by its owner alone;
        # kept only in a data dir that exists (a stamp that fails, through services, makes none)
        cache = (
            StatCache.for_root(private_dir(self.settings.layout.stat_cache), path, rehash)
            if self.settings.layout.root.is_dir()
            else None
        )
        try:
            tree = hash_tree(path, Rules.for_root(path) if rules is None else rules, symlinks, progress, cache)
            if cache is not None:
                cache.save()
        finally:
            if cache is not None:
                cache.discard_parts()
        check_output_path(proof_out, proves=path, recorded=tree.exclude)  # the rules a verify will apply
        _note_anchored_around(proof_out)
        return self._stamp_tree(path, tree, proof_out)

    @abstractmethod
    def _stamp_tree(self, path: Path, tree: FileTreeManifest, proof_out: Path) -> Stamped: ...

    @abstractmethod
    def _stamp_identity(
        self,
        identity: dict[str, object],
        proof_out: Path,
        tree: FileTreeManifest | None = None,
        annotations: dict[str, object] | None = None,
    ) -> Stamped:
        """Anchor one manifest identity (a contract, a champion record, a ledger head)."""

    @abstractmethod
    def _stamp_records(self, records: Sequence[tuple[dict[str, object], Path]]) -> list[Path]:
        """Anchor several identities (champion records) in one go; their proof paths."""

    def _stamp_bundle(
        self,
        manifest: BundleManifest,
        tree: FileTreeManifest,
        proof_out: Path,
        notes: dict[str, object] | None = None,
        *,
        output: Path | None = None,
    ) -> Stamped:
        """A result bundle and, when it has milestones, its timing record beside it. `output`: the folder
        `tree` was hashed from; a proof inside it is refused before anything is sent (`check_output_path`)."""
        from anchor.proof.file import check_output_path

        if output is not None:
            check_output_path(proof_out, proves=output, recorded=tree.exclude)
        return self._write_bundle(manifest, tree, proof_out, notes)

    @abstractmethod
    def _write_bundle(
        self, manifest: BundleManifest, tree: FileTreeManifest, proof_out: Path, notes: dict[str, object] | None
    ) -> Stamped: ...

    def _queue(
        self, paths: Sequence[Path], hash_tree: Callable[[Path], FileTreeManifest], idempotency_key: str | None = None
    ) -> list[Queued]:
        """`anchor journal submit`: each path hashed (`hash_tree`: the door's rules and progress) and queued,
        its proof to be written beside it: in the journal here (nothing is sent until a flush), or at the
        services (a pending proof at once). `idempotency_key` names one submission to the journal here. The
        arguments and every proof's output path are checked before anything is hashed."""
        from anchor.proof.file import check_output_path
        from anchor.proof.locate import default_proof_path

        if idempotency_key is not None and len(paths) != 1:
            raise BadInput("idempotency_key names one submission: give one path", detail={"field": "idempotency_key"})
        outs = [default_proof_path(path) for path in paths]
        for out in outs:
            check_output_path(out)
            _note_anchored_around(out)
        return self._enqueue(
            [(path, hash_tree(path), out) for path, out in zip(paths, outs, strict=True)], idempotency_key
        )

    @abstractmethod
    def _enqueue(
        self, trees: Sequence[tuple[Path, FileTreeManifest, Path]], idempotency_key: str | None
    ) -> list[Queued]:
        """Queue each (path, tree, proof output), checked by `_queue`."""

    def upgrade(self, target: Path) -> Upgraded:
        """Fetch each service's anchor for a pending proof (`target`: the proof file, or the stamped path,
        whose proof is found as `verify` finds it), check it against the chain, write it in
        (anchor.anchoring.client.upgrade); the services configured here get any resubmission."""
        from anchor.anchoring.client import upgrade
        from anchor.proof.locate import proof_of

        return upgrade(proof_of(target), self.settings, self.services)

    def complete(self, proofs: Sequence[Path], wait_s: float | None = None) -> dict[Path, Upgraded | AnchorError]:
        """Wait (up to `wait_s`, default ANCHOR_UPGRADE_WAIT_S) until these proofs are complete: what a
        run does at its end. Proofs anchored with the key here are complete already: nothing to wait for."""
        return {}

    # -- what a search needs ------------------------------------------------------------------------------
    def _check_for_search(self) -> None:  # noqa: B027 - nothing to refuse with the key here
        """Refuse, before a search starts, what would fail at its first checkpoint."""

    @abstractmethod
    def _record_search(
        self,
        attempts: Sequence[tuple[dict[str, object], int]],
        head: dict[str, object],
        head_proof: Path,
        lineage: Sequence[Lineage],
        flush: bool = True,
    ) -> dict[str, object]:
        """Anchor attempt manifests (identity, ledger seq), a ledger head (its proof at `head_proof`)
        and lineage records; `flush=False` only journals, where there is a journal. Returns what to say
        of it beyond the counts (who signed the records, which services relayed them)."""

    @abstractmethod
    def _record_lineage(self, fields: Lineage) -> LineageWritten:
        """Anchor one lineage record outside a search (a model's promotion, anchor.mlflow): with the key
        here, journaled and flushed (signed by ANCHOR_RESEARCHER_KEY when set, else ours); through
        services, signed by the researcher's own key and relayed."""

    def _flusher(self, name: str) -> Flusher | None:
        """A background flusher for journaled work (the key here), or None (services flush themselves)."""
        return None

    def close(self) -> None:  # noqa: B027 - a stamper that opened nothing has nothing to let go of
        """Let go of what the stamper opened."""

    def __enter__(self) -> Stamper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class KeyStamper(Stamper):
    """Anchors with the key here: the journal in the data dir, a flush, the proof written as it confirms."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.services = ()
        self._journal: AnchorService | None = None

    def _stamp_tree(self, path: Path, tree: FileTreeManifest, proof_out: Path) -> Stamped:
        from anchor.anchoring.stamp import anchor_manifest, refresh_file_proofs

        outcome = anchor_manifest(tree.identity(), tree, self.settings, proof_out)
        if outcome.superseded is not None:
            outcome = refresh_file_proofs(path, outcome)
        return Stamped._of_key(outcome)

    def _stamp_identity(
        self,
        identity: dict[str, object],
        proof_out: Path,
        tree: FileTreeManifest | None = None,
        annotations: dict[str, object] | None = None,
    ) -> Stamped:
        from anchor.anchoring.stamp import anchor_manifest

        return Stamped._of_key(anchor_manifest(identity, tree, self.settings, proof_out, annotations))

    def _stamp_records(self, records: Sequence[tuple[dict[str, object], Path]]) -> list[Path]:
        from anchor.journal.submit import Submission

        if not records:
            return []
        service = self._open()
        service.submit([Submission(identity, {}, proof_path=path) for identity, path in records])
        service.flush()
        return [path for _, path in records]

    def _write_bundle(
        self, manifest: BundleManifest, tree: FileTreeManifest, proof_out: Path, notes: dict[str, object] | None
    ) -> Stamped:
        from anchor.anchoring.stamp import anchor_bundle

        return Stamped._of_key(anchor_bundle(manifest, tree, self.settings, proof_out, notes))

    def _enqueue(
        self, trees: Sequence[tuple[Path, FileTreeManifest, Path]], idempotency_key: str | None
    ) -> list[Queued]:
        from anchor.journal.submit import Submission

        done = self._open().submit(
            [Submission(tree.identity(), {"files": tree.files_json()}, idempotency_key, out) for _, tree, out in trees]
        )
        return [
            Queued(path, "0x" + one.digest.hex(), one.state, one.duplicate)
            for (path, _, _), one in zip(trees, done, strict=True)
        ]

    def _record_search(
        self,
        attempts: Sequence[tuple[dict[str, object], int]],
        head: dict[str, object],
        head_proof: Path,
        lineage: Sequence[Lineage],
        flush: bool = True,
    ) -> dict[str, object]:
        from anchor.chain.keys import load_researcher
        from anchor.chain.signed import signed_lineage
        from anchor.journal.submit import Submission

        service = self._open()
        subs = [Submission(identity, {"annotations": {"ledger_seq": seq}}) for identity, seq in attempts]
        # the head's proof is kept beside the ledger: `research verify` reads every one back from the chain
        service.submit([*subs, Submission(head, {}, proof_path=head_proof)])
        # with a researcher key (ANCHOR_RESEARCHER_KEY), each record is signed by the researcher and
        # relayed: the signer, not whoever pays, is the record's researcher
        researcher = load_researcher(self.settings.env)
        registry = service.registry
        for fields in lineage:
            signed = (
                None if researcher is None else signed_lineage(researcher, registry.chain_id, registry.address, fields)
            )
            service.runner.open_lineage(*fields, signed=signed)
        if flush:
            service.flush()
        return {}

    def _record_lineage(self, fields: Lineage) -> LineageWritten:
        from anchor.chain.keys import load_researcher
        from anchor.chain.signed import signed_lineage

        service = self._open()
        registry = service.registry
        researcher = load_researcher(self.settings.env)
        signed = None if researcher is None else signed_lineage(researcher, registry.chain_id, registry.address, fields)
        effect = service.runner.open_lineage(*fields, signed=signed)
        report = service.flush()
        if effect in report.errors:  # parked (a conflicting record, the chain out of reach): its own words
            error = report.errors[effect]
            raise (
                error
                if isinstance(error, AnchorError)
                else ServiceError(f"lineage record 0x{fields[0].hex()}: {error}")
            )
        who = signed.fields.researcher if signed is not None else service.runner.signer.address
        record = registry.lineage(fields[0], who)
        if record is None:
            from anchor.errors import Pending

            raise Pending(
                f"lineage record 0x{fields[0].hex()}: journaled, not on chain yet; `anchor flush` sends it",
                detail={"commit": "0x" + fields[0].hex()},
            )
        return LineageWritten(record.researcher, record.tx_hash, record.block_number)

    def _flusher(self, name: str) -> Flusher | None:
        from anchor.anchoring.flusher import Flusher

        # a thread of ours: this process has the imports and a connection already
        return Flusher(self.settings, name, in_thread=True).start()

    def _open(self) -> AnchorService:
        """The journal and the chain, opened once and kept until `close()` (a search's checkpoints)."""
        from anchor.anchoring.service import AnchorService

        if self._journal is None:
            self._journal = AnchorService.open(self.settings)
        return self._journal

    def close(self) -> None:
        if self._journal is not None:
            self._journal.close()
        self._journal = None


class ServiceStamper(Stamper):
    """Anchors through services that hold the funded key: no key, no journal, no chain here. Proofs are
    pending at once (signed receipts) and complete after the services' next batch (`upgrade`)."""

    def __init__(self, settings: Settings, services: Sequence[Any]) -> None:
        if not services:
            raise BadInput("no service: give --service URL (or set ANCHOR_SERVICE_URLS)", detail={"field": "services"})
        self.settings = settings
        self.services = tuple(services)

    def _written(self, outcome: StampOutcome) -> Stamped:
        from anchor.proof.file import load_any

        return Stamped._of_services(outcome, load_any(outcome.proof_path))

    def _stamp_tree(self, path: Path, tree: FileTreeManifest, proof_out: Path) -> Stamped:
        from anchor.anchoring.client import stamp_through

        return self._written(stamp_through(tree.identity(), tree.files_json(), self.services, proof_out))

    def _enqueue(
        self, trees: Sequence[tuple[Path, FileTreeManifest, Path]], idempotency_key: str | None
    ) -> list[Queued]:
        queued = []
        for path, tree, out in trees:
            done = self._stamp_tree(path, tree, out)  # the client keys each call by its digest (retries are one)
            queued.append(
                Queued(
                    path,
                    done.digest,
                    done.state,
                    services=tuple(r.url for r in done.receipts),
                    not_taken=done.not_taken,
                )
            )
        return queued

    def _stamp_identity(
        self,
        identity: dict[str, object],
        proof_out: Path,
        tree: FileTreeManifest | None = None,
        annotations: dict[str, object] | None = None,
    ) -> Stamped:
        from anchor.anchoring.client import stamp_through

        files = None if tree is None else tree.files_json()
        return self._written(stamp_through(identity, files, self.services, proof_out, annotations))

    def _stamp_records(self, records: Sequence[tuple[dict[str, object], Path]]) -> list[Path]:
        for identity, path in records:
            self._stamp_identity(identity, path)
        return [path for _, path in records]

    def _write_bundle(
        self, manifest: BundleManifest, tree: FileTreeManifest, proof_out: Path, notes: dict[str, object] | None
    ) -> Stamped:
        from anchor.anchoring.client import stamp_bundle_through

        return self._written(stamp_bundle_through(manifest, tree, self.services, proof_out, notes))

    def complete(self, proofs: Sequence[Path], wait_s: float | None = None) -> dict[Path, Upgraded | AnchorError]:
        from anchor.anchoring.client import upgrade_when_anchored

        wait_s = self.settings.env.upgrade_wait_s if wait_s is None else wait_s
        return upgrade_when_anchored(proofs, self.settings, wait_s)

    def _researcher(self) -> Any:
        from anchor.chain.keys import load_researcher

        researcher = load_researcher(self.settings.env)
        if researcher is None:
            raise BadInput(
                "research through a service: set ANCHOR_RESEARCHER_KEY (or ANCHOR_RESEARCHER_KEYSTORE): each kept"
                " attempt's record is signed by the researcher and relayed by the service (no funded key is needed"
                " here)",
                detail={"field": "ANCHOR_RESEARCHER_KEY"},
            )
        return researcher

    def _check_for_search(self) -> None:
        self._researcher()

    def _record_search(
        self,
        attempts: Sequence[tuple[dict[str, object], int]],
        head: dict[str, object],
        head_proof: Path,
        lineage: Sequence[Lineage],
        flush: bool = True,
    ) -> dict[str, object]:
        from anchor.anchoring.client import relay_lineage, stamp_through, submit_everywhere

        researcher = self._researcher()
        for identity, seq in attempts:
            _, failed = submit_everywhere(self.services, identity, {"ledger_seq": seq})
            if len(failed) == len(self.services):
                raise ServiceError(
                    "no service took the attempts: " + "; ".join(f"{u}: {w}" for u, w in failed.items()),
                    detail={"services": failed},
                )
        stamp_through(head, None, self.services, head_proof)
        for fields in lineage:
            for service in self.services:
                relay_lineage(service, researcher, fields)
        return {"researcher": researcher.address, "services": [s.url for s in self.services]}

    def _record_lineage(self, fields: Lineage) -> LineageWritten:
        from anchor.anchoring.client import relay_lineage

        researcher = self._researcher()
        for service in self.services:
            relay_lineage(service, researcher, fields)
        return LineageWritten(researcher.address, services=tuple(s.url for s in self.services))


def _note_anchored_around(out: Path) -> None:
    """Say, before it is written, that a proof lands inside a folder anchored on its own (a stamp of
    `results/run1` beside it, inside an anchored `results/`): allowed, and that folder's next verify names
    the file as added (anchor.proof.locate.anchored_around)."""
    from anchor.proof.locate import anchored_around

    found = anchored_around(out)
    if found is not None:
        import logging
        import os

        from anchor.proof.locate import default_proof_path

        shown = os.path.relpath(found)  # from inside it, "." or "..": a name that says nothing, so the full path
        folder = found if shown == "." or shown.startswith("..") else Path(shown)
        logging.getLogger("anchor.progress").warning(
            f"note: {out} is written inside {folder}, which has an anchor of its own ({default_proof_path(folder)}):"
            f" `anchor verify {folder}` will then fail with exit 4 (tampered: this proof is a file added since;"
            f" its anchored files unchanged); hint: --out outside {folder} keeps {folder} as anchored"
        )
