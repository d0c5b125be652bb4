"""`anchor journal submit|flush|status|retry|abandon`: the journal, for anchoring many manifests in
few transactions. The top-level `anchor submit|flush|status` are the old spellings, kept as aliases
for one release."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from anchor.cli.commands import AnchorCommand, AnchorGroup
from anchor.cli.hashing import rules_for
from anchor.cli.options import PATH, exclude_option, json_option, no_defaults_option, service_option, symlinks_option
from anchor.cli.output import count, emit, hash_progress

journal_app = AnchorGroup(
    "journal",
    help="The journal: submit many results, flush them in few transactions, see what is where; retry or"
    " abandon an effect the registry refused.",
)


def _settings(ctx: click.Context):  # type: ignore[no-untyped-def]
    return ctx.find_root().obj["settings"]


@journal_app.command("submit")
@click.argument("paths", type=PATH, nargs=-1, required=True, help="Files or directories to journal for anchoring.")
@click.option("--idempotency-key", "idempotency_key", help="Reusing a key with other content is refused.")
@exclude_option
@no_defaults_option
@symlinks_option
@service_option
@json_option
@click.pass_context
def submit(
    ctx: click.Context,
    paths: list[Path],
    idempotency_key: str | None,
    exclude: list[str] | None,
    no_default_excludes: bool,
    symlinks: str,
    service: list[str] | None,
    json: bool,
) -> None:
    """Journal PATHS for the next batch; nothing is sent until `anchor journal flush`. With --service,
    they go to the service's journal instead (pending proofs at once; `anchor upgrade` later)."""
    from anchor.anchoring.stamper import Stamper
    from anchor.manifest.filetree import FileTreeManifest, hash_tree

    # services (--service, else ANCHOR_SERVICE_URLS) or the journal here: the Stamper's one decision
    def hashed(path: Path) -> FileTreeManifest:
        with hash_progress(ctx, json) as progress:
            return hash_tree(path, rules_for(path, exclude, no_default_excludes), symlinks, progress)

    with Stamper.from_settings(_settings(ctx), service) as stamper:
        rows = [q.to_json() for q in stamper._queue(paths, hashed, idempotency_key)]
    emit(
        ctx,
        json,
        {"submitted": rows},
        [
            f"{r['manifest_digest']}  {r['path']}  "
            + (
                f"pending at {', '.join(r['services'])}"
                if "services" in r
                else f"{'duplicate, ' if r['duplicate'] else ''}{r['state']}"
            )
            for r in rows
        ],
    )


@journal_app.command("flush")
@click.option(
    "--batch-size", "batch_size", type=click.IntRange(min=1, max=65536), default=256, help="Items per batch root."
)
@json_option
@click.pass_context
def flush(ctx: click.Context, batch_size: int, json: bool) -> None:
    """Batch every pending item, anchor the batches, and wait for their confirmation."""
    import sys

    from anchor.anchoring.service import AnchorService
    from anchor.cli.output import wants_json

    service = AnchorService.open(_settings(ctx))
    try:
        if wants_json(ctx, json) or not sys.stderr.isatty():  # a bar only where someone watches (it left a blank line)
            report = service.flush(batch_size)
        else:
            from rich.console import Console
            from rich.progress import Progress

            with Progress(transient=True, console=Console(stderr=True)) as bar:
                task = bar.add_task("anchoring batches", total=None)
                report = service.flush(
                    batch_size, progress=lambda done, total: bar.update(task, completed=done, total=total)
                )
        state = service.status()
    finally:
        service.close()
    emit(
        ctx,
        json,
        {
            "confirmed_effects": len(report.confirmed),
            "reanchored": len(report.reanchored),
            "fee_bumps": report.fee_bumps,
            "chain_reset": report.chain_reset,
            **state.to_json(),
        },
        [
            f"confirmed {count(len(report.confirmed), 'transaction')}"
            + (f", re-anchored {len(report.reanchored)}" if report.reanchored else "")
            + (f", {report.fee_bumps} fee bumps" if report.fee_bumps else ""),
            _items_line(state.items),
            *_proof_error_lines(state.proof_errors),
        ],
    )


def _items_line(items: dict[str, int]) -> str:
    return f"  items:   pending {items['pending']}, in flight {items['batched']}, confirmed {items['confirmed']}"


def _proof_error_lines(errors: Sequence[Mapping[str, object]]) -> list[str]:
    """Anchored items whose proof file could not be written: on chain all the same, but say so."""
    if not errors:
        return []
    return [f"  proof files not written: {len(errors)} (anchored on chain all the same)"] + [
        f"    item #{e['item']} {str(e['manifest_digest'])[:18]}…: {e['error']}" for e in errors[:20]
    ]


