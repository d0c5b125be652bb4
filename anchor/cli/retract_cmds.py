"""`anchor retract`: withdraw what was anchored, on chain, without deleting it (anchor.anchoring.retraction)."""

from __future__ import annotations

import click

from anchor.cli.commands import command
from anchor.cli.options import json_option
from anchor.cli.output import emit


@command("retract")
@click.argument("target", help="A stamped path or its proof file (its root), or a full research commit.")
@click.option(
    "--reason", "reason", default="", help="Why, in words: its keccak256 goes on chain, the text into the proof."
)
@click.option(
    "--whole-batch", "whole_batch", is_flag=True, help="Retract the root even if other results of its batch share it."
)
@json_option
@click.pass_context
def retract(ctx: click.Context, target: str, reason: str, whole_batch: bool, json: bool) -> None:
    """Retract a record you anchored: `verify` then says retracted (exit 16), naming when, by whom and why."""
    from anchor.anchoring.retraction import retract as retract_record
    from anchor.chain.presets import chain_name

    settings = ctx.find_root().obj["settings"]
    done = retract_record(settings, target, reason, whole_batch)
    what = f"root {done.key}" if done.kind == "root" else f"lineage record of commit {done.key}"
    emit(
        ctx,
        json,
        done.to_json(),
        [
            f"retracted {what} on {chain_name(done.chain_id)}, registry {done.registry}",
            f"  by {done.by} in tx {done.tx_hash} (block {done.block_number}, {done.gas_used} gas)",
            f'  reason digest {done.reason_digest} (keccak256 of the text: cast keccak "TEXT")',
            *([f"  reason kept in {done.proof}"] if done.proof is not None else []),
        ],
    )
