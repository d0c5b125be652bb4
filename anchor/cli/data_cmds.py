"""`anchor hash|anchor|verify|lookup`: the data commands."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from anchor.cli.config_cmds import settings_near
from anchor.cli.hashing import print_hash, rules_for
from anchor.cli.options import (
    AnchoredBeforeOpt,
    ExpectSubmitterOpt,
    InsecureTokenFlag,
    JsonFlag,
    MinFinalityOpt,
    QuorumOpt,
    RegistryOpt,
    RequireOpt,
)
from anchor.cli.output import count, emit, error_json, hash_progress, option, wants_json
from anchor.cli.verdict import quorum_lines, verdict_output, without

if TYPE_CHECKING:
    from collections.abc import Iterable

    from anchor.errors import AnchorError
    from anchor.library.verifier import Verification

PathArg = Annotated[Path, typer.Argument(help="A file or a directory.")]
ExcludeOpt = Annotated[
    list[str] | None,
    typer.Option("--exclude", help="Leave out paths matching this gitignore-style pattern (repeatable)."),
]
NoDefaultsOpt = Annotated[bool, typer.Option("--no-default-excludes", help="Hash .git/ too (left out by default).")]


class Symlinks(StrEnum):
    refuse = "refuse"
    record = "record"
    follow_inside = "follow-inside"


SymlinksOpt = Annotated[
    Symlinks,
    typer.Option(
        "--symlinks",
        help="Symbolic links: refuse (stop, naming the link), record (bind the link itself, never follow),"
        " follow-inside (hash what it points to, if inside PATH). Recorded in the manifest.",
    ),
]


OutOpt = Annotated[
    Path | None,
    typer.Option(
        "--out", "-o", "--proof",
        help="Where to write the proof (default: <PATH>.anchor.json beside PATH; a file there that is no proof"
        " is never replaced). --proof is the old spelling of this output, kept for one release: --proof names"
        " an input everywhere else.",
    ),
]  # fmt: skip
ProofOpt = Annotated[
    Path | None,
    typer.Option("--proof", help="Proof file (default: <PATH>.anchor.json beside PATH)."),
]


ServiceOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--service",
        help="Stamp through this anchoring service (repeatable; else ANCHOR_SERVICE_URLS): no key here, a pending"
        " proof with its signed receipt at once, `anchor upgrade` later. Token: ANCHOR_SERVICE_TOKEN.",
    ),
]


ServiceUrlOpt = Annotated[
    str | None,
    typer.Option("--service-url", help="The anchoring service as the pods reach it: it holds the funded key."),
]
"""For the rendered Jobs (research, mission): where their pods anchor (docs/calendar.md)."""
EgressCidrOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--egress-cidr",
        help="A CIDR the pods may reach besides DNS and the anchoring service (the snapshot's host, the git"
        " remote, the chain's RPC); repeatable. Their NetworkPolicy denies everything else.",
    ),
]
"""For the rendered Jobs' NetworkPolicy (anchor.anchoring.k8s.network_policy)."""
GoneKeysSecretOpt = Annotated[
    str | None,
    typer.Option(hidden=True, help="Gone: the funded key stays in the service (--service-url, --token-secret)."),
]
"""`--keys-secret` of the renders of earlier releases: still parsed, to say what replaced it."""


def register(app: typer.Typer) -> None:
    app.command("hash")(hash_)
    app.command("stamp")(anchor_)
    app.command("anchor", help="Same as `anchor stamp` (the original name, kept).")(anchor_)
    app.command()(upgrade)
    app.command()(bundle)
    app.command()(prove)
    app.command()(verify)
    app.command()(attest)
    app.command()(lookup)


def _settings(ctx: typer.Context):  # type: ignore[no-untyped-def]
    return ctx.find_root().obj["settings"]


def hash_(
    ctx: typer.Context, path: PathArg, exclude: ExcludeOpt = None, no_default_excludes: NoDefaultsOpt = False,
    symlinks: SymlinksOpt = Symlinks.refuse, json: JsonFlag = False,
) -> None:  # fmt: skip
    """Print the deterministic BLAKE3 manifest digest of PATH (no chain needed)."""
    print_hash(path, rules_for(path, exclude, no_default_excludes), symlinks.value, wants_json(ctx, json))


