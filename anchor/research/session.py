"""One search run, as every door starts it: `run_search(settings, SearchOptions(...)) -> SearchRun`.

What a run decides lives here, not in a command: whether and how it anchors (one Stamper,
chosen once: a key here or services), the sandbox its attempts run in, the contract a work dir is pinned
to, one researcher or several in clean clones, the final numbers, and the proofs completed at the end.
`anchor research run` parses its options into `SearchOptions`, calls this and renders the `SearchRun`.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anchor.errors import BadInput, Conflict, ResearcherFailed
from anchor.files import private_dir
from anchor.record import Value
from anchor.research.ledger import LedgerRow
from anchor.settings.session import child_environment, own_environment


@dataclass(frozen=True, eq=False, repr=False)
class SearchOptions(Value):
    """Everything `anchor research run` takes, with its defaults (docs/research.md)."""

    repo: Path
    contract: Path
    work: Path
    max_attempts: int = 20
    budget_minutes: float = 60.0
    max_failures: int = 5
    seed: int = 0
    propose: str | None = None
    researchers: int = 1
    researcher: str = "r0"
    anchor: bool = True
    checkpoint_every: int = 10
    checkpoint_seconds: float = 300.0
    proposer_timeout: float = 600.0
    proposer_network: bool = False
    sandbox: bool = True
    sandbox_runtime: str = "auto"
    push: str | None = None
    services: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False, repr=False)
class SearchRun(Value):
    """What a run did: each researcher's summary, what was anchored (None with `anchor=False`), the
    contract's digest, and whether the anchors went through services."""

    researchers: list[dict[str, Any]]
    anchored: dict[str, Any] | None
    contract_digest: str
    through_services: bool

    def to_json(self) -> dict[str, Any]:
        return {"researchers": self.researchers, "anchored": self.anchored, "contract_digest": self.contract_digest}


def run_search(settings: Any, options: SearchOptions) -> SearchRun:
    """Baseline, then propose → commit → measure → keep or reset, every attempt ledgered and anchored.

    Everything that can be refused is refused before anything is written: the researcher id, the
    sandbox runtime, running unconfined, the anchoring route, the repository's git configuration, an
    editable file the built-in proposer cannot tune, the held-out data, the sandbox itself. Then the
    contract is pinned and pre-registered, and the search runs."""
    from anchor.fence.cgroups import Limits
    from anchor.fence.git import Repo
    from anchor.fence.guard import check_git_config
    from anchor.fence.sandbox import check_runtime
    from anchor.research.anchoring import anchor_champions, anchor_search, contract_digest, preregister
    from anchor.research.checkpoints import Checkpoints
    from anchor.research.contract import load_contract
    from anchor.research.final import evaluate_champion
    from anchor.research.final import summary as final_summary
    from anchor.research.ledger import open_ledger
    from anchor.research.loop import Search, SearchLimits
    from anchor.research.proposers import CommandProposer, ParamSearch, note_absent_editables
    from anchor.research.push import RefPusher
    from anchor.research.searches import remember_search

    o, work, repo = options, options.work, options.repo.resolve()
    check_researcher(o.researcher)
    check_runtime(o.sandbox_runtime)
    if not o.sandbox and o.sandbox_runtime != "auto":
        from anchor.errors import BadInput

        raise BadInput(
            f"--sandbox-runtime {o.sandbox_runtime} with --no-sandbox: a runtime is for a sandboxed run;"
            " drop one of the two",
            detail={"field": "--sandbox-runtime"},
        )
    if not o.sandbox:
        from anchor.fence.sandbox import refuse_unconfined

        refuse_unconfined(settings)  # before anything is written
    stamper = stamper_for(settings, list(o.services), o.anchor)
    terms, _ = load_contract(o.contract)
    check_git_config(Repo(repo))  # the harness runs git on this host: no program of the repo's
    if not o.propose:  # the built-in proposer must be able to tune the first editable file
        ParamSearch(terms.editable[0], o.seed, o.researcher).check(repo)
    else:
        note_absent_editables(repo, terms.editable)
    if terms.holdout_command and terms.holdout_data:  # the champion record digests it: refused now if missing
        from anchor.research.uncertainty import held_out_data

        held_out_data(terms, repo)
    # found (bubblewrap or runsc probed, the seccomp policy built) before anything is written
    box = sandbox_for(o.repo, terms, settings, work, o.sandbox_runtime) if o.sandbox else None
    ledger = open_ledger(work, settings.journal_url, settings.env.ledger_name)
    pin_contract(work, o.contract, ledger)  # before anything is anchored under it
    remember_search(settings.data_dir, work)  # read-back (the API, the explorer) lists every search
    # the ledger head reaches the chain while the search runs, not only at its end (a crash, a Ctrl-C
    # or a killed machine leaves every attempt up to the last checkpoint anchored); made now, so that
    # its background flusher starts while the contract is pre-registered
    hook = (
        None
        if stamper is None or o.researchers > 1
        else Checkpoints(stamper, ledger, o.checkpoint_every, o.checkpoint_seconds)
    )
    if stamper is None:
        digest = contract_digest(o.contract)
    elif o.researchers > 1 and stamper.through_services and (work / "contract.anchor.json").is_file():
        digest = contract_digest(o.contract)  # pre-registered by the parent; the services have it
    else:
        digest = preregister(stamper, o.contract.resolve(), work / "contract.anchor.json")
    if o.researchers == 1:
        proposer = (
            CommandProposer(
                o.propose,
                terms.editable,
                o.proposer_timeout,
                work / "runs" / o.researcher / "proposer",
                box,
                o.proposer_network,
                terms.pass_env,
                Limits.from_environment(settings.env),
            )
            if o.propose
            else ParamSearch(terms.editable[0], o.seed, o.researcher)
        )
        git_repo = Repo(repo)
        pusher = None if o.push is None else RefPusher(git_repo, o.push, o.researcher)
        limits = SearchLimits(o.max_attempts, o.budget_minutes * 60, o.max_failures)
        search = Search(
            git_repo, terms, digest, ledger, work, proposer, o.researcher, limits, both(hook, pusher), box, settings.env
        )
        try:
            summary = search.run().__dict__
        finally:
            if hook is not None:
                hook.close()  # the last checkpoint reaches the chain before we go on (or exit)
        if pusher is not None:
            pusher.finish()  # whatever failed on the way; a run that says it pushed, did
            summary["pushed_to"] = o.push
        # the final numbers, measured by the harness once the search has stopped (none if not asked for)
        final = evaluate_champion(search, None if box is None else box.revealing())
        summary["final"] = None if final is None else final_summary(final)
        summaries = [summary]
    else:
        summaries = run_parallel(settings, o)
    anchored: dict[str, Any] | None = None
    if stamper is not None:
        with stamper:
            anchored = anchor_search(stamper, ledger)
            champions = anchor_champions(stamper, work)
            if stamper.through_services:  # wait for the services' batch: the run ends with its proofs complete
                anchored["proofs"] = complete_proofs(stamper, work, ledger, champions)
    return SearchRun(summaries, anchored, digest, stamper is not None and stamper.through_services)


