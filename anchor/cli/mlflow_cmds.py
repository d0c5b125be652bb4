"""`anchor mlflow stamp|verify|upgrade`: the door onto anchor.mlflow (docs/mlflow.md). Parses, calls,
renders: what a run's manifest binds, how it is anchored and what "verified" means are the library's."""

from __future__ import annotations

import json as _json
import os
import sys
from pathlib import Path
from typing import Any

import click

from anchor.cli.commands import AnchorGroup
from anchor.cli.options import (
    PATH,
    expect_submitter_option,
    json_option,
    policy_options,
    quorum_option,
    registry_option,
)
from anchor.cli.output import count, emit, error_json, hash_progress, option, wants_json

app = AnchorGroup("mlflow", help="Anchor the runs an MLflow tracking server holds, and verify them (docs/mlflow.md).")

tracking_option = click.option(
    "--tracking-uri",
    "tracking_uri",
    envvar="MLFLOW_TRACKING_URI",
    show_envvar=True,
    help="The MLflow tracking server (http://host:port), or a store URI MLflow reads.",
)
services_option = click.option(
    "--service",
    "service",
    multiple=True,
    help="Stamp through this anchoring service (repeatable; else ANCHOR_SERVICE_URLS).",
)


def _tracking(uri: str | None) -> str:
    """The tracking URI, required: without one, MLflow's client would open (and create) ./mlflow.db."""
    from anchor.errors import BadInput

    if not uri:
        raise BadInput(
            "no MLflow tracking server: give --tracking-uri http://HOST:PORT (or set MLFLOW_TRACKING_URI)",
            detail={"field": "tracking_uri"},
        )
    # a command waits on one request, not on MLflow's default seven retries with back-off (minutes):
    # the user's own setting wins (these are MLflow's variables, read by its client)
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
    # MLflow's client writes "View run … at: URL" to stdout as a run ends (a research search's runs):
    # a command's stdout is its output, JSON with --json
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    return uri


restamp_option = click.option(
    "--restamp",
    "restamp",
    is_flag=True,
    help="Anchor anew a run that changed since its last stamp (the changes are printed,"
    " and recorded in its new manifest); without it such a run is refused, exit 4.",
)
allow_deleted_option = click.option(
    "--allow-deleted",
    "allow_deleted",
    is_flag=True,
    help="Accept a deleted run (its verdict still names the deletion); without it a deleted run is exit 10.",
)


