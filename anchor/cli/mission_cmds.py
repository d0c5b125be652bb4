"""`anchor mission check` and `anchor snapshot add|fetch|list`: missions and the data they run on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from anchor.cli.commands import AnchorGroup
from anchor.cli.options import (
    PATH,
    chain_rpc_url_option,
    egress_cidr_option,
    gone_keys_secret_option,
    json_option,
    sandbox_runtime_option,
    service_url_option,
)
from anchor.cli.output import count, emit, wants_json

missions = AnchorGroup("mission", help="Typed, immutable missions (docs/manifest.md, Mission).")
snapshots = AnchorGroup("snapshot", help="The content-addressed, read-only snapshot cache (keyed by SHA-256).")
max_bytes_option = click.option(
    "--max-bytes",
    "max_bytes",
    type=click.IntRange(min=1),
    help="Cache size cap; least recently used entries go first (else ANCHOR_SNAPSHOT_CACHE_BYTES).",
)


@missions.command("check")
@click.argument("path", type=PATH, help="A mission file (TOML, or JSON for .json).")
@click.option(
    "--digest-only", "digest_only", is_flag=True, help="Print only the digest, for `mission submit --mission-digest`."
)
@json_option
@click.pass_context
def check(ctx: click.Context, path: Path, digest_only: bool, json: bool) -> None:
    """Validate a mission and print the one identity a result bundle binds (`mission_sha256`: the SHA-256
    of its canonical JSON, so reformatting the file changes nothing) and the digest `mission submit
    --mission-digest` asks for."""
    import hashlib

    from anchor.manifest.mission import load_mission

    mission, raw = load_mission(path)
    data = {
        "digest": "0x" + mission.digest.hex(),
        "sha256": mission.sha256(),
        "file_sha256": hashlib.sha256(raw).hexdigest(),
        "mission": mission.identity(),
    }
    if digest_only and not wants_json(ctx, json):
        print(data["digest"])
        return
    covers = ", ".join(f"{k}={v}" for k, v in mission.covers.items()) or "nothing named"
    budget = f"{mission.budget.minutes} min, {count(mission.budget.attempts, 'attempt')}"
    emit(
        ctx,
        json,
        data,
        [
            f"OK: {path} is a mission (covers {covers}; budget {budget})",
            f"  mission_sha256  {data['sha256']}",
            "                  the identity its result bundles bind (SHA-256 of its canonical JSON)",
            f"  digest          {data['digest']}",
            "                  what `anchor mission submit --mission-digest` takes (BLAKE3, docs/manifest.md)",
        ],
    )


@missions.command("submit")
@click.option("--mission", "mission", type=PATH, required=True, help="The mission file (TOML, or JSON for .json).")
@click.option(
    "--mission-digest", "mission_digest", help="The mission's digest as you know it (0x…): compared, never adopted."
)
@click.option("--snapshot", "snapshot", default="", help="The data snapshot: a path or a URL.")
@click.option("--snapshot-sha256", "snapshot_sha256", help="Its SHA-256 (required).")
@click.option("--image", "image", default="", help="The image, by digest: name@sha256:<64 hex>.")
@click.option("--output", "output", default="", help="The output identity: never used before.")
@click.option("--profile", "profile", default="small", help="A declared resource profile: small, medium, large.")
@click.option("--resume-bundle", "resume_bundle", help="Resume from this anchored bundle (with --resume-digest).")
@click.option("--resume-digest", "resume_digest", help="... whose manifest digest is this (0x…).")
@json_option
@click.pass_context
def submit(
    ctx: click.Context,
    mission: Path,
    mission_digest: str | None,
    snapshot: str,
    snapshot_sha256: str | None,
    image: str,
    output: str,
    profile: str,
    resume_bundle: str | None,
    resume_digest: str | None,
    json: bool,
) -> None:
    """Submit a mission through the dispatcher: everything is checked before anything is stored."""
    from anchor.missions.dispatch import submit_mission

    record = submit_mission(
        ctx.find_root().obj["settings"],
        mission,
        mission_digest=mission_digest,
        snapshot=snapshot,
        snapshot_sha256=snapshot_sha256,
        image=image,
        output=output,
        profile=profile,
        resume_bundle=resume_bundle,
        resume_digest=resume_digest,
    )
    emit(
        ctx,
        json,
        dict(record),
        [
            f"submitted mission #{record['id']} at {record['submitted_at']}: output {record['output']!r},"
            f" profile {record['profile']['name']} ({record['profile']['cpu']} CPU, {record['profile']['memory']})",
            f"  mission  {record['mission']['digest']}",
            f"  snapshot sha256:{record['snapshot']['sha256']}",
            f"  image    {record['image']}",
            *(
                [f"  resumes  {record['resume']['bundle']} (0x{record['resume']['digest']})"]
                if record["resume"]
                else []
            ),
        ],
    )


@missions.command("run")
@click.argument("output", help="The output identity of a dispatched mission (anchor mission submit).")
@click.option("--no-sandbox", "no_sandbox", is_flag=True, help="Run the command unconfined (recorded in the proof).")
@sandbox_runtime_option
@max_bytes_option
@click.option(
    "--service",
    "service",
    multiple=True,
    help="Anchor the bundle through this service (repeatable; token: ANCHOR_SERVICE_TOKEN): no funded key"
    " here, pending proofs at once, completed at the end when the service's batch is mined.",
)
@click.option(
    "--stage",
    "stage",
    help="In a pod (anchor mission render k8s): `prepare` (claim, snapshot into --workspace) or `seal`"
    " (hash and anchor what the command's own container left): the command runs between them, elsewhere.",
)
@click.option(
    "--workspace", "workspace", type=PATH, help="With --stage: the directory holding the snapshot/ and result/ volumes."
)
@json_option
@click.pass_context
def run(
    ctx: click.Context,
    output: str,
    no_sandbox: bool,
    sandbox_runtime: str,
    max_bytes: int | None,
    service: list[str] | None,
    stage: str | None,
    workspace: Path | None,
    json: bool,
) -> None:
    """Run a dispatched mission against its verified snapshot, measure its six milestones, and anchor
    the result bundle with its timing record (docs/missions.md)."""
    import sys

    from anchor.anchoring.stamper import Stamper
    from anchor.missions.runner import complete_through, run_dispatched

    settings = ctx.find_root().obj["settings"]
    stamper = Stamper.from_settings(settings, service)  # a bad --service is refused before the mission runs
    say = (lambda _: None) if json else (lambda line: print(line, file=sys.stderr))
    done = run_dispatched(
        settings,
        output,
        stamper=stamper,
        say=say,
        sandbox=not no_sandbox,
        runtime=sandbox_runtime,
        stage=stage,
        workspace=workspace,
        max_bytes=max_bytes,
    )
    if isinstance(done, dict):  # --stage prepare
        emit(
            ctx,
            json,
            done,
            [
                f"mission {output!r} prepared: snapshot {done['snapshot']} (read-only for the"
                f" command), result {done['result']}"
            ],
        )
        return
    if not done.outcome.anchored:
        _report_through(ctx, json, done, complete_through(done, stamper))
        return
    manifest, proof = done.manifest, done.outcome.anchored_proof
    milestones = manifest.milestones.to_json() if manifest.milestones else {}
    data = {
        "output": done.output,
        "manifest_digest": "0x" + manifest.digest.hex(),
        "manifest": manifest.identity(),
        "milestones": milestones,
        "result": str(done.result_dir),
        "proof": str(done.proof),
        "sandbox": done.sandbox,
        "tx_hash": proof.anchor.tx_hash,
        "block_number": proof.anchor.block_number,
        "seconds": round(done.seconds, 3),
    }
    emit(
        ctx,
        json,
        data,
        [
            f"mission {done.output!r} ran ({done.sandbox}) in {done.seconds:.2f} s and its result bundle is anchored",
            f"  bundle   {data['manifest_digest']}  ({count(manifest.output.file_count, 'file')})",
            f"  in tx    {proof.anchor.tx_hash} (block {proof.anchor.block_number})",
            f"  result   {done.result_dir}",
            f"  proof    {done.proof}",
            f"  check:   anchor verify {done.result_dir}",
        ],
    )


def _report_through(ctx: click.Context, json: bool, done: Any, complete: bool) -> None:
    """A mission stamped through services: where its proofs stand once the services' batch was awaited."""
    manifest = done.manifest
    data = {
        "output": done.output,
        "manifest_digest": "0x" + manifest.digest.hex(),
        "manifest": manifest.identity(),
        "result": str(done.result_dir),
        "proof": str(done.proof),
        "sandbox": done.sandbox,
        "services": [r.url for r in done.outcome.receipts],
        "complete": complete,
        "seconds": round(done.seconds, 3),
    }
    state = "anchored through" if data["complete"] else "pending at"
    emit(
        ctx,
        json,
        data,
        [
            f"mission {done.output!r} ran ({done.sandbox}) in {done.seconds:.2f} s; its result bundle is {state}"
            f" {', '.join(data['services'])}",
            f"  bundle   {data['manifest_digest']}  ({count(manifest.output.file_count, 'file')})",
            f"  result   {done.result_dir}",
            f"  proof    {done.proof}" + ("" if data["complete"] else " (pending: anchor upgrade it later)"),
            f"  check:   anchor verify {done.result_dir}",
        ],
    )