@journal_app.command("status")
@json_option
@click.pass_context
def status(ctx: click.Context, json: bool) -> None:
    """What is pending, in flight and confirmed, with the latest transactions (read-only: no key, no network)."""
    from anchor.journal.backends import open_journal
    from anchor.journal.status import journal_status

    settings = _settings(ctx)
    if not settings.journal_url and not settings.data_dir.is_dir():  # a read makes no data dir
        said = (
            f"no journal yet in data dir {settings.data_dir} (chosen by {settings.data_dir_source}): nothing"
            " was stamped from it; `anchor info` says which data dir a command run here uses"
        )
        zero = {"pending": 0, "batched": 0, "confirmed": 0}
        emit(ctx, json, {"journal": None, "data_dir": str(settings.data_dir), "items": zero}, [said])
        return
    was = _mode(settings.data_dir)
    journal = open_journal(settings.data_dir, settings.journal_url)
    try:
        state = journal_status(journal, _journal_chain(settings, journal))
    finally:
        journal.close()
    lines = [
        f"chain {state.chain_id}" if state.chain_id else "chain: none yet (the journal holds nothing)",
        _items_line(state.items),
        f"  effects: {', '.join(f'{k} {v}' for k, v in state.effects.items())}",
    ]
    lines += [
        f"  #{r['id']} {r['kind']} {r['key'][:18]}… {r['state']} tx {r['tx_hash'] or '-'} block {r['block_number']}"
        for r in state.recent
    ]
    lines += _proof_error_lines(state.proof_errors)
    lines += _failed_lines(state.failed)
    exposed = _exposed(settings.data_dir, was)
    if exposed:
        lines.append(f"  warning: {exposed}")
    emit(ctx, json, {**state.to_json(), "data_dir_warning": exposed}, lines)


def _mode(path: Path) -> int | None:
    import stat

    try:
        return stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return None


def _exposed(data_dir: Path, was: int | None) -> str | None:
    """A data dir others could read or enter (made before data dirs were created 0700, or opened up
    since): its journal, proofs and file names were every local user's to see. Opening the journal
    makes it 0700 again; this says that it was not, and since when nothing says."""
    now = _mode(data_dir)
    if was is None or not was & 0o077:
        return None
    if now is not None and not now & 0o077:
        return f"the data dir {data_dir} was {was:o} (other local users could list and read into it); it is 700 now"
    return f"the data dir {data_dir} is {was:o}: other local users can list and read into it (chmod 700 {data_dir})"


def _failed_lines(failed: Sequence[Mapping[str, object]]) -> list[str]:
    """Effects the registry refused: each with its reason and what to do about it."""
    open_ = [f for f in failed if not f["abandoned"]]
    if not open_:
        return []
    return (
        [f"  failed: {count(len(open_), 'effect')} (other items keep anchoring)"]
        + [
            f"    #{f['id']} {f['kind']} {str(f.get('commit') or f['key'])[:18]}…"
            + (f" signed by {f['sender']}" if f.get("sender") else "")
            + f": {f['reason']}"
            for f in open_[:20]
        ]
        + ["    then: anchor journal retry ID (after fixing the cause) or anchor journal abandon ID"]
    )


effect_id_option = click.argument(
    "effect_id", type=click.IntRange(min=1), help="The effect's id, as `anchor journal status` lists it."
)


@journal_app.command("retry")
@effect_id_option
@json_option
@click.pass_context
def retry(ctx: click.Context, effect_id: int, json: bool) -> None:
    """Resume a failed effect with the next flush; the chain is checked again first, so nothing is sent twice."""
    from anchor.journal.status import retry_effect

    _on_journal(ctx, retry_effect, effect_id)
    emit(
        ctx, json, {"effect": effect_id, "state": "intent"}, [f"effect #{effect_id} will be retried by the next flush"]
    )


@journal_app.command("abandon")
@effect_id_option
@json_option
@click.pass_context
def abandon(ctx: click.Context, effect_id: int, json: bool) -> None:
    """Close a failed effect for good (kept in the journal, never sent)."""
    from anchor.journal.status import abandon_effect

    _on_journal(ctx, abandon_effect, effect_id)
    emit(
        ctx, json, {"effect": effect_id, "state": "abandoned"}, [f"effect #{effect_id} abandoned (kept in the journal)"]
    )


def _on_journal(ctx: click.Context, action, effect_id: int) -> None:  # type: ignore[no-untyped-def]
    """Run `action(journal, chain_id, effect_id)`: the journal alone, no signing key, no network."""
    from anchor.journal.backends import open_journal

    settings = _settings(ctx)
    journal = open_journal(settings.data_dir, settings.journal_url)
    try:
        action(journal, _journal_chain(settings, journal), effect_id)
    finally:
        journal.close()


def _journal_chain(settings: Any, journal: Any) -> int:
    """Which chain's rows a read of the journal shows, without the network when it can be told: the local
    chain's id on the embedded chain; with an RPC URL, the one chain the journal holds (none yet: nothing to
    show of any). Only a journal holding several chains asks the endpoint which one it serves."""
    from anchor.chain.node import LOCAL_CHAIN_ID
    from anchor.journal.status import journal_chains

    if not settings.rpc_url:
        return LOCAL_CHAIN_ID
    held = journal_chains(journal)
    if len(held) <= 1:
        return held[0] if held else 0
    from anchor.chain.open import open_chain

    return open_chain(settings).chain_id


def _old_spelling(command: click.Command) -> AnchorCommand:
    """`anchor submit|flush|status`: the journal's commands at the top, as earlier releases had them."""
    name = command.name
    return AnchorCommand(
        name,
        params=command.params,
        callback=command.callback,
        help=f"Old spelling of `anchor journal {name}` (kept for one release).",
        hidden=True,
        deprecated=f"It is now `anchor journal {name}`; this spelling works until the next release.",
    )


old_submit, old_flush, old_status = (_old_spelling(c) for c in (submit, flush, status))