@app.command()
@click.argument("run_ids", nargs=-1, metavar="RUN_ID", help="Run ids.")
@click.option(
    "--experiment", "experiment", help="Every run of this experiment (by name), oldest first, and its roster."
)
@tracking_option
@services_option
@click.option(
    "--allow-running",
    "allow_running",
    is_flag=True,
    help="Stamp a run still RUNNING as it is now (its verdict says so).",
)
@restamp_option
@json_option
@click.pass_context
def stamp(
    ctx: click.Context,
    run_ids: list[str] | None,
    experiment: str | None,
    tracking_uri: str | None,
    service: list[str] | None,
    allow_running: bool,
    restamp: bool,
    json: bool,
) -> None:
    """Anchor runs (record, artifacts and logged models) and write each proof back into its run: the
    artifact anchor/proof.anchor.json and the tags anchor.manifest_digest, anchor.state, anchor.tx. A run
    unchanged since its last stamp is left as it is; one changed since is refused, its changes named,
    unless --restamp. A run that fails is reported and the others are still stamped."""
    from anchor.errors import AnchorError, BadInput
    from anchor.mlflow.experiment import stamp_experiment, stamp_runs

    uri = _tracking(tracking_uri)
    if bool(run_ids) == bool(experiment):
        raise BadInput(
            "give RUN_ID (one or more) or --experiment NAME, not both (hint: anchor mlflow stamp RUN_ID"
            " --tracking-uri http://127.0.0.1:5000)",
            detail={"field": "run_id"},
        )
    settings = ctx.find_root().obj["settings"]
    as_json = wants_json(ctx, json)
    outcomes: list[tuple[str, Any]] = []

    many = bool(experiment) or len(run_ids or []) > 1

    def said(run_id: str, outcome: Any) -> None:
        outcomes.append((run_id, outcome))
        if as_json or not many:
            return
        if isinstance(outcome, AnchorError):
            print("\n".join(_error_lines(outcome)), file=sys.stderr, flush=True)
        else:
            print(_stamp_line(outcome), flush=True)

    roster = None
    if experiment:
        done = stamp_experiment(
            experiment,
            tracking_uri=uri,
            settings=settings,
            services=service,
            allow_running=allow_running,
            restamp=restamp,
            on_run=said,
        )
        roster, code = done.roster, done.exit_code
    else:
        ids = list(run_ids or [])
        with hash_progress(ctx, json) as progress:
            done = stamp_runs(
                ids,
                tracking_uri=uri,
                settings=settings,
                services=service,
                progress=progress,
                allow_running=allow_running,
                restamp=restamp,
                on_run=said,
            )
        if not many and done.refused:
            raise done.refused[ids[0]]
        code = done.exit_code
    done_runs = [o for _, o in outcomes if not isinstance(o, AnchorError)]
    refused = [(r, o) for r, o in outcomes if isinstance(o, AnchorError)]
    rows = [
        _stamp_row(o) if not isinstance(o, AnchorError) else {"run_id": r, "error": error_json(o)} for r, o in outcomes
    ]
    data: dict[str, Any] = {"runs": rows}
    lines: list[str] = []
    if roster is not None:
        data["roster"] = {
            "manifest_digest": roster.digest,
            "runs": len(roster.runs),
            "state": roster.state,
            "anchored_block": roster.anchored_block,
            "unchanged": roster.unchanged,
        }
        lines.append(_roster_line(roster))
    if many:
        lines.append(_stamp_summary(done_runs, len(refused)))
    elif done_runs:
        lines += [_stamp_line(done_runs[0]), *_stamp_details(done_runs[0])]
    if code:
        if as_json:
            print(_json.dumps({"ok": False, **data}, sort_keys=True, default=str))
        else:
            print("\n".join(lines))
        ctx.exit(code)
    emit(ctx, json, data, lines)


def _error_lines(exc: Any) -> list[str]:
    """A refused run as the command line says any error: the typed line, then each change."""
    from anchor.cli.output import printable

    first, *rest = map(printable, exc.diagnostic_lines(option))
    if isinstance(exc.detail.get("changes"), list):
        rest = [f"  ~ {printable(str(change))}" for change in exc.detail["changes"]] + [
            line for line in rest if not line.startswith("  changes: ")
        ]
    return [f"error[{exc.code}]: {first}", *rest]


def _roster_line(roster: Any) -> str:
    if roster.unchanged:
        return f"roster: {count(len(roster.runs), 'run')}, unchanged since its last stamp ({roster.state})"
    where = f"anchored in block {roster.anchored_block}" if roster.state == "anchored" else "pending at the services"
    return f"roster: {count(len(roster.runs), 'run')}, {where} (manifest {roster.digest})"


def _stamp_row(one: Any) -> dict[str, Any]:
    return {
        "run_id": one.run_id,
        "manifest_digest": one.digest,
        "state": one.state,
        "unchanged": one.unchanged,
        "tx_hash": one.tx_hash,
        "block": one.block,
        "proof": None if one.proof is None else str(one.proof),
        "superseded": one.superseded,
        "running": one.running,
    }


def _stamp_line(one: Any) -> str:
    if one.unchanged:
        return f"run {one.run_id}: unchanged since its last stamp ({one.state}); nothing anchored"
    where = (
        f"anchored in block {one.block} (tx {one.tx_hash})"
        if one.state == "anchored"
        else ("pending at the services (signed receipts); `anchor mlflow upgrade " + one.run_id + "` completes it")
    )
    return f"run {one.run_id}: {where}" + (" — stamped while RUNNING" if one.running else "")