@missions.command("list")
@json_option
@click.pass_context
def list_missions(ctx: click.Context, json: bool) -> None:
    """Every dispatched mission in this data dir, oldest first: its output identity, state and bundle."""
    from anchor.missions.runner import mission_states

    states = mission_states(ctx.find_root().obj["settings"].data_dir)
    lines = [
        f"{m.output:<24} {m.state:<12} submitted {m.submitted_at}"
        + (f"  bundle 0x{m.bundle[:16]}…" if m.bundle else "")
        for m in states
    ] or ["no missions dispatched here yet (anchor mission submit …)"]
    emit(ctx, json, {"missions": [m.to_json() for m in states]}, lines)


@missions.command("status")
@click.argument("output", help="The output identity of a dispatched mission.")
@json_option
@click.pass_context
def status(ctx: click.Context, output: str, json: bool) -> None:
    """One dispatched mission: what it binds, where its run stands, where its result and proof are."""
    from anchor.missions.runner import mission_status

    settings = ctx.find_root().obj["settings"]
    m, failed = mission_status(settings, output)
    data, mission_dir = m.to_json(), settings.layout.mission(output)
    emit(
        ctx,
        json,
        {**data, "failed_results": failed},
        [
            f"mission {output!r}: {m.state}" + (f" (since {m.updated_at})" if m.updated_at else ""),
            f"  submitted       {m.submitted_at}",
            f"  mission_sha256  {data['mission_sha256']}",
            f"  snapshot        sha256 {data['snapshot_sha256']}",
            f"  image           {data['image']}",
            f"  profile         {data['profile']}",
            *([f"  resumes         {data['resume']['digest']}"] if data["resume"] else []),
            *([f"  bundle          {data['bundle']}", f"  result          {m.result}"] if m.bundle else []),
            *([f"  failed runs     {', '.join(failed)} (kept in {mission_dir})"] if failed else []),
            f"  next            {m.next_step(mission_dir)}",
        ],
    )