def anchor_(
    ctx: typer.Context, path: PathArg, proof: OutOpt = None, exclude: ExcludeOpt = None,
    no_default_excludes: NoDefaultsOpt = False, symlinks: SymlinksOpt = Symlinks.refuse, service: ServiceOpt = None,
    allow_insecure_token: InsecureTokenFlag = False, seal: SealFlag = False, rehash: RehashFlag = False,
    json: JsonFlag = False,
) -> None:  # fmt: skip
    """Anchor PATH on chain (once: the same bytes are never anchored twice) and write its proof file.
    With --service (or ANCHOR_SERVICE_URLS), no key is needed here: the services anchor it (docs/calendar.md).
    With --seal, the proof is also sealed for offline verification (a pending one when it is upgraded).
    Files unchanged since the last stamp of PATH (same size, mtime, ctime, inode) are not read again;
    --rehash reads them all. `anchor verify` always reads every byte."""
    from anchor.anchoring.stamper import Stamper

    rules = rules_for(path, exclude, no_default_excludes)
    # a bad URL or token is refused before anything is hashed
    stamper = Stamper.from_settings(_settings(ctx), service, allow_insecure_token=allow_insecure_token)
    with hash_progress(ctx, json) as progress:
        stamped = stamper.stamp(path, out=proof, rules=rules, symlinks=symlinks.value, progress=progress,
                                rehash=rehash)  # fmt: skip
    if seal and stamped.anchored:
        _seal_quietly(ctx, stamped.proof_path)
    _report_stamped(ctx, json, str(path), stamped)


RehashFlag = Annotated[
    bool, typer.Option("--rehash", help="Read every file again, ignoring the stat cache of the last stamp.")
]
SealFlag = Annotated[
    bool, typer.Option("--seal", help="Also seal the proof: verifiable offline (`verify --offline`), forever.")
]


def _seal_quietly(ctx: typer.Context, proof_path: Path) -> None:
    """`--seal` of stamp and upgrade: the proof sealed in place, the blocks to trust said on stderr."""
    from anchor.sealing.make import seal as seal_proof

    done = seal_proof(_settings(ctx), proof_path)
    for _, number, block_hash in done.blocks:
        typer.echo(f"sealed {proof_path}: trust block {number} = {block_hash} (anchor verify PATH --offline"
                   f" --trusted-block {number}:{block_hash})", err=True)  # fmt: skip


def bundle(
    ctx: typer.Context,
    spec: Annotated[Path, typer.Argument(help="Bundle spec (TOML): mission, data snapshot, image, policy, output.")],
    anchor: Annotated[bool, typer.Option("--anchor", help="Also anchor the bundle manifest on chain.")] = False,
    proof: OutOpt = None,
    service: ServiceOpt = None,
    json: JsonFlag = False,
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

        raise BadInput("--service anchors: give --anchor with it (hint: anchor bundle SPEC --anchor --service URL)",
                       detail={"field": "services"})  # fmt: skip
    if anchor:
        from anchor.anchoring.stamper import Stamper

        stamper = Stamper.from_settings(_settings(ctx), service)
        stamped = stamper.stamp_bundle(manifest, tree, proof or default_proof_path(output_dir), output=output_dir)
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


def prove(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="One file inside an anchored directory.")],
    bundle_dir: Annotated[Path, typer.Option("--in", help="The anchored directory FILE belongs to.")],
    bundle_proof: ProofOpt = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Where to write the file proof (default: <DIR>.proofs/<FILE in DIR>.anchor.json)."
        ),
    ] = None,
    json: JsonFlag = False,
) -> None:
    """Write a self-contained proof for one FILE, checkable without the rest of the directory."""
    from anchor.anchoring.prove import write_file_proof

    proof, target = write_file_proof(file, bundle_dir, bundle_proof, out)
    assert proof.file is not None
    emit(
        ctx,
        json,
        {"proof_file": str(target), "file": proof.file.model_dump(), "manifest_digest": proof.manifest_digest},
        [
            f"{file}: proof written to {target}",
            f"  {proof.file.path} is leaf {proof.file.index} of {proof.file.tree_size}"
            f" ({len(proof.file.audit_path)} sibling hashes)",
            f"  manifest {proof.manifest_digest}, root {proof.batch.root}",
        ],
    )


def _report_stamped(ctx: typer.Context, json: bool, shown: str, stamped: Any) -> None:
    """What a stamp did: anchored with the key here, or pending at services."""
    if stamped.anchored:
        _report_anchor(ctx, json, shown, stamped)
    else:
        _report_pending(ctx, json, shown, stamped)


def _report_pending(ctx: typer.Context, json: bool, path: str, outcome: Any) -> None:
    """What a stamp through services did: each receipt, each service that did not take it."""
    from datetime import UTC, datetime

    proof_out = outcome.proof_path
    emit(
        ctx,
        json,
        {"status": "pending", "proof_file": str(proof_out), "manifest_digest": outcome.digest,
         "receipts": [r.model_dump(mode="json") for r in outcome.receipts], "not_taken": outcome.not_taken},
        [
            f"{path}: pending ({count(len(outcome.receipts), 'service')} took it; not anchored yet)",
            f"  manifest {outcome.digest} ({count(outcome.file_count, 'file')})",
            *[f"  pending  at {r.url} since {datetime.fromtimestamp(r.accepted_at, UTC).isoformat(timespec='seconds')},"
              f" receipt signed by {r.signer} (chain {r.chain_id})" for r in outcome.receipts],
            *[f"  skipped  {url}: {without(url, why)} (submitted again by `anchor upgrade --service {url}`)"
              for url, why in outcome.not_taken.items()],
            f"  proof    {proof_out} (pending)",
            f"  complete it after the service's next batch: anchor upgrade {proof_out}",
        ],
    )  # fmt: skip


