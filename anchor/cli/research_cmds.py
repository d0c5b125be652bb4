"""`anchor research run|verify|report|export|check` and `anchor lineage`: the research runtime."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import click

from anchor.cli.commands import AnchorGroup, command
from anchor.cli.options import (
    PATH,
    chain_rpc_url_option,
    egress_cidr_option,
    gone_keys_secret_option,
    json_option,
    sandbox_runtime_option,
    service_url_option,
)
from anchor.cli.output import count, emit, write_rendered

app = AnchorGroup("research", help="Run, verify and report a keep/reset research search.")

workdir_option = click.option(
    "--workdir", "workdir", type=PATH, help="Ledger, runs and clones (default: <data dir>/research)."
)


def _workdir(ctx: click.Context, workdir: Path | None) -> Path:
    return (workdir or ctx.find_root().obj["settings"].layout.research).resolve()


@app.command()
@click.option("--repo", "repo", type=PATH, required=True, help="The git repository to search in.")
@click.option("--contract", "contract", type=PATH, required=True, help="The attempt contract (TOML).")
@workdir_option
@click.option(
    "--max-attempts",
    "max_attempts",
    type=click.IntRange(min=1),
    default=20,
    help="Stop after this many attempts (baseline included).",
)
@click.option(
    "--budget-minutes",
    "budget_minutes",
    type=click.FloatRange(min=0.01),
    default=60.0,
    help="Stop after this much wall-clock time.",
)
@click.option(
    "--max-failures",
    "max_failures",
    type=click.IntRange(min=1),
    default=5,
    help="Stop after this many consecutive failures.",
)
@click.option("--seed", "seed", type=int, default=0, help="Seed of the built-in parameter search.")
@click.option("--propose", "propose", help="External proposer command, run in the repo (fenced by the guard).")
@click.option(
    "--researchers",
    "researchers",
    type=click.IntRange(min=1, max=64),
    default=1,
    help="Researchers in parallel, each in its own clone.",
)
@click.option("--researcher", "researcher", default="r0", help="This researcher's id.")
@click.option("--no-anchor", "no_anchor", is_flag=True, help="Only run and ledger; anchor later.")
@click.option(
    "--checkpoint-every",
    "checkpoint_every",
    type=click.IntRange(min=1),
    default=10,
    help="Anchor the ledger head after this many attempts (and at every promotion).",
)
@click.option(
    "--checkpoint-seconds",
    "checkpoint_seconds",
    type=click.FloatRange(min=1),
    default=300.0,
    help="... and at least this often, in seconds.",
)
@click.option(
    "--proposer-timeout",
    "proposer_timeout",
    type=click.FloatRange(min=0.1),
    default=600.0,
    help="Seconds a --propose command may take; past it, a rejected proposal.",
)
@click.option(
    "--proposer-network",
    "proposer_network",
    is_flag=True,
    help="Let a --propose command reach the network (an agent calling its model).",
)
@click.option(
    "--no-sandbox",
    "no_sandbox",
    is_flag=True,
    help="Run attempts unconfined (no bubblewrap): network, the whole filesystem. Recorded per ledger entry.",
)
@sandbox_runtime_option
@click.option(
    "--push",
    "push",
    help="A git remote (name or URL): every measured commit's refs/anchor/<researcher>/<seq> is pushed to it.",
)
@click.option(
    "--service",
    "service",
    multiple=True,
    help="Anchor through this service (repeatable): no funded key here; lineage records are signed with"
    " ANCHOR_RESEARCHER_KEY and relayed by the service. Token: ANCHOR_SERVICE_TOKEN.",
)
@click.option(
    "--mlflow",
    "mlflow",
    metavar="NAME",
    help="Log every attempt as a run of MLflow experiment NAME and promote the champion to NAME@champion, with"
    " its proof and lineage (docs/mlflow.md).",
)
@click.option(
    "--mlflow-tracking-uri",
    "mlflow_tracking_uri",
    envvar="MLFLOW_TRACKING_URI",
    show_envvar=True,
    help="The MLflow tracking server of --mlflow (http://host:port).",
)
@json_option
@click.pass_context
def run(
    ctx: click.Context,
    repo: Path,
    contract: Path,
    workdir: Path | None,
    max_attempts: int,
    budget_minutes: float,
    max_failures: int,
    seed: int,
    propose: str | None,
    researchers: int,
    researcher: str,
    no_anchor: bool,
    checkpoint_every: int,
    checkpoint_seconds: float,
    proposer_timeout: float,
    proposer_network: bool,
    no_sandbox: bool,
    sandbox_runtime: str,
    push: str | None,
    service: list[str] | None,
    mlflow: str | None,
    mlflow_tracking_uri: str | None,
    json: bool,
) -> None:
    """Search: baseline, then propose → commit → measure → keep or reset, every attempt ledgered and anchored."""
    from anchor.research.final import final_line
    from anchor.research.session import SearchOptions, run_search

    options = SearchOptions(
        repo,
        contract,
        _workdir(ctx, workdir),
        max_attempts,
        budget_minutes,
        max_failures,
        seed,
        propose,
        researchers,
        researcher,
        not no_anchor,
        checkpoint_every,
        checkpoint_seconds,
        proposer_timeout,
        proposer_network,
        not no_sandbox,
        sandbox_runtime,
        push,
        tuple(service or ()),
    )
    if mlflow is not None:  # refused before the search runs: the server, and a champion with a proof
        from anchor.cli.mlflow_cmds import research_tracking

        tracking = research_tracking(mlflow, no_anchor, mlflow_tracking_uri)
    # SIGTERM takes the same path as Ctrl-C: the running attempt's process group is torn down first
    signal.signal(signal.SIGTERM, _interrupted)
    done = run_search(ctx.find_root().obj["settings"], options)
    lines = [
        f"{s['researcher']}: measured {s['measured']} (ran and scored), rejected {s['rejected']}{_why_rejected(s)},"
        f" stopped: {s['stopped_because']}; champion {str(s['champion'])[:12]} ({s['champion_metric']})"
        for s in done.researchers
    ]
    lines += [f"  {final_line(s['final'])}" for s in done.researchers if s.get("final")]
    anchored = done.anchored
    if anchored and done.through_services:
        proofs = anchored["proofs"]
        lines.append(
            f"sent {anchored['attempts']} attempts ({anchored['kept']} kept: lineage records signed by"
            f" {anchored['researcher']}, relayed by {', '.join(anchored['services'])}) and ledger head"
            f" {anchored['ledger_head'][:16]}… of {anchored['ledger_length']} entries;"
            f" proofs complete: {proofs['complete']} of {proofs['total']}"
            + (
                ""
                if proofs["complete"] == proofs["total"]
                else f" (the rest: anchor upgrade {options.work}/checkpoints/*)"
            )
        )
    elif anchored:
        lines.append(
            f"anchored {anchored['attempts']} attempts ({anchored['kept']} kept, with lineage records)"
            f" and ledger head {anchored['ledger_head'][:16]}… of {anchored['ledger_length']} entries"
        )
    data = done.to_json()
    if mlflow is not None:
        from anchor.cli.mlflow_cmds import log_research

        data["mlflow"] = log_research(ctx, options, mlflow, tracking, lines)
    emit(ctx, json, data, lines)


def _why_rejected(summary: dict[str, Any]) -> str:
    """` (never run: 2 no change, 1 the proposer failed; the last: …)`: by reason, as `research report`
    counts them, with the proposer's own last words when it failed (a mistyped --propose: not found)."""
    counts = summary.get("rejected_for") or {}
    if not summary.get("rejected") or not counts:
        return ""
    said = ", ".join(f"{n} {reason}" for reason, n in counts.items())
    last = summary.get("proposer_said")
    tail = f"; the last: {last[:300]}" if last else ""
    return f" (never run: {said}{tail})"


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@app.command()
@click.argument("target", help="What to render: k8s (an Indexed Job, one pod per researcher).")
@click.option("--image", "image", required=True, help="The container image, pinned by digest: name@sha256:<64 hex>.")
@click.option("--repo-url", "repo_url", required=True, help="The git repository each researcher clones.")
@click.option("--baseline", "baseline", required=True, help="The full commit id every researcher starts from.")
@click.option(
    "--contract", "contract", type=PATH, required=True, help="The attempt contract (TOML), mounted read-only."
)
@click.option(
    "--researchers",
    "researchers",
    type=click.IntRange(min=1, max=64),
    default=2,
    help="Researchers: the Job's completions.",
)
@click.option("--push", "push", help="The shared remote measured commits go to (default: --repo-url).")
@click.option(
    "--ready-url",
    "ready_url",
    multiple=True,
    help="A URL that must answer before researchers start (repeat; READY_URLS).",
)
@chain_rpc_url_option
@service_url_option
@click.option(
    "--token-secret",
    "token_secret",
    default="anchor-service-token",
    help="The Secret whose key `token` is the service token (scopes: submit+relay).",
)
@click.option(
    "--researcher-secret",
    "researcher_secret",
    default="anchor-researcher",
    help="The Secret whose key `key` is the researchers' own signing key (never funded).",
)
@click.option(
    "--ledger-secret",
    "ledger_secret",
    help="A Secret whose key `url` is a PostgreSQL URL for the shared ledger (not the journal).",
)
@gone_keys_secret_option
@click.option(
    "--ledger-claim", "ledger_claim", help="A ReadWriteMany PersistentVolumeClaim for the shared work dir and ledger."
)
@click.option("--name", "name", default="anchor-research", help="The Job's name.")
@click.option("--namespace", "namespace", help="The namespace.")
@click.option("--max-attempts", "max_attempts", type=click.IntRange(min=1), default=20)
@click.option("--budget-minutes", "budget_minutes", type=click.FloatRange(min=0.01), default=60.0)
@click.option("--cpu", "cpu", default="1", help="CPU per researcher (requests = limits).")
@click.option("--memory", "memory", default="2Gi", help="Memory per researcher (requests = limits).")
@click.option(
    "--no-sandbox",
    "no_sandbox",
    is_flag=True,
    help="Refused: a researcher pod holds keys, so attempts run in the sandbox.",
)
@click.option(
    "--sandbox-runtime",
    "sandbox_runtime",
    default="gvisor",
    help="How the pod lets bubblewrap run: gvisor (a RuntimeClass, --runtime-class) or seccomp"
    " (deploy/k8s/anchor-bwrap.seccomp.json on the nodes; docs/research.md).",
)
@click.option(
    "--runtime-class", "runtime_class", default="gvisor", help="The RuntimeClass of --sandbox-runtime gvisor."
)
@egress_cidr_option
@click.option("--out", "out", type=PATH, help="Write here (refuses to overwrite).")
@click.pass_context
def render(
    ctx: click.Context,
    target: str,
    image: str,
    repo_url: str,
    baseline: str,
    contract: Path,
    researchers: int,
    push: str | None,
    ready_url: list[str] | None,
    chain_rpc_url: str | None,
    service_url: str | None,
    token_secret: str,
    researcher_secret: str,
    ledger_secret: str | None,
    keys_secret: str | None,
    ledger_claim: str | None,
    name: str,
    namespace: str | None,
    max_attempts: int,
    budget_minutes: float,
    cpu: str,
    memory: str,
    no_sandbox: bool,
    sandbox_runtime: str,
    runtime_class: str,
    egress_cidr: list[str] | None,
    out: Path | None,
) -> None:
    """Render researchers for a cluster: a ConfigMap, a Kubernetes Indexed Job (completion index =
    researcher id) and its NetworkPolicy."""
    from anchor.research.k8s import render_researchers

    text, wrote = render_researchers(
        target,
        contract,
        keys_secret=keys_secret,
        no_sandbox=no_sandbox,
        name=name,
        researchers=researchers,
        image=image,
        repo_url=repo_url,
        baseline=baseline,
        push=push,
        ready_urls=tuple(ready_url or ()),
        rpc_url=chain_rpc_url,
        service_url=service_url,
        token_secret=token_secret,
        researcher_secret=researcher_secret,
        ledger_secret=ledger_secret,
        max_attempts=max_attempts,
        budget_minutes=budget_minutes,
        cpu=cpu,
        memory=memory,
        namespace=namespace,
        ledger_claim=ledger_claim,
        sandbox_runtime=sandbox_runtime,
        runtime_class=runtime_class,
        egress_cidrs=tuple(egress_cidr or ()),
    )
    write_rendered(text, out, wrote)


