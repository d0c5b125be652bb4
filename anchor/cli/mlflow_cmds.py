"""`anchor mlflow stamp|verify|upgrade`: the door onto anchor.mlflow (docs/mlflow.md). Parses, calls,
renders: what a run's manifest binds, how it is anchored and what "verified" means are the library's."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from anchor.cli.options import (
    AnchoredBeforeOpt,
    ExpectSubmitterOpt,
    JsonFlag,
    MinFinalityOpt,
    QuorumOpt,
    RegistryOpt,
    RequireOpt,
)
from anchor.cli.output import count, emit, hash_progress, option, wants_json

app = typer.Typer(help="Anchor the runs an MLflow tracking server holds, and verify them (docs/mlflow.md).",
                  no_args_is_help=True)  # fmt: skip

TrackingOpt = Annotated[
    str | None,
    typer.Option("--tracking-uri", envvar="MLFLOW_TRACKING_URI", show_envvar=True,
                 help="The MLflow tracking server (http://host:port), or a store URI MLflow reads."),
]  # fmt: skip
ServicesOpt = Annotated[
    list[str] | None,
    typer.Option("--service", help="Stamp through this anchoring service (repeatable; else ANCHOR_SERVICE_URLS)."),
]


def _tracking(uri: str | None) -> str:
    """The tracking URI, required: without one, MLflow's client would open (and create) ./mlflow.db."""
    from anchor.errors import BadInput

    if not uri:
        raise BadInput("no MLflow tracking server: give --tracking-uri http://HOST:PORT (or set MLFLOW_TRACKING_URI)",
                       detail={"field": "tracking_uri"})  # fmt: skip
    # a command waits on one request, not on MLflow's default seven retries with back-off (minutes):
    # the user's own setting wins (these are MLflow's variables, read by its client)
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
    return uri


@app.command()
def stamp(
    ctx: typer.Context,
    run_ids: Annotated[list[str] | None, typer.Argument(help="Run ids.", metavar="RUN_ID")] = None,
    experiment: Annotated[
        str | None,
        typer.Option("--experiment", help="Every run of this experiment (by name), oldest first."),
    ] = None,
    tracking_uri: TrackingOpt = None,
    service: ServicesOpt = None,
    allow_running: Annotated[
        bool, typer.Option("--allow-running", help="Stamp a run still RUNNING as it is now (its verdict says so).")
    ] = False,
    json: JsonFlag = False,
) -> None:
    """Anchor runs (record and artifacts) and write each proof back into its run: the artifact
    anchor/proof.anchor.json and the tags anchor.manifest_digest, anchor.state, anchor.tx. A run
    unchanged since its last stamp is left as it is."""
    from anchor.errors import BadInput
    from anchor.mlflow.bridge import stamp_run
    from anchor.mlflow.reading import client_for, run_ids_of

    uri = _tracking(tracking_uri)
    if bool(run_ids) == bool(experiment):
        raise BadInput("give RUN_ID (one or more) or --experiment NAME, not both (hint: anchor mlflow stamp RUN_ID"
                       " --tracking-uri http://127.0.0.1:5000)", detail={"field": "run_id"})  # fmt: skip
    ids = list(run_ids or []) or run_ids_of(client_for(uri), str(experiment))
    settings = ctx.find_root().obj["settings"]
    done = []
    for run_id in ids:
        with hash_progress(ctx, json) as progress:
            done.append(stamp_run(run_id, tracking_uri=uri, settings=settings, services=service,
                                  allow_running=allow_running, progress=progress))  # fmt: skip
        if len(ids) > 1 and not wants_json(ctx, json):
            print(_stamp_line(done[-1]), flush=True)
    rows = [_stamp_row(one) for one in done]
    lines = [_stamp_line(one) for one in done] if len(ids) == 1 else [_stamp_summary(done)]
    if len(ids) == 1:
        lines += _stamp_details(done[0])
    emit(ctx, json, {"runs": rows}, lines)


