"""`anchor seal`: write into a proof what lets it be verified with no network (anchor.sealing)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from anchor.cli.options import JsonFlag
from anchor.cli.output import emit


def register(app: typer.Typer) -> None:
    app.command()(seal)


def seal(
    ctx: typer.Context,
    paths: Annotated[list[Path], typer.Argument(help="Stamped paths or their proof files.", metavar="PATH")],
    json: JsonFlag = False,
) -> None:
    """Seal proofs: add each anchor's block header, receipt and receipt-trie proof, so that `verify
    --offline --trusted-block N:HASH` checks them with no network, for as long as the file exists."""
    from anchor.chain.presets import chain_name
    from anchor.proof.locate import timing_proof_path
    from anchor.sealing.make import seal as seal_proof

    settings = ctx.find_root().obj["settings"]
    done = []
    for path in paths:
        outcome = seal_proof(settings, path)
        done.append(outcome)
        timing = timing_proof_path(outcome.proof)
        if timing.is_file():  # a result bundle's timing record: its milestones are checked offline too
            done.append(seal_proof(settings, timing))
    lines = []
    for outcome in done:
        said = f"{outcome.proof}: sealed {outcome.sealed} anchor{'s' if outcome.sealed != 1 else ''}"
        lines.append(said + (f" ({outcome.already} sealed before)" if outcome.already else ""))
        lines += [f"  trust block {n} of {chain_name(c)}: {h} (check it once on any explorer or node)"
                  for c, n, h in outcome.blocks]  # fmt: skip
        lines += [f"  then: anchor verify PATH --offline --trusted-block {n}:{h}" for _, n, h in outcome.blocks[:1]]
    emit(ctx, json, {"sealed": [{"proof": str(o.proof), "sealed": o.sealed, "already": o.already,
                                 "blocks": [{"chain_id": c, "block": n, "hash": h} for c, n, h in o.blocks]}
                                for o in done]}, lines)  # fmt: skip