@app.command()
@workdir_option
@click.option(
    "--repo", "repo", type=PATH, help="The repository to find the commits in (default: the one each search recorded)."
)
@click.option(
    "--researcher",
    "researcher",
    help="Audit only this researcher's commits and evidence (a shared ledger: each host has its own run dirs).",
)
@click.option(
    "--researcher-address",
    "researcher_address",
    multiple=True,
    help="An address whose checkpoint records on chain bind this ledger (repeat; default: the keys set here).",
)
@json_option
@click.pass_context
def verify(
    ctx: click.Context,
    workdir: Path | None,
    repo: Path | None,
    researcher: str | None,
    researcher_address: list[str] | None,
    json: bool,
) -> None:
    """Check the ledger's hash chain, every ledger head anchored at a checkpoint (read back from the
    chain, from the proof files and, without them, from the checkpoint records found on chain), every
    measured commit and its diff, and every attempt's evidence with its metric re-read: an edited,
    deleted, reordered or dropped entry, a collected commit or an edited run file is named (exit 4)."""
    from anchor.research.verdict import verify_search

    verdict = verify_search(
        ctx.find_root().obj["settings"],
        _workdir(ctx, workdir),
        repo=repo,
        researcher=researcher,
        researcher_addresses=researcher_address or (),
        explicit=workdir is not None,
    )
    path, heads, found, checked = verdict.ledger, verdict.anchored, verdict.found, verdict.audit
    result, finals, attempts = {"entries": verdict.entries, "head": verdict.head}, verdict.final_runs, verdict.attempts
    lines = [f"OK: {path}: {result['entries']} entries ({attempts} attempts, their traces), head {result['head']}"]
    if heads.checkpoints:
        lines.append(
            f"  on chain: {heads.checkpoints} anchored checkpoints agree; entries 0..{heads.length - 1} were"
            f" anchored by block {heads.block} ({heads.anchored_at})"
        )
    if found.checkpoints:
        lines.append(
            f"  on chain, found by the contract digest (no proof file needed): {found.checkpoints} checkpoint"
            f" records by {', '.join(found.trusted)} agree; entries 0..{found.length - 1} by block {found.block}"
        )
    if found.others:
        lines.append(
            f"  ignored: checkpoint records for this contract by addresses not trusted here:"
            f" {', '.join(found.others)} (trust one with --researcher-address)"
        )
    if not heads.checkpoints and not found.checkpoints:
        lines.append(
            "  on chain: no anchored checkpoint (no proof file, no record by "
            + (", ".join(found.trusted) or "a trusted address")
            + "): the ledger was checked against itself only"
        )
    if found.other_ledgers:  # a ledger rewritten from its first row is one of these, not this one
        lines.append(
            "  other ledgers of this contract have checkpoints on chain by trusted addresses: "
            + ", ".join(f"first row {g[:16]}… ({n} entries)" for g, n in found.other_ledgers)
            + f"; this ledger's first row is {found.first_row[:16]}…"
        )
    whose = "" if researcher is None else f" (researcher {researcher})"
    lines.append(
        f"  commits{whose}: {checked.commits} found with the ledgered diff in"
        f" {', '.join(sorted(set(checked.repos.values())))}"
    )
    lines.append(
        f"  evidence: {checked.evidence} run dirs re-hashed to their bound evidence, metrics re-read"
        + (f"; {checked.legacy} entries from before evidence was bound (version 1)" if checked.legacy else "")
    )
    if finals:
        lines.append(f"  final runs: {finals} champion replication and holdout run dirs re-hashed, metrics re-read")
    bound = verdict.environments
    for who, rule in verdict.keep_rules.items():
        lines.append(
            f"  keep rule of {who}: noise, recomputed from its {rule['replications']} bound baseline re-runs:"
            f" spread {rule['spread']}, threshold {rule['threshold']}; its keeps replayed"
        )
    if bound:  # each rebuilt into its attempt manifest by the audit: bound, not claimed
        lines.append(
            f"  environment: bound by {len(bound)} attempts, {count(len(set(bound)), 'distinct one')}"
            " (`anchor research report` names each change)"
        )
    emit(ctx, json, verdict.to_json(), lines)


