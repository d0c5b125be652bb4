"""`anchor chain up|down|status`: the embedded local anvil."""

from __future__ import annotations

import typer

from anchor.cli.options import JsonFlag
from anchor.cli.output import emit

app = typer.Typer(help="Start, stop or inspect the embedded local chain.", no_args_is_help=True)


def _chain(ctx: typer.Context):  # type: ignore[no-untyped-def]
    from anchor.chain.node import LocalChain

    settings = ctx.find_root().obj["settings"]
    return LocalChain(settings.data_dir, settings.local_port)


def _show(ctx: typer.Context, json_flag: bool, status: object) -> None:
    data = status.to_json()  # type: ignore[attr-defined]
    if data["running"]:
        block = f", block {data['block_number']}" if data["block_number"] is not None else ""
        first = f"local chain running at {data['rpc_url']}{block}"
        then = "stop it with `anchor chain down` (its state is saved)"
    else:
        first = f"local chain stopped (`anchor chain up` starts it on {data['rpc_url']})"
        then = "its state is kept and reloaded by the next `anchor chain up`"
    emit(ctx, json_flag, {"chain": data}, [first, f"state: {data['state_file']}", then])


@app.command()
def up(ctx: typer.Context, json: JsonFlag = False) -> None:
    """Start the local chain (reloading its saved state) unless it is running."""
    _show(ctx, json, _chain(ctx).up())


@app.command()
def down(ctx: typer.Context, json: JsonFlag = False) -> None:
    """Stop the local chain; its state is saved to the data directory."""
    _show(ctx, json, _chain(ctx).down())


@app.command()
def status(ctx: typer.Context, json: JsonFlag = False) -> None:
    """Show whether the local chain runs, where, and at which block."""
    _show(ctx, json, _chain(ctx).status())
