"""`anchor deploy` and `anchor serve`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from anchor.cli.options import JsonFlag, QuorumOpt
from anchor.cli.output import emit, write_rendered


def register(app: typer.Typer) -> None:
    app.command()(deploy)
    app.command()(serve)


def deploy(ctx: typer.Context, json: JsonFlag = False) -> None:
    """Put the registry at its canonical address (the same on every chain) and record it; where it
    already is, record it and send nothing."""
    from anchor.anchoring.deploy import deploy as put_registry
    from anchor.chain.presets import chain_name
    from anchor.chain.toolchain import checkout

    done = put_registry(ctx.find_root().obj["settings"])
    record, derivation = done.record, done.derivation
    emit(ctx, json, {"status": done.status, "deployment": record.model_dump(), "canonical": derivation,
                     "verify_contract": done.verify_contract}, [
        f"registry {done.status} at {record.address} on {chain_name(record.chain_id)} ({done.contract}"
        f" {record.registry_version})",
        f"  code hash {record.code_hash} (check it: cast keccak $(cast code {record.address} --rpc-url URL))",
        f"  canonical: CREATE2 by {derivation['proxy']}, salt {derivation['salt']}, init code hash"
        f" {derivation['init_code_hash']}: the same address on every chain",
        *([f"  tx {record.tx_hash} (block {record.block_number})"] if record.tx_hash else []),
        *([f"  publish its source on the explorer ({_where_to_publish(checkout())}):", f"    {done.verify_contract}"]
          if done.verify_contract else []),
    ])  # fmt: skip


def _where_to_publish(root: Path | None) -> str:
    """forge needs the registry's sources and foundry.toml: a wheel has neither, so a wheel user is told
    where to get them rather than sent to a foundry/ folder they do not have."""
    if root is not None:
        return f"from {root / 'foundry'}, with ETHERSCAN_API_KEY set"
    return (
        "needs Foundry and a clone of Anchor's source at this version:"
        " run it from its foundry/, with ETHERSCAN_API_KEY set"
    )


def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Bind address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8000,
    public_url: Annotated[
        str | None,
        typer.Option("--public-url", help="The URL people reach this service at (default: http://HOST:PORT)."),
    ] = None,
    render: Annotated[
        str | None,
        typer.Option("--render", help="Do not serve: render the service for a cluster (k8s: a replicated Deployment)."),
    ] = None,
    image: Annotated[
        str | None,
        typer.Option(help="With --render: the container image, pinned by digest (name@sha256:<64 hex>)."),
    ] = None,
    replicas: Annotated[int, typer.Option(min=1, max=32, help="With --render: replicas of the Deployment.")] = 3,
    chain_rpc_url: Annotated[
        str | None,
        typer.Option("--chain-rpc-url", help="With --render: the chain's RPC URL as the pods reach it."),
    ] = None,
    keys_secret: Annotated[
        str, typer.Option(help="With --render: the Secret with ANCHOR_JOURNAL_URL, the key and ANCHOR_API_TOKENS.")
    ] = "anchor-keys",  # noqa: S107 - the name of a Secret object
    namespace: Annotated[str | None, typer.Option(help="With --render: the namespace.")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="With --render: write here (refuses to overwrite).")] = None,
    index_only: Annotated[
        bool,
        typer.Option(
            "--index-only", help="Serve an explorer from the chain alone: no data directory, journal or ledger."
        ),
    ] = False,
    calendar: Annotated[
        bool,
        typer.Option(
            "--calendar",
            help="Also be a public calendar: anyone may stamp a manifest identity without a token (POST /v1/calendar),"
            " rate-limited per client, the queue bounded (docs/calendar.md).",
        ),
    ] = False,
    access_log: Annotated[
        bool,
        typer.Option(
            "--access-log",
            help="Log one line per request (off by default: under load, formatting it cost a"
            " tenth of each request's time).",
        ),
    ] = False,
    forwarded_allow_ips: Annotated[
        str | None,
        typer.Option(
            "--forwarded-allow-ips",
            help="Trust X-Forwarded-For / -Proto only from these proxies (comma-separated IPs or CIDRs; default:"
            " none, so clients are told apart by their own address: docs/deploy.md).",
        ),
    ] = None,
    rpc_url: Annotated[
        list[str] | None,
        typer.Option(
            "--rpc-url",
            help="The chain to read; repeated, with --index-only: index only what a quorum of"
            " them agree on (--quorum; default a majority).",
        ),
    ] = None,
    quorum: QuorumOpt = None,
    registry: Annotated[
        str | None, typer.Option("--registry", help="With --index-only: another registry than the canonical one.")
    ] = None,
    index: Annotated[
        Path | None,
        typer.Option(
            "--index", help="With --index-only: the index file (default: ~/.cache/anchor/index-CHAIN-REGISTRY.sqlite)."
        ),
    ] = None,
    from_block: Annotated[
        int | None,
        typer.Option(
            "--from-block", min=0, help="With --index-only: the registry's deployment block (default: found on chain)."
        ),
    ] = None,
    confirmations: Annotated[
        int, typer.Option(min=1, max=10_000, help="With --index-only: blocks behind the head re-checked for reorgs.")
    ] = 12,
    browser_rpc_url: Annotated[
        str | None,
        typer.Option(
            "--browser-rpc-url", help="The public RPC URL visitors' browsers read the registry through (no key in it)."
        ),
    ] = None,
    claims: Annotated[
        Path | None,
        typer.Option(
            "--claims",
            help="With --index-only: a published research ledger; values that hash to the chain's records are shown.",
        ),
    ] = None,
    repo: Annotated[
        Path | None,
        typer.Option(
            "--repo",
            help="With --index-only: a clone of the attempts' repository; diffs that hash to the records are shown.",
        ),
    ] = None,
) -> None:
    """Serve the REST verification API and the explorer pages; links printed by `anchor lookup` follow.

    With --index-only, serve an explorer that needs only the chain: the registry's events, followed
    from its deployment block into an index of its own, searchable by commit, researcher, root or tx.

    With --render k8s, print (or --out) Kubernetes objects instead: replicas sharing the PostgreSQL
    journal of the keys Secret, each with its own data directory, `/ready` as readiness probe."""
    settings = ctx.find_root().obj["settings"]
    if render is not None:
        from anchor.anchoring.k8s import render_service_for

        text, wrote = render_service_for(
            settings, render, image=image, replicas=replicas, rpc_url=chain_rpc_url, public_url=public_url,
            keys_secret=keys_secret, namespace=namespace,
        )  # fmt: skip
        write_rendered(text, out, wrote)
        return
    from api.server import ServeOptions
    from api.server import serve as run

    run(settings, ServeOptions(
        host=host, port=port, public_url=public_url, calendar=calendar, access_log=access_log,
        forwarded_allow_ips=forwarded_allow_ips, rpc_urls=tuple(rpc_url or ()), quorum=quorum,
        browser_rpc_url=browser_rpc_url,
        index_only=index_only, registry=registry, index=index, from_block=from_block, confirmations=confirmations,
        claims=claims, repo=repo,
    ))  # fmt: skip