def _stamp_details(one: Any) -> list[str]:
    lines = [
        f"  manifest    {one.digest}",
        f"  proof       {one.run_id}'s artifact anchor/proof.anchor.json"
        + (f", kept at {one.proof}" if one.proof else ""),
    ]
    if one.superseded:
        lines.append(f"  earlier     {one.superseded}, kept as anchor/superseded/{one.superseded}.anchor.json")
        lines += [f"  changed     {change}" for change in one.changes]
    if one.stamped is not None and one.stamped.not_taken:
        lines += [f"  not taken   {url}: {why}" for url, why in one.stamped.not_taken.items()]
    return lines + [f"  then        anchor mlflow verify {one.run_id}"]


def _stamp_summary(done: list[Any], refused: int) -> str:
    fresh = [one for one in done if not one.unchanged]
    pending = sum(one.state == "pending" for one in fresh)
    said = f"{count(len(done) + refused, 'run')}: {len(fresh)} stamped ({pending} pending), {len(done) - len(fresh)}"
    said += " unchanged"
    return said + (f", {refused} refused" if refused else "")


@app.command()
@click.argument("run_id", required=False, metavar="RUN_ID", help="The run id.")
@click.option(
    "--experiment", "experiment", help="Every run of this experiment (by name, deleted ones too), and its roster."
)
@tracking_option
@click.option("--proof", "proof", type=PATH, help="A proof file (default: the run's own anchor/proof.anchor.json).")
@allow_deleted_option
@registry_option
@quorum_option
@policy_options
@json_option
@click.pass_context
def verify(
    ctx: click.Context,
    run_id: str | None,
    experiment: str | None,
    tracking_uri: str | None,
    proof: Path | None,
    allow_deleted: bool,
    registry: list[str] | None,
    quorum: int | None,
    require: str,
    expect_submitter: str | None,
    anchored_before: str | None,
    min_finality: str | None,
    json: bool,
) -> None:
    """Re-read a run from the server and verify it against its proof: what changed is named (an
    artifact edited, added or removed; a logged model's file; a param or tag; a metric logged again),
    exit codes as `verify`; a deleted run is exit 10 unless --allow-deleted."""
    from anchor.errors import BadInput
    from anchor.library.verifier import Policy, Verifier
    from anchor.mlflow.bridge import verify_run
    from anchor.readback.checklist import required_count

    required_count(require, 1)
    uri = _tracking(tracking_uri)
    if bool(run_id) == bool(experiment) or (experiment and proof is not None):
        raise BadInput(
            "give RUN_ID or --experiment NAME, not both (--proof: with RUN_ID only) (hint: anchor mlflow"
            " verify RUN_ID --tracking-uri http://127.0.0.1:5000)",
            detail={"field": "run_id"},
        )
    settings = ctx.find_root().obj["settings"]
    verifier = Verifier(settings, registries=tuple(registry or ()), quorum=quorum)
    policy = Policy(expect_submitter, anchored_before, min_finality)
    if experiment:
        _verify_experiment(ctx, json, experiment, uri, verifier, policy, require, allow_deleted)
        return
    if str(run_id).startswith("models:/"):
        from anchor.mlflow.registry import verify_model

        if proof is not None:
            raise BadInput(
                "--proof: with a RUN_ID only; a registered version's proof is its run's", detail={"field": "proof"}
            )
        with hash_progress(ctx, json) as progress:
            del progress  # the version's run is read whole: its own bar would interleave
            found = verify_model(
                str(run_id), tracking_uri=uri, verifier=verifier, require=require, policy=policy, settings=settings
            )
        lines = _model_lines(found)
        emit(ctx, json, found.to_json(), lines)
        return
    with hash_progress(ctx, json) as progress:
        result = verify_run(
            str(run_id),
            tracking_uri=uri,
            proof=proof,
            verifier=verifier,
            require=require,
            policy=policy,
            allow_deleted=allow_deleted,
            progress=progress,
        )
    emit(ctx, json, result.to_json(), _run_lines(result))