@app.command()
@workdir_option
@click.option(
    "--format",
    "output_format",
    default="text",
    help="text, markdown or latex (a table and a methods paragraph), or json.",
)
@json_option
@click.pass_context
def report(ctx: click.Context, workdir: Path | None, output_format: str, json: bool) -> None:
    """Summarise a search: attempts, kept, failures, best metric over attempts, trials behind the champion."""
    from anchor.research.tables import FORMATS

    if output_format not in FORMATS:
        from anchor.errors import BadInput, did_you_mean

        raise BadInput(
            f"--format {output_format!r}: expected one of {', '.join(FORMATS)}" + did_you_mean(output_format, FORMATS),
            detail={"field": "format"},
        )
    json = json or output_format == "json"
    from anchor.research.report import report_search

    done = report_search(ctx.find_root().obj["settings"], _workdir(ctx, workdir), workdir is not None)
    if output_format in ("markdown", "latex") and not json:
        from anchor.research.tables import render

        print(render(done.data, done.contract, output_format), end="")
        return
    emit(ctx, json, done.data, done.lines)


@app.command()
@click.argument(
    "workdir", type=PATH, required=False, metavar="RUN", help="The search's work dir (default: <data dir>/research)."
)
@click.option(
    "-o",
    "--output",
    "output",
    type=PATH,
    default=Path("claim.anchor.tar"),
    help="Where to write the claim: NAME.tar, else a new directory.",
)
@json_option
@click.pass_context
def export(ctx: click.Context, workdir: Path | None, output: Path, json: bool) -> None:
    """Export a search as one portable claim: its ledger, the pre-registered contract, every attempt's
    manifest, the champion records, every checkpoint and record proof sealed, the block headers they
    rest on and the report; `anchor research check` re-derives the report from it, offline too."""
    from anchor.chain.presets import chain_name
    from anchor.research.claim import export_claim

    done = export_claim(ctx.find_root().obj["settings"], _workdir(ctx, workdir), output, workdir is not None)
    lines = [
        f"{done.path}: a claim of {done.files} files, {done.sealed} proofs sealed",
        f"  it rests on block {done.trust_block} of {chain_name(done.chain_id)}: check its hash once on any explorer"
        f" or node (`cast block {done.trust_block} -f hash`), then:",
        f"  anchor research check {done.path} --offline --trusted-block {done.trust_block}:HASH",
    ]
    emit(
        ctx,
        json,
        {
            "claim": str(done.path),
            "files": done.files,
            "sealed": done.sealed,
            "chain_id": done.chain_id,
            "trust_block": done.trust_block,
        },
        lines,
    )


