"""`anchor hash|anchor|verify|lookup`: the data commands."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from anchor.cli.commands import AnchorCommand, command
from anchor.cli.hashing import print_hash, rules_for
from anchor.cli.options import (
    PATH,
    exclude_option,
    insecure_token_option,
    json_option,
    no_defaults_option,
    policy_options,
    quorum_option,
    registry_option,
    service_option,
    symlinks_option,
)
from anchor.cli.output import count, emit, error_json, hash_progress, option, wants_json

if TYPE_CHECKING:
    from collections.abc import Iterable

    from anchor.errors import AnchorError
    from anchor.library.verifier import Verification

path_argument = click.argument("path", type=PATH, help="A file or a directory.")
out_option = click.option(
    "--out",
    "-o",
    "--proof",
    "proof",
    type=PATH,
    help="Where to write the proof (default: <PATH>.anchor.json beside PATH; a file there that is no proof"
    " is never replaced). --proof is the old spelling of this output, kept for one release: --proof names"
    " an input everywhere else.",
)
proof_option = click.option("--proof", "proof", type=PATH, help="Proof file (default: <PATH>.anchor.json beside PATH).")


rehash_option = click.option(
    "--rehash", "rehash", is_flag=True, help="Read every file again, ignoring the stat cache of the last stamp."
)
seal_option = click.option(
    "--seal", "seal", is_flag=True, help="Also seal the proof: verifiable offline (`verify --offline`), forever."
)


def _settings(ctx: click.Context):  # type: ignore[no-untyped-def]
    return ctx.find_root().obj["settings"]


@command("hash", reads=True)
@path_argument
@exclude_option
@no_defaults_option
@symlinks_option
@json_option
@click.pass_context
def hash_(
    ctx: click.Context, path: Path, exclude: list[str] | None, no_default_excludes: bool, symlinks: str, json: bool
) -> None:
    """Print the deterministic BLAKE3 manifest digest of PATH (no chain needed)."""
    print_hash(path, rules_for(path, exclude, no_default_excludes), symlinks, wants_json(ctx, json))


@command("stamp")
@path_argument
@out_option
@exclude_option
@no_defaults_option
@symlinks_option
@service_option
@insecure_token_option
@seal_option
@rehash_option
@json_option
@click.pass_context
def stamp(
    ctx: click.Context,
    path: Path,
    proof: Path | None,
    exclude: list[str] | None,
    no_default_excludes: bool,
    symlinks: str,
    service: list[str] | None,
    allow_insecure_token: bool,
    seal: bool,
    rehash: bool,
    json: bool,
) -> None:
    """Anchor PATH on chain (once: the same bytes are never anchored twice) and write its proof file.
    With --service (or ANCHOR_SERVICE_URLS), no key is needed here: the services anchor it (docs/calendar.md).
    With --seal, the proof is also sealed for offline verification (a pending one when it is upgraded).
    Files unchanged since the last stamp of PATH (same size, mtime, ctime, inode) are not read again;
    --rehash reads them all. `anchor verify` always reads every byte."""
    from anchor.anchoring.stamper import Stamper
    from anchor.cli.config_cmds import settings_near

    rules = rules_for(path, exclude, no_default_excludes)
    # the data dir a verify of PATH will read (the nearest .anchor/ above PATH first, as `anchor info PATH`
    # says): from another directory a stamp once anchored on another chain than verify then read
    settings = settings_near(ctx, path)
    # a bad URL or token is refused before anything is hashed
    stamper = Stamper.from_settings(settings, service, allow_insecure_token=allow_insecure_token)
    with hash_progress(ctx, json) as progress:
        stamped = stamper._stamp(path, out=proof, rules=rules, symlinks=symlinks, progress=progress, rehash=rehash)
    if seal and stamped.anchored:
        _seal_quietly(ctx, stamped.proof_path)
    _report_stamped(ctx, json, str(path), stamped)


anchor_alias = AnchorCommand(
    "anchor", params=stamp.params, callback=stamp.callback, help="Same as `anchor stamp` (the original name, kept)."
)


def _seal_quietly(ctx: click.Context, proof_path: Path) -> None:
    """`--seal` of stamp and upgrade: the proof sealed in place, the blocks to trust said on stderr."""
    from anchor.sealing.make import seal as seal_proof

    done = seal_proof(_settings(ctx), proof_path)
    for _, number, block_hash in done.blocks:
        click.echo(
            f"sealed {proof_path}: trust block {number} = {block_hash} (anchor verify PATH --offline"
            f" --trusted-block {number}:{block_hash})",
            err=True,
        )


@command("bundle")
@click.argument("spec", type=PATH, help="Bundle spec (TOML): mission, data snapshot, image, policy, output.")
@click.option("--anchor", "anchor", is_flag=True, help="Also anchor the bundle manifest on chain.")
@out_option
@service_option
@json_option
@click.pass_context
def bundle(
    ctx: click.Context, spec: Path, anchor: bool, proof: Path | None, service: list[str] | None, json: bool
) -> None:
    """Build a result-bundle manifest from SPEC (every digest computed here) and optionally anchor it."""
    from anchor.anchoring.proofs import store_finder
    from anchor.manifest.bundle import load_bundle_spec
    from anchor.proof.locate import default_proof_path
    from anchor.readback.checklist import check_resume_pin

    manifest, tree, output_dir = load_bundle_spec(spec)
    output_dir = _as_stamp_says(output_dir)
    # a pin the dispatcher would refuse is refused here too; its anchor is read live when anchoring
    check_resume_pin(manifest.identity(), _settings(ctx), live=anchor, find=store_finder(_settings(ctx)))
    if service and not anchor:
        from anchor.errors import BadInput

        raise BadInput(
            "--service anchors: give --anchor with it (hint: anchor bundle SPEC --anchor --service URL)",
            detail={"field": "services"},
        )
    if anchor:
        from anchor.anchoring.stamper import Stamper

        stamper = Stamper.from_settings(_settings(ctx), service)
        stamped = stamper._stamp_bundle(manifest, tree, proof or default_proof_path(output_dir), output=output_dir)
        _report_stamped(ctx, json, str(output_dir), stamped)
        return
    emit(
        ctx,
        json,
        {"manifest_digest": "0x" + manifest.digest.hex(), "manifest": manifest.identity(), **manifest.annotations()},
        [f"0x{manifest.digest.hex()}  bundle {spec} (output {output_dir}, {count(len(tree.files), 'file')})"],
    )


def _as_stamp_says(path: Path) -> Path:
    """A path the spec resolved, said as `stamp` says a path: relative to the working directory when it
    lies below it, in full otherwise (`bundle --anchor` printed absolute paths where `stamp` prints
    what was typed)."""
    import os

    shown = os.path.relpath(path)
    return path if shown.startswith("..") else Path(shown)


@command("prove")
@click.argument("file", type=PATH, help="One file inside an anchored directory.")
@click.option("--in", "bundle_dir", type=PATH, required=True, help="The anchored directory FILE belongs to.")
@proof_option
@click.option(
    "--out",
    "-o",
    "out",
    type=PATH,
    help="Where to write the file proof (default: <DIR>.proofs/<FILE in DIR>.anchor.json).",
)
@json_option
@click.pass_context
def prove(ctx: click.Context, file: Path, bundle_dir: Path, proof: Path | None, out: Path | None, json: bool) -> None:
    """Write a self-contained proof for one FILE, checkable without the rest of the directory."""
    from anchor.anchoring.prove import write_file_proof

    made, target = write_file_proof(file, bundle_dir, proof, out)
    assert made.file is not None
    emit(
        ctx,
        json,
        {"proof_file": str(target), "file": made.file.model_dump(), "manifest_digest": made.manifest_digest},
        [
            f"{file}: proof written to {target}",
            f"  {made.file.path} is leaf {made.file.index} of {made.file.tree_size}"
            f" ({len(made.file.audit_path)} sibling hashes)",
            f"  manifest {made.manifest_digest}, root {made.batch.root}",
        ],
    )


def _report_stamped(ctx: click.Context, json: bool, shown: str, stamped: Any) -> None:
    """What a stamp did: anchored with the key here, or pending at services."""
    if stamped.anchored:
        _report_anchor(ctx, json, shown, stamped)
    else:
        _report_pending(ctx, json, shown, stamped)


def _report_pending(ctx: click.Context, json: bool, path: str, outcome: Any) -> None:
    """What a stamp through services did: each receipt, each service that did not take it."""
    from datetime import UTC, datetime

    from anchor.cli.verdict import without

    proof_out = outcome.proof_path
    emit(
        ctx,
        json,
        {
            "status": "pending",
            "proof_file": str(proof_out),
            "manifest_digest": outcome.digest,
            "receipts": [r.model_dump(mode="json") for r in outcome.receipts],
            "not_taken": outcome.not_taken,
        },
        [
            f"{path}: pending ({count(len(outcome.receipts), 'service')} took it; not anchored yet)",
            f"  manifest {outcome.digest} ({count(outcome.file_count, 'file')})",
            *[
                f"  pending  at {r.url} since"
                f" {datetime.fromtimestamp(r.accepted_at, UTC).isoformat(timespec='seconds')},"
                f" receipt signed by {r.signer} (chain {r.chain_id})"
                for r in outcome.receipts
            ],
            *[
                f"  skipped  {url}: {without(url, why)} (submitted again by `anchor upgrade --service {url}`)"
                for url, why in outcome.not_taken.items()
            ],
            f"  proof    {proof_out} (pending)",
            f"  complete it after the service's next batch: anchor upgrade {proof_out}",
        ],
    )


@command("upgrade")
@click.argument(
    "paths",
    type=PATH,
    nargs=-1,
    required=True,
    metavar="PATH|PROOF",
    help="Proof files, or the stamped paths (their PATH.anchor.json).",
)
@click.option(
    "--service",
    "service",
    multiple=True,
    help="Submit again to this service (repeatable; else ANCHOR_SERVICE_URLS) if the"
    " proof lists it as down at stamp time. Token: ANCHOR_SERVICE_TOKEN.",
)
@insecure_token_option
@seal_option
@json_option
@click.pass_context
def upgrade(
    ctx: click.Context, paths: list[Path], service: list[str] | None, allow_insecure_token: bool, seal: bool, json: bool
) -> None:
    """Complete pending proofs: fetch each service's anchor, check it against the chain, write it in;
    with --seal, seal each anchor of the chain read (for `verify --offline`).

    The file is rewritten atomically and only when an anchor was added (nothing else in it changes);
    services that were down at stamp time are submitted to again. Exit 14 while any is still pending."""
    from anchor.anchoring.stamper import Stamper
    from anchor.cli.verdict import without
    from anchor.errors import AnchorError, ExitCode

    # the configured services (--service, else ANCHOR_SERVICE_URLS) are the only ones a token goes to
    stamper = Stamper.from_settings(_settings(ctx), service, allow_insecure_token=allow_insecure_token)
    rows: list[dict[str, Any]] = []
    lines: list[str] = []
    worst = 0
    for given in paths:
        try:
            done = stamper.upgrade(given)
        except AnchorError as exc:
            if len(paths) == 1:  # one path: its error, as every command says one
                raise
            worst = max(worst, int(exc.exit_code))
            rows.append({"path": str(given), "error": error_json(exc)})
            lines.append(f"{exc.code.upper()}  {given}: {exc.said_as(option).removeprefix(f'{given}: ')}")
            continue
        proof_path = done.proof_path
        if not done.complete:
            worst = max(worst, int(ExitCode.PENDING))
        elif seal:
            _seal_quietly(ctx, proof_path)
        rows.append(
            {
                "path": str(given),
                "proof": str(proof_path),
                "complete": done.complete,
                "added": [a.service for a in done.added],
                "pending": list(done.still_pending),
                "not_reached": done.failed,
                "not_contacted": list(done.not_contacted),
            }
        )
        state = "complete" if done.complete else "pending"
        lines.append(f"{state.upper()}  {proof_path}" + (" (unchanged)" if not done.added else ""))
        lines += [
            f"  added    anchor from {a.service}: chain {a.anchor.chain_id}, block {a.anchor.block_number}"
            for a in done.added
        ]
        lines += [f"  pending  {url}: not in a mined batch yet" for url in done.still_pending]
        said = {url: error.said_as(option) for url, error in done.errors.items()}
        lines += [f"  skipped  {url}: {without(url, said.get(url, why))}" for url, why in done.failed.items()]
        lines += [
            f"  not contacted  {url}: named by the file as down at stamp time, and not configured now (no"
            " token goes to a URL only the file names; pass --service URL to submit to it)"
            for url in done.not_contacted
        ]
    emit(ctx, json, {"results": rows}, lines)
    if worst:
        ctx.exit(worst)


def _report_anchor(ctx: click.Context, json: bool, shown: str, outcome: Any) -> None:
    a = outcome.proof.anchor
    state = (
        f"already anchored, in block {outcome.proof.anchor.block_number} by an earlier run (a journal retry,"
        " flush or stamp of the same bytes): nothing was sent now"
        if outcome.already_anchored
        else f"anchored (gas {outcome.gas_used})"
    )
    emit(
        ctx,
        json,
        {
            "status": "already_anchored" if outcome.already_anchored else "anchored",
            "gas_used": outcome.gas_used,
            "proof_file": str(outcome.proof_path),
            "proof": outcome.proof.model_dump(mode="json", exclude={"files"}, exclude_none=True),
            "superseded_proof": None if outcome.superseded is None else str(outcome.superseded),
            "refreshed_file_proofs": [str(p) for p in outcome.refreshed],
            "stale_file_proofs": [str(p) for p in outcome.stale],
        },
        [
            f"{shown}: {state}",
            f"  manifest {outcome.proof.manifest_digest} ({count(outcome.file_count, 'file')})",
            f"  root     {outcome.proof.batch.root}",
            f"  chain {a.chain_id}, registry {a.registry}, block {a.block_number}",
            f"  tx       {a.tx_hash}",
            f"  proof    {outcome.proof_path}",
            *_restamp_lines(outcome),
            f"  look it up: anchor lookup {outcome.proof.manifest_digest}",
        ],
    )


def _restamp_lines(outcome: Any) -> list[str]:
    """A re-stamp of changed bytes: where the earlier proof went, which per-file proofs followed."""
    if outcome.superseded is None:
        return []
    lines = [f"  previous proof (other bytes) kept as {outcome.superseded}"]
    if outcome.refreshed:
        lines.append(f"  {count(len(outcome.refreshed), 'per-file proof')} refreshed to this anchor")
    if outcome.stale:
        shown = ", ".join(str(p) for p in outcome.stale[:3]) + (" …" if len(outcome.stale) > 3 else "")
        lines.append(
            f"  kept, of files this anchor no longer holds: {shown}"
            " (each still verifies the earlier anchor, and says a later stamp superseded it)"
        )
    return lines


@command("verify", reads=True)
@click.argument(
    "paths", type=PATH, nargs=-1, metavar="PATH", help="Files or directories (several: one line each, then a summary)."
)
@click.option(
    "--from",
    "from_file",
    type=PATH,
    help="Also verify the paths listed in this file, one a line ('-': standard input).",
)
@proof_option
@registry_option
@quorum_option
@policy_options
@click.option("--spec", "spec", type=PATH, help="A bundle spec: re-hash its mission, snapshot and policy files too.")
@click.option(
    "--in",
    "subjects_in",
    type=PATH,
    help="With a .intoto.jsonl PATH: where its subjects are (default: beside it, its name).",
)
@click.option(
    "--offline", "offline", is_flag=True, help="No network: check the proof's sealed section against trusted blocks."
)
@click.option(
    "--trusted-block",
    "trusted_block",
    multiple=True,
    help="With --offline: N:HASH (or CHAIN:N:HASH), a block hash you trust.",
)
@click.option(
    "--trusted-blocks",
    "trusted_blocks",
    type=PATH,
    help="With --offline: a file of `chain_id N HASH` lines (a checkpoint list).",
)
@json_option
@click.pass_context
def verify(
    ctx: click.Context,
    paths: list[Path] | None,
    from_file: Path | None,
    proof: Path | None,
    registry: list[str] | None,
    quorum: int | None,
    require: str,
    expect_submitter: str | None,
    anchored_before: str | None,
    min_finality: str | None,
    spec: Path | None,
    subjects_in: Path | None,
    offline: bool,
    trusted_block: list[str] | None,
    trusted_blocks: Path | None,
    json: bool,
) -> None:
    """Verify PATH against its proof file and a live read of the chain (read-only), or, with --offline,
    against the proof's sealed section and a block hash you trust; PATH may also be the in-toto
    statements `anchor attest` wrote (NAME.intoto.jsonl). Several paths (or --from FILE) are verified in
    one process: one line each, a summary, and the highest exit code any of them got."""
    from anchor.cli.config_cmds import settings_near
    from anchor.cli.verdict import verdict_output
    from anchor.errors import BadInput
    from anchor.readback.checklist import required_count

    required_count(require, 1)  # a bad --require is exit 2 before any proof is read
    if paths:
        settings_near(ctx, paths[0])
    if trusted_block or trusted_blocks is not None or offline:
        _go_offline(ctx, offline, trusted_block or [], trusted_blocks)
    from anchor.library.verifier import Policy, Verifier

    verifier = Verifier(_settings(ctx), registries=registry or (), quorum=quorum)  # a bad --registry: exit 2 here
    policy = Policy(expect_submitter, anchored_before, min_finality)
    listed = [*(paths or []), *(_listed_paths(from_file) if from_file is not None else [])]
    if not listed:  # a usage error, as click says it for a missing argument
        raise click.UsageError("Missing argument 'PATH' (or --from FILE with one path a line).", ctx=ctx)
    if len(listed) > 1:
        if proof is not None or spec is not None or subjects_in is not None:
            raise BadInput(
                "--proof, --spec and --in name one subject: give one PATH with them", detail={"field": "path"}
            )
        _verify_many(ctx, json, verifier.verify_each(listed, policy=policy, require=require))
        return
    path = listed[0]
    result = verifier.verify(path, proof=proof, policy=policy, spec=spec, require=require, subjects_in=subjects_in)
    emit(ctx, json, *verdict_output(path, result))


def _go_offline(ctx: click.Context, offline: bool, given: list[str], listed: Path | None) -> None:
    """`--offline` with its trusted blocks, into the settings every step reads (anchor.sealing.check)."""
    from anchor.errors import BadInput
    from anchor.sealing.check import offline_settings

    if not offline:
        raise BadInput(
            "--trusted-block and --trusted-blocks go with --offline (hint: anchor verify PATH --offline"
            " --trusted-block N:HASH)",
            detail={"field": "offline"},
        )
    root = ctx.find_root().obj
    root["settings"] = offline_settings(root["settings"], given, listed)


def _listed_paths(source: Path) -> list[Path]:
    """The paths of a --from file (or standard input for '-'): one a line, blank lines and # comments
    skipped, nothing else interpreted (a name with spaces is one path)."""
    import sys

    from anchor.errors import BadInput, did_you_mean_path

    try:
        text = sys.stdin.read() if str(source) == "-" else source.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"--from {source}: no such file{did_you_mean_path(source)}", detail={"field": "from"}) from None
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else f"not UTF-8 text: {exc.reason} at byte {exc.start}"
        raise BadInput(f"--from {source}: cannot be read ({why})", detail={"field": "from"}) from None
    return [Path(line) for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _verify_many(ctx: click.Context, json: bool, verdicts: Iterable[tuple[Path, Verification | AnchorError]]) -> None:
    """Each path's verdict on one line (the error's first line for a failure), then a summary; exits
    with the highest code any path got, so a script sees the worst of them."""
    import json as jsonlib

    from anchor.cli.output import printable
    from anchor.errors import AnchorError

    rows: list[dict[str, Any]] = []
    for path, result in verdicts:  # as each is given (Verifier.verify_each: the chain read once per root)
        if isinstance(result, AnchorError):
            rows.append(
                {"path": str(path), "ok": False, "exit_code": int(result.exit_code), "error": error_json(result)}
            )
            if not wants_json(ctx, json):
                said = result.said_as(option).removeprefix(f"{path}: ")
                print(printable(f"{result.code.upper()}  {path}: {said}"), flush=True)
            continue
        rows.append(
            {
                "path": str(path),
                "ok": True,
                "exit_code": 0,
                "manifest_digest": result.manifest_digest,
                "anchored_block": result.anchored_block,
                "superseded": result.superseded_by is not None,
            }
        )
        if not wants_json(ctx, json):
            note = " (superseded by a later stamp)" if result.superseded_by else ""
            print(
                printable(f"OK  {path} ({count(result.files, 'file')}), block {result.anchored_block}{note}"),
                flush=True,
            )
    failed = [r for r in rows if not r["ok"]]
    worst = max((r["exit_code"] for r in rows), default=0)
    summary = f"{len(rows) - len(failed)} of {count(len(rows), 'path')} verified" + (
        f"; {len(failed)} not (highest exit code {worst})" if failed else ""
    )
    if wants_json(ctx, json):
        print(jsonlib.dumps({"ok": not failed, "results": rows, "summary": summary}, sort_keys=True))
    else:
        print(summary)
    if worst:
        ctx.exit(worst)


@command("attest")
@click.argument("target", help="An anchored file or directory, or a manifest digest (0x…).")
@click.option(
    "--out", "out", type=PATH, help="Write here (default: TARGET.intoto.jsonl beside a path; stdout for a digest)."
)
@json_option
@click.pass_context
def attest(ctx: click.Context, target: str, out: Path | None, json: bool) -> None:
    """In-toto statements for an anchored result, after verifying it: SLSA provenance for a result
    bundle, and the chain anchor (with its proof) for everything (docs/attestations.md)."""
    import sys

    from anchor.attest.statement import attest as make
    from anchor.attest.statement import statement_path, write_statements

    statements, verdict = make(target, _settings(ctx), out)
    path = Path(target)
    destination = out if out is not None else (statement_path(path) if path.exists() else None)
    if destination is None:
        import json as jsonlib

        sys.stdout.write("".join(jsonlib.dumps(s, sort_keys=True) + "\n" for s in statements))
        return
    write_statements(statements, destination)
    kinds = ", ".join(s["predicateType"].rsplit("/", 2)[-2] for s in statements)
    emit(
        ctx,
        json,
        {"statements": len(statements), "out": str(destination), "manifest_digest": verdict.manifest_digest},
        [
            f"wrote {destination}: {count(len(statements), 'statement')} ({kinds})"
            f" for {verdict.manifest_digest}, anchored in block {verdict.anchored_block}",
            f"  check it: anchor verify {destination}",
        ],
    )


@command("lookup", reads=True)
@click.argument("key", help="A path, manifest digest, batch root or git commit.")
@click.option("--researcher", "researcher", help="Whose lineage record of a commit (registry v2): read in O(1) calls.")
@quorum_option
@json_option
@click.pass_context
def lookup(ctx: click.Context, key: str, researcher: str | None, quorum: int | None, json: bool) -> None:
    """Print the on-chain record for KEY and where to see it on a block explorer."""
    from anchor.anchoring.proofs import store_finder
    from anchor.cli.config_cmds import settings_near
    from anchor.cli.verdict import quorum_lines
    from anchor.readback.lookup import lookup_agreed

    settings = settings_near(ctx, Path(key)) if Path(key).exists() else _settings(ctx)
    found = lookup_agreed(key, settings, researcher, quorum, store_finder)
    lines = [*_lookup_lines(found)]
    lines += [f"  {'explorer ' + k:<16} {v}" for k, v in found["links"].items()] or ["  explorer: none for this chain"]
    lines += quorum_lines(found.get("quorum"))
    emit(ctx, json, found, lines)


def _lookup_lines(found: dict[str, Any]) -> list[str]:
    """`lookup` for a reader: words, not field names; one date (UTC), not a Unix time beside it."""
    from datetime import UTC, datetime

    from anchor.manifest.onchain import commit_of_key

    def when(timestamp: int, block: int) -> str:
        at = datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"{at}, block {block} ({found['finality']})"

    rows: list[tuple[str, object]]
    if found["kind"] == "lineage":
        r = found["record"]
        parent = commit_of_key(r["parent"])
        if found.get("what") == "model promotion":  # anchor.mlflow: its parent and metric hash are digests
            title = f"lineage record of model promotion {r['commit']}"
            rows = [
                ("promoted by", r["researcher"]),
                ("previous", "none (the alias was new)" if not r["parent"][2:].strip("0") else r["parent"]),
                ("run manifest", r["metric_hash"]),
                ("anchored", when(r["timestamp"], r["block_number"])),
                ("tx", r["tx_hash"]),
            ]
        else:
            title = f"lineage record of commit {commit_of_key(r['commit'])}"
            rows = [
                ("researcher", r["researcher"]),
                ("parent", "none (a baseline)" if not parent.strip("0") else parent),
                ("kept", "yes" if r["kept"] else "no (a measured trial)"),
                ("diff hash", r["diff_hash"]),
                ("metric hash", r["metric_hash"]),
                ("anchored", when(r["timestamp"], r["block_number"])),
                ("tx", r["tx_hash"]),
            ]
    else:
        title = f"batch root {found['root']}"
        rows = [
            *([("manifest digest", found["manifest_digest"])] if found.get("manifest_digest") else []),
            ("submitter", found["submitter"]),
            ("anchored", when(found["timestamp"], found["block_number"])),
            ("tx", found["tx_hash"] or "not found in the logs"),
            ("registry", found["registry"]),
        ]
    if found.get("retracted"):  # as verify says it: when, by whom, why
        gone = found["retracted"]
        why = f': "{gone["reason"]}"' if gone["reason"] is not None else f", reason digest {gone['reason_digest']}"
        at = datetime.fromisoformat(gone["retracted_at"]).strftime("%Y-%m-%d %H:%M:%S UTC")
        rows.append(("retracted", f"{at}, block {gone['retracted_block']}, by {gone['retracted_by']}{why}"))
    rows.append(("read at block", found["read_at_block"]))
    return [title, *(f"  {name:<16} {value}" for name, value in rows)]