def upgrade(
    ctx: typer.Context,
    paths: Annotated[
        list[Path],
        typer.Argument(help="Proof files, or the stamped paths (their PATH.anchor.json).", metavar="PATH|PROOF"),
    ],  # fmt: skip
    service: Annotated[
        list[str] | None,
        typer.Option(
            "--service",
            help="Submit again to this service (repeatable; else ANCHOR_SERVICE_URLS) if the"
            " proof lists it as down at stamp time. Token: ANCHOR_SERVICE_TOKEN.",
        ),
    ] = None,
    allow_insecure_token: InsecureTokenFlag = False,
    seal: SealFlag = False,
    json: JsonFlag = False,
) -> None:
    """Complete pending proofs: fetch each service's anchor, check it against the chain, write it in;
    with --seal, seal each anchor of the chain read (for `verify --offline`).

    The file is rewritten atomically and only when an anchor was added (nothing else in it changes);
    services that were down at stamp time are submitted to again. Exit 14 while any is still pending."""
    from anchor.anchoring.stamper import Stamper
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
        rows.append({"path": str(given), "proof": str(proof_path), "complete": done.complete,
                     "added": [a.service for a in done.added], "pending": list(done.still_pending),
                     "not_reached": done.failed, "not_contacted": list(done.not_contacted)})  # fmt: skip
        state = "complete" if done.complete else "pending"
        lines.append(f"{state.upper()}  {proof_path}" + (" (unchanged)" if not done.added else ""))
        lines += [f"  added    anchor from {a.service}: chain {a.anchor.chain_id}, block {a.anchor.block_number}"
                  for a in done.added]  # fmt: skip
        lines += [f"  pending  {url}: not in a mined batch yet" for url in done.still_pending]
        said = {url: error.said_as(option) for url, error in done.errors.items()}
        lines += [f"  skipped  {url}: {without(url, said.get(url, why))}" for url, why in done.failed.items()]
        lines += [f"  not contacted  {url}: named by the file as down at stamp time, and not configured now (no"
                  " token goes to a URL only the file names; pass --service URL to submit to it)"
                  for url in done.not_contacted]  # fmt: skip
    emit(ctx, json, {"results": rows}, lines)
    if worst:
        raise typer.Exit(worst)


def _report_anchor(ctx: typer.Context, json: bool, shown: str, outcome: Any) -> None:
    a = outcome.proof.anchor
    state = (f"already anchored, in block {outcome.proof.anchor.block_number} by an earlier run (a journal retry,"
             " flush or stamp of the same bytes): nothing was sent now" if outcome.already_anchored
             else f"anchored (gas {outcome.gas_used})")  # fmt: skip
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


def verify(
    ctx: typer.Context,
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="Files or directories (several: one line each, then a summary).", metavar="PATH"),
    ] = None,
    from_file: Annotated[
        Path | None,
        typer.Option("--from", help="Also verify the paths listed in this file, one a line ('-': standard input)."),
    ] = None,
    proof: ProofOpt = None,
    registry: RegistryOpt = None,
    require: RequireOpt = "any",
    expect_submitter: ExpectSubmitterOpt = None,
    anchored_before: AnchoredBeforeOpt = None,
    spec: Annotated[
        Path | None,
        typer.Option("--spec", help="A bundle spec: re-hash its mission, snapshot and policy files too."),
    ] = None,
    min_finality: MinFinalityOpt = None,
    quorum: QuorumOpt = None,
    subjects_in: Annotated[
        Path | None,
        typer.Option("--in", help="With a .intoto.jsonl PATH: where its subjects are (default: beside it, its name)."),
    ] = None,
    offline: Annotated[
        bool, typer.Option("--offline", help="No network: check the proof's sealed section against trusted blocks.")
    ] = False,
    trusted_block: Annotated[
        list[str] | None,
        typer.Option("--trusted-block", help="With --offline: N:HASH (or CHAIN:N:HASH), a block hash you trust."),
    ] = None,
    trusted_blocks: Annotated[
        Path | None,
        typer.Option("--trusted-blocks", help="With --offline: a file of `chain_id N HASH` lines (a checkpoint list)."),
    ] = None,
    json: JsonFlag = False,
) -> None:
    """Verify PATH against its proof file and a live read of the chain (read-only), or, with --offline,
    against the proof's sealed section and a block hash you trust; PATH may also be the in-toto
    statements `anchor attest` wrote (NAME.intoto.jsonl). Several paths (or --from FILE) are verified in
    one process: one line each, a summary, and the highest exit code any of them got."""
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
        from typer._click.exceptions import UsageError

        raise UsageError("Missing argument 'PATH' (or --from FILE with one path a line).", ctx=ctx)
    if len(listed) > 1:
        if proof is not None or spec is not None or subjects_in is not None:
            raise BadInput("--proof, --spec and --in name one subject: give one PATH with them",
                           detail={"field": "path"})  # fmt: skip
        _verify_many(ctx, json, verifier.verify_each(listed, policy=policy, require=require))
        return
    path = listed[0]
    result = verifier.verify(path, proof=proof, policy=policy, spec=spec, require=require, subjects_in=subjects_in)
    emit(ctx, json, *verdict_output(path, result))


