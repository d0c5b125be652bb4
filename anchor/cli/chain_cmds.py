"""`anchor chain up|down|status`: the embedded local anvil; `anchor chain balance`: what the signing key holds."""

from __future__ import annotations

from pathlib import Path

import click

from anchor.cli.commands import AnchorGroup
from anchor.cli.options import json_option
from anchor.cli.output import emit

app = AnchorGroup("chain", help="Start, stop or inspect the embedded local chain; the signing key's balance.")


def _chain(ctx: click.Context):  # type: ignore[no-untyped-def]
    from anchor.chain.node import LocalChain

    settings = ctx.find_root().obj["settings"]
    return LocalChain(settings.data_dir, settings.local_port)


def _show(ctx: click.Context, json_flag: bool, status: object) -> None:
    """The chain's state, its data dir and the rule that chose it (a chain is its data dir's: the wrong
    data dir is the usual reason for "not running"), and what a stop keeps, only if there is a state."""
    settings = ctx.find_root().obj["settings"]
    data = status.to_json()  # type: ignore[attr-defined]
    data["data_dir"] = {"path": str(settings.data_dir), "rule": settings.data_dir_source}
    has_state = Path(data["state_file"]).is_file()
    if data["running"]:
        block = f", block {data['block_number']}" if data["block_number"] is not None else ""
        first = f"local chain running at {data['rpc_url']}{block}"
        then = "stop it with `anchor chain down` (its state is saved)"
    else:
        first = f"local chain stopped (`anchor chain up` starts it on {data['rpc_url']})"
        kept = "its state is kept and reloaded by the next `anchor chain up`"
        then = kept if has_state else "no state yet: `anchor chain up` (or a stamp) starts a new chain here"
    where = f"data dir: {settings.data_dir} (chosen by {settings.data_dir_source}; `anchor info` says more)"
    state = f"state: {data['state_file']}" + ("" if has_state else " (none)")
    emit(ctx, json_flag, {"chain": data}, [first, where, state, then])


@app.command()
@json_option
@click.pass_context
def up(ctx: click.Context, json: bool) -> None:
    """Start the local chain (reloading its saved state) unless it is running."""
    _show(ctx, json, _chain(ctx).up())


@app.command()
@json_option
@click.pass_context
def down(ctx: click.Context, json: bool) -> None:
    """Stop the local chain; its state is saved to the data directory."""
    _show(ctx, json, _chain(ctx).down())


@app.command()
@json_option
@click.pass_context
def status(ctx: click.Context, json: bool) -> None:
    """Show whether the local chain runs, where, and at which block."""
    _show(ctx, json, _chain(ctx).status())


@app.command()
@json_option
@click.pass_context
def balance(ctx: click.Context, json: bool) -> None:
    """The signing key's address and balance on the configured chain, and roughly how many stamps it
    pays for at the node's fees now (before the first stamp: was the faucet's ETH received?)."""
    from anchor.chain.keys import load_signer
    from anchor.chain.open import open_chain
    from anchor.chain.presets import chain_name
    from anchor.chain.transactions import balance_of, ether, fee_quote

    settings = ctx.find_root().obj["settings"]
    handle = open_chain(settings)
    signer = load_signer(handle.chain_id, settings.keystore, settings.env)
    held = balance_of(handle.rpc, signer.address)
    max_fee, _ = fee_quote(handle.rpc)
    stamp_gas = 50_000  # one batch root with its margin (docs/quickstart-base-sepolia.md, step 2)
    stamps = held // max(1, stamp_gas * max_fee)
    emit(
        ctx,
        json,
        {
            "address": signer.address,
            "chain_id": handle.chain_id,
            "balance_wei": held,
            "max_fee_wei": max_fee,
            "stamps": stamps,
        },
        [
            f"{signer.address} holds {ether(held)} on {chain_name(handle.chain_id)}",
            f"  at the node's fees now (max {max_fee} wei a gas unit) that pays for about {stamps} stamps"
            + ("" if held else "; fund it from a faucet before `anchor deploy` or `anchor stamp`"),
        ],
    )