@missions.command("render")
@click.argument("target", help="What to render: k8s (a Job running the dispatched mission).")
@click.argument("output", help="The output identity of a dispatched mission.")
@chain_rpc_url_option
@service_url_option
@click.option(
    "--token-secret",
    "token_secret",
    default="anchor-service-token",
    help="The Secret whose key `token` is the service token (scope: submit).",
)
@gone_keys_secret_option
@click.option(
    "--results-claim",
    "results_claim",
    help="A PersistentVolumeClaim the result directory is written to (else it leaves with the pod).",
)
@click.option("--namespace", "namespace", help="The namespace.")
@click.option(
    "--anchor-image",
    "anchor_image",
    help="The anchor image (name@sha256:…) that prepares and seals; it alone holds"
    " the token. The mission's command runs in the dispatched image, apart.",
)
@egress_cidr_option
@click.option("--out", "out", type=PATH, help="Write here (refuses to overwrite).")
@click.pass_context
def render(
    ctx: click.Context,
    target: str,
    output: str,
    chain_rpc_url: str | None,
    service_url: str | None,
    token_secret: str,
    keys_secret: str | None,
    results_claim: str | None,
    namespace: str | None,
    anchor_image: str | None,
    egress_cidr: list[str] | None,
    out: Path | None,
) -> None:
    """Render a dispatched mission for a cluster: a ConfigMap, a Job and its NetworkPolicy. Trusted steps
    (the anchor image) fetch and verify the snapshot, then hash and anchor the result; the mission's
    command runs between them in its own container, on its profile, with no key and no network."""
    from anchor.cli.output import write_rendered
    from anchor.missions.k8s import render_mission

    text, wrote = render_mission(
        ctx.find_root().obj["settings"],
        target,
        output,
        rpc_url=chain_rpc_url,
        service_url=service_url,
        anchor_image=anchor_image,
        keys_secret=keys_secret,
        token_secret=token_secret,
        results_claim=results_claim,
        namespace=namespace,
        egress_cidrs=tuple(egress_cidr or ()),
    )
    write_rendered(text, out, wrote)


