"""One `Verifier`: the verdict every door gives.

Why one: `anchor verify`, `POST /v1/verify/proof`, `GET /v1/verify/{digest}`, the explorer and a
training script must say the same of the same proof. Each door used to locate the proof, pick the
statement or the proof path, then apply the policy on its own (and the statement path silently
dropped `--registry` and `--quorum`). Here `verify` locates the proof, decodes it once whatever its
form (anchor.readback.forms) and runs the checklist once (anchor.readback.checklist), the policy its
last step; a door parses, calls, renders.

    verifier = Verifier.from_settings()                     # the data dir's deployment records, the RPC
    verdict = verifier.verify(Path("results"), policy=Policy(min_finality="safe"))
    verdict.submitter, verdict.anchored_at                  # or a typed error: Tampered, NotAnchored, Pending …

Named constructors: `Verifier.local()` (the embedded local chain of a data dir), `Verifier.preset(name)`
and one per preset chain (`Verifier.base_sepolia()`, `Verifier.base()`, `Verifier.ethereum()`,
`Verifier.sepolia()`), reading the chain's public endpoint unless `rpc_url` is given.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING

from anchor.errors import AnchorError, BadInput
from anchor.manifest.onchain import parse_address
from anchor.readback.quorum import down_once
from anchor.readback.verifier import Policy, VerdictStatus, Verification
from anchor.settings.session import Settings

if TYPE_CHECKING:
    from anchor.proof.file import ProofFile

__all__ = ["Policy", "VerdictStatus", "Verification", "Verifier"]


def _proof_store(settings: Settings) -> Callable[[bytes], ProofFile | None]:
    """anchor.anchoring.proofs.store_finder, imported on the first digest asked (the journal's modules are
    no part of a plain `verify FILE`'s start-up)."""

    def find(digest: bytes) -> ProofFile | None:
        from anchor.anchoring.proofs import store_finder

        return store_finder(settings)(digest)

    return find


class Verifier:
    """Verifies proofs against the chain `settings` read (every read endpoint, a quorum agreeing), trusting
    the deployment records of the data dir and `registries` (`--registry`)."""

    def __init__(
        self,
        settings: Settings,
        *,
        registries: Sequence[str] = (),
        quorum: int | None = None,
        find: Callable[[bytes], ProofFile | None] | None = None,
    ) -> None:
        self.settings = settings
        self.registries = tuple(parse_address(r, "registries") for r in registries)
        self.quorum = quorum
        self.find = find or _proof_store(settings)
        """Where a proof named by digest comes from (a bundle's timing record, a resume pin) when no file
        beside it holds it: this data dir's proof store, or the API's (which knows its chain)."""

    # -- named constructors ---------------------------------------------------------------------------------
    @classmethod
    def from_settings(
        cls, settings: Settings | None = None, *, registries: Sequence[str] = (), quorum: int | None = None
    ) -> Verifier:
        """Options, ANCHOR_* variables, anchor.toml, defaults (anchor.settings)."""
        return cls(settings or Settings.load(), registries=registries, quorum=quorum)

    @classmethod
    def local(cls, data_dir: Path | None = None) -> Verifier:
        """The embedded local chain of `data_dir` (default: the configured data dir)."""
        settings = Settings.load(data_dir)
        return cls(dataclasses.replace(settings, rpc_url=None, read_rpcs=()))

    @classmethod
    def offline(
        cls,
        trusted_block: Sequence[str] = (),
        *,
        trusted_blocks: Path | str | None = None,
        data_dir: Path | str | None = None,
    ) -> Verifier:
        """Verdicts with no network: sealed proofs (`anchor.seal`) checked against the block hashes you
        trust (`N:HASH` each, or a `chain_id N HASH` checkpoint file); no socket is opened."""
        from anchor.sealing.check import offline_settings

        listed = None if trusted_blocks is None else Path(trusted_blocks)
        return cls(offline_settings(Settings.load(None if data_dir is None else Path(data_dir)), trusted_block, listed))

    @classmethod
    def preset(
        cls,
        name: str,
        rpc_url: str | Sequence[str] | None = None,
        *,
        registries: Sequence[str] = (),
        data_dir: Path | None = None,
    ) -> Verifier:
        """A chain of anchor.chain.presets by name ("Base Sepolia", "base-sepolia", or its chain id),
        read through `rpc_url` (several: a quorum) or the chain's public endpoint."""
        from anchor.chain.presets import PRESETS

        wanted = name.strip().lower().replace("-", " ").replace("_", " ")
        found = next((p for p in PRESETS.values() if wanted in (p.name.lower(), str(p.chain_id))), None)
        if found is None or found.public_rpc is None and rpc_url is None:
            known = ", ".join(p.name for p in PRESETS.values() if p.public_rpc)
            raise BadInput(f"no preset chain {name!r} (known: {known})", detail={"field": "chain"})
        urls = [rpc_url] if isinstance(rpc_url, str) else list(rpc_url or [str(found.public_rpc)])
        return cls(Settings.load(data_dir, urls), registries=registries)

    @classmethod
    def base(cls, rpc_url: str | Sequence[str] | None = None, **given: object) -> Verifier:
        return cls.preset("Base", rpc_url, **given)  # type: ignore[arg-type]

    @classmethod
    def base_sepolia(cls, rpc_url: str | Sequence[str] | None = None, **given: object) -> Verifier:
        return cls.preset("Base Sepolia", rpc_url, **given)  # type: ignore[arg-type]

    @classmethod
    def ethereum(cls, rpc_url: str | Sequence[str] | None = None, **given: object) -> Verifier:
        return cls.preset("Ethereum", rpc_url, **given)  # type: ignore[arg-type]

    @classmethod
    def sepolia(cls, rpc_url: str | Sequence[str] | None = None, **given: object) -> Verifier:
        return cls.preset("Sepolia", rpc_url, **given)  # type: ignore[arg-type]

    # -- verdicts -------------------------------------------------------------------------------------------
    @staticmethod
    def reads_once() -> AbstractContextManager[None]:
        """Verdicts given inside the block share their chain reads: one per (endpoint, chain, registry,
        transaction, root), however many proofs of that root are verified (`anchor verify --from`); each
        further proof is checked locally against the root read (anchor.readback.checklist.reads_once).
        Do not yield inside it: `verify_each` is the generator that gives verdicts one at a time."""
        from anchor.readback.checklist import reads_once

        return reads_once()

    @down_once()  # an endpoint out of reach is asked once a verdict (anchor.readback.quorum.down_once)
    def verify(
        self,
        path: Path | str,
        *,
        proof: Path | str | None = None,
        policy: Policy | None = None,
        spec: Path | str | None = None,
        require: str = "any",
        subjects_in: Path | str | None = None,
    ) -> Verification:
        """The verdict on `path`: a file tree, a bundle's output, one file with its per-file proof, the
        in-toto statements `anchor attest` wrote (NAME.intoto.jsonl), or a pending proof's subject.
        Raises the typed error of the first check that fails (anchor.errors); the policy is the last."""
        from anchor.proof.locate import later_stamp, require_proof
        from anchor.readback import forms
        from anchor.readback.checklist import required_count, run

        # a str is a path wherever one is taken, as `anchor.verify` and the CLI take it
        path = Path(path)
        proof, spec, subjects_in = (None if p is None else Path(p) for p in (proof, spec, subjects_in))
        required_count(require, 1)  # a bad `require` is refused before any proof is read
        if self.settings.offline and policy is not None and policy.min_finality is not None:
            raise BadInput(
                "min_finality needs the chain's head: it has no meaning offline (the trusted block is"
                " the finality you chose)",
                detail={"field": "min_finality"},
            )
        if forms.is_statements(path):  # in-toto statements (`anchor attest`): a proof form of their own
            for name, given in (("proof", proof), ("spec", spec)):
                if given is not None:
                    raise BadInput(
                        f"--{name}: a statements file carries its own proof, and binds no spec: give --{name} with"
                        " the anchored path instead",
                        detail={"field": name},
                    )
            if require not in ("any", "all", "1"):  # never dropped unsaid: the statement door reads one anchor
                raise BadInput(
                    f"require {require}: a statements file is verified by its proof's one anchor; verify"
                    " the anchored path to count several",
                    detail={"field": "require"},
                )
            decoded = forms.from_statements(path)
            listed = decoded.file is not None and (decoded.file.files is not None or decoded.file.file is not None)
            beside_it = path.with_name(path.name.removesuffix(forms.STATEMENTS_SUFFIX))  # what `attest` was given
            under = subjects_in if subjects_in is not None else beside_it
            return run(
                decoded,
                self.settings,
                data=under if listed else None,
                registries=self.registries,
                quorum=self.quorum,
                beside=path.parent,
                find=self.find,
                policy=policy or Policy(),
            )
        if subjects_in is not None:
            raise BadInput(
                "subjects_in: only with a .intoto.jsonl path (where its subjects are)", detail={"field": "subjects_in"}
            )
        proof_path = proof or require_proof(path)
        verdict = run(
            forms.load(proof_path),
            self.settings,
            data=path,
            registries=self.registries,
            quorum=self.quorum,
            require=require,
            beside=proof_path.parent,
            find=self.find,
            spec=spec,
            policy=policy or Policy(),
        )
        later = later_stamp(path, proof_path, verdict.manifest_digest)
        if later is not None:  # true of then: every door says which later stamp holds the path now
            verdict = verdict.model_copy(
                update={
                    "superseded_by": {"proof": str(later[0]), "manifest_digest": later[1], "anchored_block": later[2]}
                }
            )
        return verdict

    def verify_each(
        self, paths: Iterable[Path | str], *, policy: Policy | None = None, require: str = "any"
    ) -> Iterator[tuple[Path, Verification | AnchorError]]:
        """Each path's verdict, or the typed error it failed with (yielded, not raised), in order, as each
        is given: `anchor verify A B C` and `--from`. The chain is read once per root for all of them
        (`reads_once`): 1,000 proofs of one batch are one read of it, then each is checked locally. After
        the first verdict, the receipts and records of the next proofs are asked ahead, in JSON-RPC
        batches (anchor.readback.ahead): what each verdict reads, asked together, not what it concludes.
        Only when `paths` is a sequence (a list, a tuple): from any other iterable each path is taken
        when the one before it has its verdict, as a producer that waits for verdicts needs."""
        from anchor.readback.ahead import AHEAD, forget, read_ahead
        from anchor.readback.checklist import ChainReads, reads_once

        scope = ChainReads()  # kept between the paths, entered for each and left before it is yielded

        listed = isinstance(paths, Sequence)  # all given: a lazy iterable is taken one path at a time

        def upcoming() -> Iterator[Path]:
            """The paths in order; before one not read ahead, its reads and the next ones' are asked
            together (none before the first verdict: no registry is pinned yet). Only from a sequence:
            taking paths ahead of a lazy iterable would wait for paths its producer gives only after
            the verdicts before them."""
            window: deque[Path] = deque()
            given, idle, skip = iter(paths), 0, 0
            while True:
                if not window:
                    ahead = AHEAD if scope.registries and listed else 1
                    window.extend(Path(p) for p in itertools.islice(given, ahead))
                    if not window:
                        return
                    if skip:  # the windows before asked nothing new (one batch's proofs): look less often
                        skip -= 1
                    elif not listed or read_ahead(scope, list(window)) or not scope.registries:
                        idle = 0
                    else:
                        idle = min(idle + 1, 6)
                        skip = 2**idle - 1
                yield window.popleft()

        try:
            for path in upcoming():
                outcome: Verification | AnchorError
                with reads_once(scope):
                    try:
                        outcome = self.verify(path, policy=policy, require=require)
                    except AnchorError as exc:
                        outcome = exc
                yield path, outcome
        finally:
            forget(scope)

    def verify_proof(self, proof: ProofFile, policy: Policy | None = None, *, data: Path | None = None) -> Verification:
        """The verdict on a proof already loaded (the API's routes, the explorer): the same checklist,
        the data checked when `data` is given, the policy last."""
        from anchor.readback.checklist import run
        from anchor.readback.forms import by_first_anchor

        return run(
            by_first_anchor(proof, "proof"),
            self.settings,
            data=data,
            registries=self.registries,
            quorum=self.quorum,
            find=self.find,
            policy=policy or Policy(),
        )
