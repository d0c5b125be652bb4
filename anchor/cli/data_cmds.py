"""`anchor hash|anchor|verify|lookup`: the data commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from anchor.cli.output import JsonFlag, emit

PathArg = Annotated[Path, typer.Argument(help="A file or a directory.")]
ProofOpt = Annotated[
    Optional[Path],  # noqa: UP045
    typer.Option("--proof", help="Proof file (default: <PATH>.anchor.json beside PATH)."),
]


def register(app: typer.Typer) -> None:
    app.command("hash")(hash_)
    app.command("anchor")(anchor_)
    app.command()(verify)
    app.command()(lookup)


def _settings(ctx: typer.Context):  # type: ignore[no-untyped-def]
    return ctx.find_root().obj["settings"]


def hash_(ctx: typer.Context, path: PathArg, json: JsonFlag = False) -> None:
    """Print the deterministic BLAKE3 manifest digest of PATH (no chain needed)."""
    from anchor.manifest.filetree import hash_tree

    manifest = hash_tree(path)
    total = sum(entry.size for entry in manifest.files)
    emit(
        ctx,
        json,
        {"manifest_digest": "0x" + manifest.digest.hex(), "manifest": manifest.to_json()},
        [f"0x{manifest.digest.hex()}  {path}  ({len(manifest.files)} files, {total} bytes)"],
    )


def anchor_(ctx: typer.Context, path: PathArg, proof: ProofOpt = None, json: JsonFlag = False) -> None:
    """Anchor PATH on chain (once: the same bytes are never anchored twice) and write its proof file."""
    from anchor.anchoring import anchor_path

    outcome = anchor_path(path, _settings(ctx), proof)
    a = outcome.proof.anchor
    state = "already anchored" if outcome.already_anchored else f"anchored (gas {outcome.gas_used})"
    emit(
        ctx,
        json,
        {
            "status": "already_anchored" if outcome.already_anchored else "anchored",
            "gas_used": outcome.gas_used,
            "proof_file": str(outcome.proof_path),
            "proof": outcome.proof.model_dump(mode="json", exclude={"manifest"}),
        },
        [
            f"{path}: {state}",
            f"  manifest {outcome.proof.manifest_digest} ({len(outcome.manifest.files)} files)",
            f"  root     {outcome.proof.batch.root}",
            f"  chain {a.chain_id}, registry {a.registry}, block {a.block_number}",
            f"  tx       {a.tx_hash}",
            f"  proof    {outcome.proof_path}",
            f"  look it up: anchor lookup {outcome.proof.manifest_digest}",
        ],
    )


def verify(ctx: typer.Context, path: PathArg, proof: ProofOpt = None, json: JsonFlag = False) -> None:
    """Verify PATH against its proof file and a live read of the chain (read-only)."""
    from anchor.anchoring import default_proof_path
    from anchor.verify.verifier import verify_path

    result = verify_path(path, proof or default_proof_path(path), _settings(ctx))
    emit(
        ctx,
        json,
        result.to_json(),
        [
            f"OK: {path} ({result.files} files) is anchored",
            f"  manifest {result.manifest_digest}",
            f"  root {result.root} anchored in block {result.anchored_block} (tx {result.tx_hash})",
            f"  chain {result.chain_id}, registry {result.registry}, read at block {result.read_at_block}",
        ],
    )


def lookup(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="A path, manifest digest, batch root or git commit.")],
    json: JsonFlag = False,
) -> None:
    """Print the on-chain record for KEY and where to see it on a block explorer."""
    from anchor.lookup import lookup as find

    found = find(key, _settings(ctx))
    lines = [f"{found['kind']}:"]
    for name, value in found.items():
        if name in ("kind", "links"):
            continue
        if isinstance(value, dict):
            lines += [f"  {k}: {v}" for k, v in value.items()]
        else:
            lines.append(f"  {name}: {value}")
    lines += [f"  explorer {k}: {v}" for k, v in found["links"].items()] or ["  explorer: none for this chain"]
    emit(ctx, json, found, lines)