def _stamp_row(one: Any) -> dict[str, Any]:
    return {"run_id": one.run_id, "manifest_digest": one.digest, "state": one.state, "unchanged": one.unchanged,
            "tx_hash": one.tx_hash, "block": one.block, "proof": None if one.proof is None else str(one.proof),
            "superseded": one.superseded, "running": one.running}  # fmt: skip


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
    lines = [f"  manifest    {one.digest}", f"  proof       {one.run_id}'s artifact anchor/proof.anchor.json"
             + (f", kept at {one.proof}" if one.proof else "")]  # fmt: skip
    if one.superseded:
        lines.append(f"  earlier     {one.superseded}, kept as anchor/superseded/{one.superseded}.anchor.json")
    if one.stamped is not None and one.stamped.not_taken:
        lines += [f"  not taken   {url}: {why}" for url, why in one.stamped.not_taken.items()]
    return lines + [f"  then        anchor mlflow verify {one.run_id}"]


def _stamp_summary(done: list[Any]) -> str:
    fresh = [one for one in done if not one.unchanged]
    pending = sum(one.state == "pending" for one in fresh)
    return f"{len(done)} runs: {len(fresh)} stamped ({pending} pending), {len(done) - len(fresh)} unchanged"


@app.command()
def verify(
    ctx: typer.Context,
    run_id: Annotated[str, typer.Argument(help="The run id.", metavar="RUN_ID")],
    tracking_uri: TrackingOpt = None,
    proof: Annotated[
        Path | None,
        typer.Option("--proof", help="A proof file (default: the run's own anchor/proof.anchor.json)."),
    ] = None,
    registry: RegistryOpt = None,
    require: RequireOpt = "any",
    expect_submitter: ExpectSubmitterOpt = None,
    anchored_before: AnchoredBeforeOpt = None,
    min_finality: MinFinalityOpt = None,
    quorum: QuorumOpt = None,
    json: JsonFlag = False,
) -> None:
    """Re-read a run from the server and verify it against its proof: what changed is named (an
    artifact edited, added or removed; a param or tag; a metric logged again), exit codes as `verify`."""
    from anchor.cli.verdict import verdict_lines
    from anchor.library.verifier import Policy, Verifier
    from anchor.mlflow.bridge import verify_run
    from anchor.readback.anchors import required_count

    required_count(require, 1)
    uri = _tracking(tracking_uri)
    settings = ctx.find_root().obj["settings"]
    verifier = Verifier(settings, registries=tuple(registry or ()), quorum=quorum)
    with hash_progress(ctx, json) as progress:
        policy = Policy(expect_submitter, anchored_before, min_finality)
        result = verify_run(run_id, tracking_uri=uri, proof=proof, verifier=verifier, require=require, policy=policy,
                            progress=progress)  # fmt: skip
    verdict = result.verification
    lines = verdict_lines(f"run {run_id}", verdict)
    files = verdict.files
    running = " (stamped while RUNNING: what it held then)" if result.status == "RUNNING" else ""
    held = f"{result.params} params, {result.metric_values} metric values, {result.tags} tags and"
    lines.insert(1, f"  run         {result.status}: its {held} {count(files, 'artifact file')} as anchored{running}")
    lines.insert(2, f"  proof       {result.proof_source}")
    emit(ctx, json, result.to_json(), lines)


@app.command()
def upgrade(
    ctx: typer.Context,
    run_id: Annotated[str, typer.Argument(help="The run id.", metavar="RUN_ID")],
    tracking_uri: TrackingOpt = None,
    service: ServicesOpt = None,
    json: JsonFlag = False,
) -> None:
    """Complete a run's pending proof once its services anchored it, and write it back into the run."""
    from anchor.mlflow.bridge import upgrade_run

    uri = _tracking(tracking_uri)
    outcome = upgrade_run(run_id, tracking_uri=uri, settings=ctx.find_root().obj["settings"], services=service)
    state = "complete" if outcome.complete else "still pending at " + ", ".join(outcome.still_pending)
    emit(ctx, json, {"run_id": run_id, "complete": outcome.complete, "added": len(outcome.added),
                     "still_pending": list(outcome.still_pending), "failed": outcome.failed},
         [f"run {run_id}: {len(outcome.added)} anchor{'s' if len(outcome.added) != 1 else ''} added; {state}",
          *[f"  failed      {url}: {outcome.errors[url].said_as(option) if url in outcome.errors else why}"
            for url, why in outcome.failed.items()]])  # fmt: skip
    if not outcome.complete:
        from anchor.errors import ExitCode

        raise typer.Exit(int(ExitCode.PENDING))
