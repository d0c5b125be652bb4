"""`anchor deploy`, and the service: `anchor serve`, `anchor index`, `anchor render`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from anchor.cli.commands import command
from anchor.cli.options import PATH, chain_rpc_url_option, json_option, options_of
from anchor.cli.output import emit, write_rendered
from api.server import IndexOptions, ServeOptions


@command("deploy")
@json_option
@click.pass_context
def deploy(ctx: click.Context, json: bool) -> None:
    """Put the registry at its canonical address (the same on every chain) and record it; where it
    already is, record it and send nothing."""
    from anchor.anchoring.deploy import deploy as put_registry
    from anchor.chain.presets import chain_name
    from anchor.chain.toolchain import checkout

    done = put_registry(ctx.find_root().obj["settings"])
    record, derivation = done.record, done.derivation
    emit(
        ctx,
        json,
        {
            "status": done.status,
            "deployment": record.model_dump(),
            "canonical": derivation,
            "verify_contract": done.verify_contract,
        },
        [
            f"registry {done.status} at {record.address} on {chain_name(record.chain_id)} ({done.contract}"
            f" {record.registry_version})",
            f"  code hash {record.code_hash} (check it: cast keccak $(cast code {record.address} --rpc-url URL))",
            f"  canonical: CREATE2 by {derivation['proxy']}, salt {derivation['salt']}, init code hash"
            f" {derivation['init_code_hash']}: the same address on every chain",
            *([f"  tx {record.tx_hash} (block {record.block_number})"] if record.tx_hash else []),
            *(
                [
                    f"  publish its source on the explorer ({_where_to_publish(checkout())}):",
                    f"    {done.verify_contract}",
                ]
                if done.verify_contract
                else []
            ),
        ],
    )


def _where_to_publish(root: Path | None) -> str:
    """forge needs the registry's sources and foundry.toml: a wheel has neither, so a wheel user is told
    where to get them rather than sent to a foundry/ folder they do not have."""
    if root is not None:
        return f"from {root / 'foundry'}, with ETHERSCAN_API_KEY set"
    return (
        "needs Foundry and a clone of Anchor's source at this version:"
        " run it from its foundry/, with ETHERSCAN_API_KEY set"
    )


@command("serve")
@options_of(ServeOptions)
@click.pass_context
def serve(ctx: click.Context, /, **given: Any) -> None:
    """Serve the REST verification API and the explorer pages; links printed by `anchor lookup` follow.

    `anchor index` serves an explorer from the chain alone; `anchor render k8s` renders this service for
    a cluster."""
    from api.server import serve as run

    run(ctx.find_root().obj["settings"], ServeOptions(**given))


@command("index")
@options_of(IndexOptions)
@click.pass_context
def index(ctx: click.Context, /, **given: Any) -> None:
    """Serve an explorer that needs only the chain: no data directory, journal or ledger. The registry's
    events are followed from its deployment block into an index of its own, searchable by commit,
    researcher, root or tx."""
    from api.server import serve_index

    serve_index(ctx.find_root().obj["settings"], IndexOptions(**given))


@command("render")
@click.argument("target", help="What to render: k8s (a replicated Deployment).")
@click.option("--image", help="The container image, pinned by digest (name@sha256:<64 hex>).")
@click.option(
    "--replicas", type=click.IntRange(min=1, max=32), default=3, show_default=True, help="Replicas of the Deployment."
)
@chain_rpc_url_option
@click.option("--public-url", help="The URL people reach the service at.")
@click.option(
    "--keys-secret",
    default="anchor-keys",
    show_default=True,
    help="The Secret with ANCHOR_JOURNAL_URL, the key and ANCHOR_API_TOKENS.",
)
@click.option("--namespace", help="The namespace.")
@click.option("--out", type=PATH, help="Write here (refuses to overwrite).")
@click.pass_context
def render(
    ctx: click.Context,
    target: str,
    image: str | None,
    replicas: int,
    chain_rpc_url: str | None,
    public_url: str | None,
    keys_secret: str,
    namespace: str | None,
    out: Path | None,
) -> None:
    """Render the service for a cluster: Kubernetes objects (k8s), printed or written to --out: replicas
    sharing the PostgreSQL journal of the keys Secret, each with its own data directory, `/ready` as
    readiness probe."""
    from anchor.anchoring.k8s import render_service_for

    text, wrote = render_service_for(
        ctx.find_root().obj["settings"],
        target,
        image=image,
        replicas=replicas,
        rpc_url=chain_rpc_url,
        public_url=public_url,
        keys_secret=keys_secret,
        namespace=namespace,
    )
    write_rendered(text, out, wrote)


RENAMED = {"--index-only": "index", "--render": "render"}
"""`serve`'s mode flags of earlier releases, and the command each is now (kept for one release)."""


def renamed(args: list[str]) -> tuple[str, list[str]] | None:
    """`serve --index-only …` as `index …`, `serve --render k8s …` as `render k8s …`: the command and its
    words, with a one-line note on stderr; None for a `serve` of this release."""
    words = args[: args.index("--")] if "--" in args else args
    for flag, name in RENAMED.items():
        for at, word in enumerate(words):
            if word == flag or word.startswith(flag + "="):
                rest = [*args[:at], *args[at + 1 :]]
                if name == "render":
                    value = word.partition("=")[2] or (rest.pop(at) if at < len(rest) else "")
                    rest.insert(0, value)
                click.echo(
                    f"note: `anchor serve {flag}` is now `anchor {name}`; this spelling works until the next release",
                    err=True,
                )
                return name, rest
    return None
