"""`anchor seal`: write into a proof what lets it be verified with no network (anchor.sealing)."""

from __future__ import annotations

import shlex
from pathlib import Path

import click

from anchor.cli.commands import command
from anchor.cli.options import PATH, json_option
from anchor.cli.output import emit


@command("seal")
@click.argument("paths", type=PATH, nargs=-1, required=True, metavar="PATH", help="Stamped paths or their proof files.")
@click.option(
    "--refresh",
    "refresh",
    is_flag=True,
    help="For anchors sealed before: carry the registry's record as of the latest block (was it retracted since?).",
)
@json_option
@click.pass_context
def seal(ctx: click.Context, paths: list[Path], refresh: bool, json: bool) -> None:
    """Seal proofs: add each anchor's block header, receipt and receipt-trie proof, and the registry's record
    as of the latest block (its storage proof), so that `verify --offline --trusted-block N:HASH` checks
    them with no network, for as long as the file exists, and says whether the record was retracted by
    then. `--refresh` moves that record on to the latest block."""
    from anchor.chain.presets import chain_name
    from anchor.cli.config_cmds import settings_near
    from anchor.proof.locate import timing_proof_path
    from anchor.sealing.make import seal as seal_proof

    settings = settings_near(ctx, paths[0])  # the data dir a verify of the path reads, as for stamp
    done = []
    typed: dict[int, Path] = {}  # each outcome's path as the user gave it, for the verify line
    for path in paths:
        outcome = seal_proof(settings, path, refresh)
        typed[id(outcome)] = path
        done.append(outcome)
        timing = timing_proof_path(outcome.proof)
        if timing.is_file():  # a result bundle's timing record: its milestones are checked offline too
            done.append(seal_proof(settings, timing, refresh))
    lines = []
    for outcome in done:
        said = f"{outcome.proof}: sealed {outcome.sealed} anchor{'s' if outcome.sealed != 1 else ''}"
        lines.append(
            said
            + (
                f" ({outcome.already} sealed before"
                + (f", {outcome.refreshed} refreshed" if outcome.refreshed else "")
                + ")"
                if outcome.already
                else ""
            )
        )
        lines += [
            f"  trust block {n} of {chain_name(c)}: {h} (check it once on any explorer or node)"
            for c, n, h in outcome.blocks
        ]
        if outcome.stateless:
            lines.append(
                f"  note: the node has no eth_getProof, so {outcome.stateless} anchor(s) carry no"
                " record as of a later block: offline cannot say whether it was retracted since"
            )
        first = [b for b in outcome.blocks if b[0] == outcome.blocks[0][0]][:2] if outcome.blocks else []
        trusted = " ".join(f"--trusted-block {n}:{h}" for _, n, h in first)
        target = typed.get(id(outcome))
        named = shlex.quote(str(target)) if target is not None else "PATH"  # a timing record's: its bundle's verify
        lines += [f"  then: anchor verify {named} --offline {trusted}"] if first else []
    emit(
        ctx,
        json,
        {
            "sealed": [
                {
                    "proof": str(o.proof),
                    "sealed": o.sealed,
                    "already": o.already,
                    "refreshed": o.refreshed,
                    "stateless": o.stateless,
                    "blocks": [{"chain_id": c, "block": n, "hash": h} for c, n, h in o.blocks],
                }
                for o in done
            ]
        },
        lines,
    )