def _cache(ctx: click.Context, max_bytes: int | None) -> Any:
    from anchor.missions.snapshots import SnapshotCache

    return SnapshotCache.for_settings(ctx.find_root().obj["settings"], max_bytes)


@snapshots.command("add")
@click.argument("path", type=PATH, help="A snapshot file (an archive, a table).")
@max_bytes_option
@json_option
@click.pass_context
def add(ctx: click.Context, path: Path, max_bytes: int | None, json: bool) -> None:
    """Put a local file in the cache under its SHA-256 (read-only)."""
    done = _cache(ctx, max_bytes).add(path)
    emit(
        ctx,
        json,
        {"snapshot": f"sha256:{done.key}", "path": str(done.path), "size": done.size, "hit": done.hit},
        [
            f"sha256:{done.key}  {path} ({count(done.size, 'byte')}){' (already cached)' if done.hit else ''}",
            f"  cached at {done.path} (read-only)",
        ],
    )


@snapshots.command("fetch")
@click.argument("key", help="sha256:<64 hex>")
@click.option("--from", "source", help="Where to get it if the cache has no good copy: a path or an http(s) URL.")
@max_bytes_option
@json_option
@click.pass_context
def fetch(ctx: click.Context, key: str, source: str | None, max_bytes: int | None, json: bool) -> None:
    """The snapshot for KEY: the cached copy if it still hashes to KEY, else fetched and verified."""
    done = _cache(ctx, max_bytes).fetch(key, source)
    state = "hit: verified, nothing transferred" if done.hit else f"fetched {count(done.size, 'byte')}, verified"
    lines = [f"sha256:{done.key}  {state}", f"  at {done.path} (read-only)"]
    if done.quarantined is not None:
        lines.insert(1, f"  the cached copy did not hash to its key: moved to {done.quarantined}")
    emit(
        ctx,
        json,
        {
            "snapshot": f"sha256:{done.key}",
            "path": str(done.path),
            "size": done.size,
            "hit": done.hit,
            "quarantined": None if done.quarantined is None else str(done.quarantined),
        },
        lines,
    )


@snapshots.command("list")
@json_option
@click.pass_context
def list_(ctx: click.Context, json: bool) -> None:
    """The cached snapshots, least recently used first."""
    entries = _cache(ctx, None).entries()
    emit(
        ctx,
        json,
        {"snapshots": [{"snapshot": f"sha256:{k}", "size": s, "last_used": t} for k, s, t in entries]},
        [f"sha256:{k}  {count(s, 'byte')}" for k, s, _ in entries] or ["(the cache is empty)"],
    )