def _model_lines(found: Any) -> list[str]:
    """A registered version's verdict: the version, its files, its promotion as the chain holds it (and
    the promotions before it), a research champion's ledger head, then its run's verdict."""
    before = found.previous
    alias = f"to @{found.alias} " if found.alias else ""
    was = (
        f"version {before['model_version']}" + ("" if before.get("promotion_digest") else " (never promoted)")
        if before
        else "no version held the alias"
    )
    lines = [
        f"OK: {found.uri} is version {found.version} of {found.model}, logged model {found.model_id}",
        f"  files       {count(found.files, 'file')}, as run {found.run.run_id} anchored them",
        f"  promotion   {alias}{found.promotion_digest}: lineage record in block {found.promotion_block} by"
        f" {found.promoted_by}; before it {was}",
    ]
    if found.history:
        on_chain = [h for h in found.history if h["on_chain"]]
        lines.append(
            f"  history     {count(len(found.history) + 1, 'promotion')} on chain, newest first: this one, "
            + ", ".join(f"{h['promotion_digest'][:18]}… (block {h['block']})" for h in on_chain)
            + (
                ""
                if len(on_chain) == len(found.history)
                else f", then {found.history[-1]['promotion_digest']}: not on chain"
            )
        )
    research = found.research
    if research:
        chain = research.get("ledger_on_chain") or {}
        lines.append(
            f"  research    champion {research['commit'][:12]} of {count(research['trials'], 'trial')}"
            f" ({research['researcher']}); ledger head {research['ledger_head'][:16]}… of"
            f" {research['ledger_length']} entries, checkpointed on chain in block {chain.get('block')} by"
            f" {chain.get('researcher')}"
        )
    return [*lines, *_run_lines(found.run)]


def _run_lines(result: Any) -> list[str]:
    from anchor.cli.verdict import verdict_lines

    verdict = result.verification
    lines = verdict_lines(f"run {result.run_id}", verdict)
    running = " (stamped while RUNNING: what it held then)" if result.status == "RUNNING" else ""
    held = f"{result.params} params, {result.metric_values} metric values, {result.tags} tags"
    models = f", {count(result.logged_models, 'logged model')}" if result.logged_models else ""
    said = [
        f"  run         {result.status}: its {held}{models} and {count(verdict.files, 'artifact file')} as"
        f" anchored{running}",
        f"  proof       {result.proof_source}",
    ]
    if result.lifecycle_stage == "deleted":
        said.append("  lifecycle   deleted (accepted: --allow-deleted)")
    earlier = result.earlier
    if earlier is not None:
        when = f"block {earlier.anchored_block}" if earlier.anchored_block is not None else earlier.manifest_digest
        if earlier.held:
            held_then = ", ".join(earlier.held)
            said.append(f"  stamped     {result.stamps} times; the earlier stamp ({when}) held {held_then}")
        else:
            said.append(
                f"  stamped     {result.stamps} times; the earlier stamp {earlier.manifest_digest}: its"
                " re-stamp recorded these changes"
            )
            said += [f"    ~ {change}" for change in earlier.changes]
        if earlier.problem:
            said.append(f"  earlier     {earlier.problem}")
    return [lines[0], *said, *lines[1:]]