def stamper_for(settings: Any, urls: list[str] | None, anchor: bool) -> Any:
    """How the search anchors (anchor.anchoring.stamper), checked before anything runs; None: not at all."""
    if not anchor:
        if urls:
            raise BadInput(
                "services: given, while the search is not to be anchored: they contradict each other",
                detail={"field": "services"},
            )
        return None
    from anchor.anchoring.stamper import Stamper

    stamper = Stamper.from_settings(settings, urls)
    stamper._check_for_search()
    return stamper


def complete_proofs(stamper: Any, work: Path, ledger: Any, champions: list[Path]) -> dict[str, int]:
    """At the end of a run through services: wait (ANCHOR_UPGRADE_WAIT_S, default 60 s) for the services'
    next batch and upgrade the contract's, every checkpoint's and the champions' proofs."""
    from anchor.research.anchoring import checkpoint_path

    heads = sorted(checkpoint_path(ledger, 0).parent.glob("*.anchor.json"))
    proofs = [p for p in (work / "contract.anchor.json", *heads, *champions) if p.is_file()]
    results = stamper.complete(proofs)
    complete = sum(1 for r in results.values() if getattr(r, "complete", False))
    return {"complete": complete, "total": len(proofs)}


def both(*hooks: Any) -> Callable[[LedgerRow], None] | None:
    """One on_entry hook out of several (each may be None)."""
    present = [h for h in hooks if h is not None]
    if not present:
        return None

    def call(entry: LedgerRow) -> None:
        for hook in present:
            hook(entry)

    return call