@app.command()
@click.argument("claim", type=PATH, help="A claim `anchor research export` wrote (.tar or directory).")
@click.option(
    "--offline", "offline", is_flag=True, help="No network: the sealed proofs against the block hash you trust."
)
@click.option(
    "--trusted-block",
    "trusted_block",
    multiple=True,
    help="With --offline: N:HASH, the claim's last block and its hash.",
)
@json_option
@click.pass_context
def check(ctx: click.Context, claim: Path, offline: bool, trusted_block: list[str] | None, json: bool) -> None:
    """Re-derive a research claim: the ledger's hash chain, every row under an anchored checkpoint (no
    trial dropped), the pre-registered contract, every attempt manifest, the champion records and the
    report, printed as `research report` printed it; any edit is refused naming what (exit 4)."""
    from anchor.errors import BadInput
    from anchor.research.claim import check_claim

    if trusted_block and not offline:
        raise BadInput(
            "--trusted-block goes with --offline (hint: anchor research check CLAIM --offline --trusted-block N:HASH)",
            detail={"field": "offline"},
        )
    verdict = check_claim(ctx.find_root().obj["settings"], claim, offline=offline, trusted_block=trusted_block or ())
    lines = [
        *verdict.lines,
        "",
        f"OK: {claim}: the report above is re-derived from the claim alone"
        + (" (offline, no socket opened)" if verdict.offline else ""),
    ]
    lines.append(
        f"  {verdict.trials} trials in {verdict.rows} ledger rows, all under"
        f" {count(verdict.checkpoints, 'anchored checkpoint')};"
        f" {count(verdict.attempts_checked, 'attempt manifest')} and"
        f" {count(verdict.records_checked, 'champion record')} checked"
    )
    for who, commit in verdict.champions.items():
        chain = " -> ".join(c[:12] for c in verdict.lineage[who])
        by = ", ".join(verdict.lineage_by.get(who, [])) or "nobody"
        lines.append(f"  champion of {who}: {commit[:12]}, lineage {chain} (sealed lineage records by {by})")
    if verdict.where is not None:
        where = verdict.where
        lines.append(
            f"  anchored: the last checkpoint ({where['length']} rows) in transaction {where['tx_hash']} to registry"
            f" {where['registry']} on {where['chain']}"
        )
    lines.append(f"  trusted: {verdict.trusted}")
    emit(ctx, json, verdict.to_json(), lines)


@command("lineage")
@click.argument("commit", help="An attempt commit (a unique prefix is enough).")
@workdir_option
@json_option
@click.pass_context
def lineage(ctx: click.Context, commit: str, workdir: Path | None, json: bool) -> None:
    """Print the attempt tree around COMMIT with the champion chain marked, checked against the chain."""
    from anchor.research.report import lineage_tree
    from anchor.research.verdict import open_search

    ledger, _ = open_search(ctx.find_root().obj["settings"], _workdir(ctx, workdir), workdir is not None)
    ledger.verify()
    data, lines = lineage_tree(ledger.entries(), commit, ctx.find_root().obj["settings"])
    emit(ctx, json, data, lines)