def _verify_experiment(
    ctx: click.Context,
    json: bool,
    experiment: str,
    uri: str,
    verifier: Any,
    policy: Any,
    require: str,
    allow_deleted: bool,
) -> None:
    from anchor.errors import AnchorError
    from anchor.mlflow.experiment import verify_experiment

    found = verify_experiment(
        experiment, tracking_uri=uri, verifier=verifier, policy=policy, require=require, allow_deleted=allow_deleted
    )
    lines: list[str] = []
    failed = 0
    for run_id, verdict in found.runs:
        if run_id in found.deleted:
            continue
        if isinstance(verdict, AnchorError):
            failed += 1
            print("\n".join(_error_lines(verdict)), file=sys.stderr)
        else:
            lines.append(
                f"OK: run {run_id}: {verdict.status}, as anchored in block"
                f" {verdict.verification.anchored_block}"
                + (f" (stamped {verdict.stamps} times)" if verdict.stamps > 1 else "")
            )
    if found.deleted:
        accepted = "accepted: --allow-deleted" if allow_deleted else "not accepted without --allow-deleted, exit 10"
        lines.append(
            f"deleted: {count(len(found.deleted), 'run')} (hidden from the experiment, still held by the"
            f" store; {accepted})"
        )
        verdicts = dict(found.runs)
        for run_id in found.deleted:
            verdict = verdicts[run_id]
            lines.append(
                f"  {run_id}: "
                + (f"{verdict.code}: {verdict.message}" if isinstance(verdict, AnchorError) else "verified as anchored")
            )
            failed += isinstance(verdict, AnchorError)
    if found.roster is not None:
        lines.append(
            f"roster: the experiment held {count(len(found.roster.runs), 'run')} when it was stamped"
            f" (block {found.roster.anchored_block}); it holds {len(found.runs)} now"
        )
        lines += [f"  run {run_id}: anchored in the experiment's roster, gone from the store" for run_id in found.gone]
        lines += [
            f"  run {run_id}: not in the roster (created after the experiment was last stamped)"
            for run_id in found.unlisted
        ]
    elif found.roster_error is not None:
        print("\n".join(_error_lines(found.roster_error)), file=sys.stderr)
    else:
        lines.append("roster: none (`anchor mlflow stamp --experiment` anchors one)")
    verified = sum(not isinstance(v, AnchorError) for r, v in found.runs if r not in found.deleted)
    gone = f", {len(found.gone)} gone" if found.gone else ""
    lines.append(
        f"{count(len(found.runs), 'run')}: {verified} verified, {len(found.deleted)} deleted, {failed} failed{gone}"
    )
    code = found.exit_code
    if wants_json(ctx, json):
        print(_json.dumps({"ok": code == 0, **found.to_json()}, sort_keys=True, default=str))
    else:
        print("\n".join(lines))
    if code:
        ctx.exit(code)


@app.command()
@click.argument("model", metavar="MODEL", help="The registered model's name.")
@click.option("--run", "run", required=True, help="The run whose logged model is promoted (verified first).")
@click.option("--alias", "alias", help="Set this alias (e.g. champion) on the version.")
@click.option("--model-id", "model_id", help="The run's logged model (m-…), when it has several.")
@tracking_option
@services_option
@expect_submitter_option
@json_option
@click.pass_context
def promote(
    ctx: click.Context,
    model: str,
    run: str,
    alias: str | None,
    model_id: str | None,
    tracking_uri: str | None,
    service: list[str] | None,
    expect_submitter: str | None,
    json: bool,
) -> None:
    """Verify a run's proof, then register its logged model as a version of MODEL (tagged with the run's
    manifest digest and proof), anchor the promotion and set the alias: nothing is written when the run
    does not verify."""
    from anchor.library.verifier import Policy
    from anchor.mlflow.registry import promote as promote_run

    uri = _tracking(tracking_uri)
    done = promote_run(
        model,
        run,
        alias=alias,
        model_id=model_id,
        tracking_uri=uri,
        services=service,
        settings=ctx.find_root().obj["settings"],
        policy=Policy(expect_submitter),
    )
    held = f"@{done.alias} -> version {done.version}" if done.alias else f"version {done.version}"
    was = f" (was version {done.previous})" if done.previous else ""
    where = (
        f"lineage record in block {done.promotion_block} (tx {done.promotion_tx}) by {done.promoted_by}"
        if done.promotion_block is not None
        else f"lineage record signed by {done.promoted_by}, relayed (pending)"
    )
    emit(
        ctx,
        json,
        {
            "model": done.model,
            "version": done.version,
            "alias": done.alias,
            "run_id": done.run_id,
            "model_id": done.model_id,
            "run_manifest_digest": done.run_digest,
            "run_block": done.run_block,
            "promotion_digest": done.promotion_digest,
            "promotion_block": done.promotion_block,
            "promotion_tx": done.promotion_tx,
            "promoted_by": done.promoted_by,
            "previous": done.previous,
            "research": done.research,
        },
        [
            f"{done.model} {held}{was}: run {done.run_id} verified (block {done.run_block}), logged model"
            f" {done.model_id}",
            f"  run         {done.run_digest}",
            f"  promotion   {done.promotion_digest}: {where}",
            f"  then        anchor mlflow verify models:/{done.model}"
            + (f"@{done.alias}" if done.alias else f"/{done.version}"),
            f"              anchor lookup {done.promotion_digest}",
        ],
    )