def run_parallel(settings: Any, o: SearchOptions) -> list[dict[str, Any]]:
    """`o.researchers` researchers, each a child process (`anchor research run`) in a clean clone of the
    repository, sharing one ledger; their summaries. Interrupted, it stops the children it started, by
    their PIDs."""
    import json

    children = []
    for k in range(o.researchers):
        clone = o.work / "clones" / f"r{k}"
        if not clone.exists():
            clone.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(
                ["git", "clone", "--quiet", str(o.repo.resolve()), str(clone)], check=True, env=child_environment()
            )
        argv = [
            sys.executable,
            "-m",
            "anchor",
            "--json",
            "research",
            "run",
            "--repo",
            str(clone),
            "--contract",
            str(o.contract.resolve()),
            "--workdir",
            str(o.work),
            "--researcher",
            f"r{k}",
            "--max-attempts",
            str(o.max_attempts),
            "--budget-minutes",
            str(o.budget_minutes),
            "--max-failures",
            str(o.max_failures),
            "--seed",
            str(o.seed),
            "--proposer-timeout",
            str(o.proposer_timeout),
        ]
        # each researcher checkpoints the shared ledger itself (the journal dedups, one flush at a time),
        # so a researcher that fails, or a killed parent, leaves every checkpointed attempt on chain
        argv += (
            ["--checkpoint-every", str(o.checkpoint_every), "--checkpoint-seconds", str(o.checkpoint_seconds)]
            if o.anchor
            else ["--no-anchor"]
        )
        argv += ([] if o.sandbox else ["--no-sandbox"]) + ["--sandbox-runtime", o.sandbox_runtime]
        argv += ["--proposer-network"] if o.proposer_network else []
        argv += ["--propose", o.propose] if o.propose else []
        argv += ["--push", o.push] if o.push else []
        for url in o.services:
            argv += ["--service", url]
        env = own_environment({"ANCHOR_DATA_DIR": str(settings.data_dir)})
        children.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env))
    summaries: list[dict[str, Any]] = []
    try:
        outputs = [child.communicate() for child in children]
    except BaseException:  # interrupted: stop the researchers we started (by their PIDs), then go
        for child in children:
            child.send_signal(signal.SIGTERM)
        for child in children:
            child.wait()
        raise
    for child, (out, err) in zip(children, outputs, strict=True):
        if child.returncode != 0:  # its error is JSON on its stdout (it ran with --json), or words on stderr
            try:
                said = str(json.loads(out)["error"]["message"])
            except (ValueError, KeyError, TypeError):
                said = (out + err).decode("utf-8", "replace")[-500:]
            raise ResearcherFailed(
                f"a researcher failed ({child.returncode}): {said[-500:]}", detail={"exit_code": child.returncode}
            )
        summaries += json.loads(out)["researchers"]
    return summaries


def sandbox_for(repo: Path, terms: Any, settings: Any, work: Path, runtime: str = "auto") -> Any:
    """The sandbox for this search's attempts, hiding the data dir, the work dir (ledger, other runs),
    every keystore the environment names and the contract's holdout data; `ToolchainMissing` without
    the runtime."""
    from anchor.fence.cgroups import Limits
    from anchor.fence.sandbox import Sandbox

    keystores = list(settings.env.secret_files)
    if settings.keystore is not None:
        keystores.append(settings.keystore)
    holdout = terms.hidden_data(repo.resolve())
    inputs = tuple(path for _, path in terms.input_paths(repo))
    return Sandbox.find(
        repo,
        terms.editable,
        (settings.data_dir, work, *keystores),
        holdout,
        terms.pass_env,
        inputs,
        runtime,
        Limits.from_environment(settings.env),
    )


def check_researcher(researcher: str) -> None:
    """A researcher id names directories and git refs: letters, digits, `_`, `-`, `.`, not leading."""
    from anchor.research.ledger import RESEARCHER_ID

    if not RESEARCHER_ID.fullmatch(researcher):
        raise BadInput(
            f"researcher {researcher!r}: use 1 to 64 letters, digits, '_', '-' or '.', starting with a letter or digit",
            detail={"field": "researcher"},
        )


def pin_contract(work: Path, contract: Path, ledger: Any) -> None:
    """A ledger scored under one contract never continues under another: the first run keeps a copy of
    the contract in the work dir; a later run with a different one is refused, naming what changed (a
    new search is a new --workdir)."""
    import shutil

    from anchor.research.anchoring import contract_digest
    from anchor.research.contract import load_contract

    pinned = work / "contract.toml"
    if pinned.exists() and pinned.read_bytes() != contract.read_bytes():
        old, _ = load_contract(pinned)
        new, _ = load_contract(contract)
        changed = [f for f in type(new).model_fields if getattr(old, f) != getattr(new, f)]
        what = ", ".join(f"{f} ({getattr(old, f)!r} -> {getattr(new, f)!r})" for f in changed) or "its text"
        raise Conflict(
            f"this search ({work}) was scored under another contract: {what}; its values cannot be compared"
            " across contracts. Start a new search with another --workdir",
            detail={"changed": changed, "pinned": str(pinned)},
        )
    # the rows say which contract they were scored under, whatever the pinned copy says (a file in the
    # work dir: editing it must not let a search continue under another contract)
    scored = {e["contract_digest"] for e in ledger.entries()}
    if scored and scored != {contract_digest(contract)}:
        raise Conflict(
            f"{ledger.where} was scored under another contract (digest {sorted(scored)[0][:16]}…); its values"
            " cannot be compared across contracts. Start a new search (another --workdir or ANCHOR_LEDGER_NAME)",
            detail={"field": "contract", "scored_under": sorted(scored)},
        )
    if not pinned.exists():  # a new search, a shared ledger others write to, or one from before pinning
        private_dir(work)
        shutil.copyfile(contract, pinned)