def _go_offline(ctx: typer.Context, offline: bool, given: list[str], listed: Path | None) -> None:
    """`--offline` with its trusted blocks, into the settings every step reads (anchor.sealing.check)."""
    from anchor.errors import BadInput
    from anchor.sealing.check import offline_settings

    if not offline:
        raise BadInput("--trusted-block and --trusted-blocks go with --offline (hint: anchor verify PATH --offline"
                       " --trusted-block N:HASH)", detail={"field": "offline"})  # fmt: skip
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


def _verify_many(ctx: typer.Context, json: bool, verdicts: Iterable[tuple[Path, Verification | AnchorError]]) -> None:
    """Each path's verdict on one line (the error's first line for a failure), then a summary; exits
    with the highest code any path got, so a script sees the worst of them."""
    import json as jsonlib

    from anchor.cli.output import printable
    from anchor.errors import AnchorError

    rows: list[dict[str, Any]] = []
    for path, result in verdicts:  # as each is given (Verifier.verify_each: the chain read once per root)
        if isinstance(result, AnchorError):
            rows.append({"path": str(path), "ok": False, "exit_code": int(result.exit_code),
                         "error": error_json(result)})  # fmt: skip
            if not wants_json(ctx, json):
                said = result.said_as(option).removeprefix(f"{path}: ")
                print(printable(f"{result.code.upper()}  {path}: {said}"), flush=True)
            continue
        rows.append({"path": str(path), "ok": True, "exit_code": 0, "manifest_digest": result.manifest_digest,
                     "anchored_block": result.anchored_block,
                     "superseded": result.superseded_by is not None})  # fmt: skip
        if not wants_json(ctx, json):
            note = " (superseded by a later stamp)" if result.superseded_by else ""
            print(printable(f"OK  {path} ({count(result.files, 'file')}), block {result.anchored_block}{note}"),
                  flush=True)  # fmt: skip
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
        raise typer.Exit(worst)


def attest(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="An anchored file or directory, or a manifest digest (0x…).")],
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write here (default: TARGET.intoto.jsonl beside a path; stdout for a digest)."),
    ] = None,
    json: JsonFlag = False,
) -> None:
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


def lookup(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="A path, manifest digest, batch root or git commit.")],
    researcher: Annotated[
        str | None,
        typer.Option("--researcher", help="Whose lineage record of a commit (registry v2): read in O(1) calls."),
    ] = None,
    quorum: QuorumOpt = None,
    json: JsonFlag = False,
) -> None:
    """Print the on-chain record for KEY and where to see it on a block explorer."""
    from anchor.anchoring.proofs import store_finder
    from anchor.readback.lookup import lookup_agreed

    settings = settings_near(ctx, Path(key)) if Path(key).exists() else _settings(ctx)
    found = lookup_agreed(key, settings, researcher, quorum, store_finder)
    lines = [*_lookup_lines(found)]
    lines += [f"  {'explorer ' + k:<16} {v}" for k, v in found["links"].items()] or ["  explorer: none for this chain"]
    lines += quorum_lines(found.get("quorum"))
    emit(ctx, json, found, lines)


def _commit_text(key: str) -> str:
    """A commit as git prints it: a SHA-1 id is stored left-aligned in a bytes32, so drop the padding."""
    body = key.removeprefix("0x")
    return body[:40] if body.endswith("0" * 24) else body


def _lookup_lines(found: dict[str, Any]) -> list[str]:
    """`lookup` for a reader: words, not field names; one date (UTC), not a Unix time beside it."""
    from datetime import UTC, datetime

    def when(timestamp: int, block: int) -> str:
        at = datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"{at}, block {block} ({found['finality']})"

    rows: list[tuple[str, object]]
    if found["kind"] == "lineage":
        r = found["record"]
        parent = _commit_text(r["parent"])
        title = f"lineage record of commit {_commit_text(r['commit'])}"
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