@app.command()
@click.argument("run_id", metavar="RUN_ID", help="The run id.")
@tracking_option
@services_option
@json_option
@click.pass_context
def upgrade(ctx: click.Context, run_id: str, tracking_uri: str | None, service: list[str] | None, json: bool) -> None:
    """Complete a run's pending proof once its services anchored it, and write it back into the run."""
    from anchor.mlflow.bridge import upgrade_run

    uri = _tracking(tracking_uri)
    outcome = upgrade_run(run_id, tracking_uri=uri, settings=ctx.find_root().obj["settings"], services=service)
    state = "complete" if outcome.complete else "still pending at " + ", ".join(outcome.still_pending)
    emit(
        ctx,
        json,
        {
            "run_id": run_id,
            "complete": outcome.complete,
            "added": len(outcome.added),
            "still_pending": list(outcome.still_pending),
            "failed": outcome.failed,
        },
        [
            f"run {run_id}: {len(outcome.added)} anchor{'s' if len(outcome.added) != 1 else ''} added; {state}",
            *[
                f"  failed      {url}: {outcome.errors[url].said_as(option) if url in outcome.errors else why}"
                for url, why in outcome.failed.items()
            ],
        ],
    )
    if not outcome.complete:
        from anchor.errors import ExitCode

        ctx.exit(int(ExitCode.PENDING))


def research_tracking(name: str, no_anchor: bool, tracking_uri: str | None) -> str:
    """`anchor research run --mlflow NAME`, checked before the search runs: a champion is promoted on its
    proof (so the search is anchored), and the tracking server answers now, not after an hour of search."""
    from anchor.errors import BadInput
    from anchor.mlflow.reading import client_for

    if no_anchor:
        raise BadInput(
            "--mlflow with --no-anchor: the champion is promoted on its proof; drop one of the two",
            detail={"field": "--mlflow"},
        )
    if not name.strip() or "/" in name or "@" in name:
        raise BadInput(f"--mlflow {name!r}: an experiment and model name, no '/' or '@'", detail={"field": "--mlflow"})
    uri = _tracking(tracking_uri)
    client_for(uri)
    return uri


def log_research(ctx: click.Context, options: Any, name: str, tracking: str, lines: list[str]) -> dict[str, Any]:
    """After `anchor research run --mlflow NAME`: the search logged and its champion promoted
    (anchor.mlflow.research); adds its lines to `lines` and returns its JSON."""
    from anchor.mlflow.research import log_search

    done = log_search(
        options.work,
        options.repo,
        name,
        tracking_uri=tracking,
        settings=ctx.find_root().obj["settings"],
        services=list(options.services) or None,
    )
    lines.append(
        f"mlflow: experiment {done.experiment}: {count(done.trials, 'trial')} as runs ({done.logged} logged"
        f" now); champion run {done.champion_run} stamped ({done.stamped.state})"
    )
    if done.promoted is not None:
        p = done.promoted
        lines.append(
            f"  {p.model} @{p.alias} -> version {p.version}, promotion {p.promotion_digest}"
            + (f" (block {p.promotion_block})" if p.promotion_block is not None else " (pending)")
        )
        lines.append(f"  then        anchor mlflow verify models:/{p.model}@{p.alias}")
    else:
        lines.append("  the champion of this ledger head was promoted before: nothing registered")
    return done.to_json()
