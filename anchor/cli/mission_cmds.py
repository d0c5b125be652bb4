"""`anchor mission check` and `anchor snapshot add|fetch|list`: missions and the data they run on."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from anchor.cli.data_cmds import EgressCidrOpt, GoneKeysSecretOpt, ServiceUrlOpt
from anchor.cli.options import JsonFlag, SandboxRuntimeOpt
from anchor.cli.output import count, emit, wants_json

missions = typer.Typer(help="Typed, immutable missions (docs/manifest.md, Mission).", no_args_is_help=True)
snapshots = typer.Typer(
    help="The content-addressed, read-only snapshot cache (keyed by SHA-256).", no_args_is_help=True
)
MaxBytes = Annotated[
    Optional[int],  # noqa: UP045
    typer.Option(
        "--max-bytes",
        min=1,
        help="Cache size cap; least recently used entries go first (else ANCHOR_SNAPSHOT_CACHE_BYTES).",
    ),
]


def register(root: typer.Typer) -> None:
    root.add_typer(missions, name="mission")
    root.add_typer(snapshots, name="snapshot")


@missions.command("check")
def check(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="A mission file (TOML, or JSON for .json).")],
    digest_only: Annotated[
        bool, typer.Option("--digest-only", help="Print only the digest, for `mission submit --mission-digest`.")
    ] = False,
    json: JsonFlag = False,
) -> None:
    """Validate a mission and print the one identity a result bundle binds (`mission_sha256`: the SHA-256
    of its canonical JSON, so reformatting the file changes nothing) and the digest `mission submit
    --mission-digest` asks for."""
    import hashlib

    from anchor.manifest.mission import load_mission

    mission, raw = load_mission(path)
    data = {"digest": "0x" + mission.digest.hex(), "sha256": mission.sha256(),
            "file_sha256": hashlib.sha256(raw).hexdigest(), "mission": mission.identity()}  # fmt: skip
    if digest_only and not wants_json(ctx, json):
        print(data["digest"])
        return
    covers = ", ".join(f"{k}={v}" for k, v in mission.covers.items()) or "nothing named"
    budget = f"{mission.budget.minutes} min, {count(mission.budget.attempts, 'attempt')}"
    emit(ctx, json, data, [
        f"OK: {path} is a mission (covers {covers}; budget {budget})",
        f"  mission_sha256  {data['sha256']}",
        "                  the identity its result bundles bind (SHA-256 of its canonical JSON)",
        f"  digest          {data['digest']}",
        "                  what `anchor mission submit --mission-digest` takes (BLAKE3, docs/manifest.md)",
    ])  # fmt: skip


@missions.command("submit")
def submit(
    ctx: typer.Context,
    mission: Annotated[Path, typer.Option("--mission", help="The mission file (TOML, or JSON for .json).")],
    mission_digest: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--mission-digest", help="The mission's digest as you know it (0x…): compared, never adopted."),
    ] = None,
    snapshot: Annotated[str, typer.Option("--snapshot", help="The data snapshot: a path or a URL.")] = "",
    snapshot_sha256: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--snapshot-sha256", help="Its SHA-256 (required)."),
    ] = None,
    image: Annotated[str, typer.Option("--image", help="The image, by digest: name@sha256:<64 hex>.")] = "",
    output: Annotated[str, typer.Option("--output", help="The output identity: never used before.")] = "",
    profile: Annotated[
        str, typer.Option("--profile", help="A declared resource profile: small, medium, large.")
    ] = "small",
    resume_bundle: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--resume-bundle", help="Resume from this anchored bundle (with --resume-digest)."),
    ] = None,
    resume_digest: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--resume-digest", help="... whose manifest digest is this (0x…)."),
    ] = None,
    json: JsonFlag = False,
) -> None:
    """Submit a mission through the dispatcher: everything is checked before anything is stored."""
    from anchor.errors import BadInput
    from anchor.manifest.mission import load_mission
    from anchor.missions.dispatch import SubmissionRequest
    from anchor.missions.dispatch import submit as dispatch

    for field, value in (("snapshot", snapshot), ("image", image), ("output", output)):
        if not value:
            raise BadInput(f"--{field} is required", detail={"field": field})
    settings = ctx.find_root().obj["settings"]
    document, _ = load_mission(mission)
    resume = (
        None if resume_bundle is None and resume_digest is None else {"bundle": resume_bundle, "digest": resume_digest}
    )
    request = SubmissionRequest.model_validate({
        "mission": {"ref": str(mission), "digest": mission_digest, "document": document.identity()},
        "snapshot": {"ref": snapshot, "sha256": snapshot_sha256}, "image": image, "output": output,
        "profile": profile, "resume": resume,
    })  # fmt: skip
    record = dispatch(request, settings.data_dir, _pin_verifier(settings), journal_url=settings.journal_url)
    emit(ctx, json, record, [
        f"submitted mission #{record['id']} at {record['submitted_at']}: output {record['output']!r},"
        f" profile {record['profile']['name']} ({record['profile']['cpu']} CPU, {record['profile']['memory']})",
        f"  mission  {record['mission']['digest']}",
        f"  snapshot sha256:{record['snapshot']['sha256']}",
        f"  image    {record['image']}",
        *( [f"  resumes  {record['resume']['bundle']} (0x{record['resume']['digest']})"] if record["resume"] else []),
    ])  # fmt: skip


@missions.command("run")
def run(
    ctx: typer.Context,
    output: Annotated[str, typer.Argument(help="The output identity of a dispatched mission (anchor mission submit).")],
    no_sandbox: Annotated[
        bool, typer.Option("--no-sandbox", help="Run the command unconfined (recorded in the proof).")
    ] = False,
    sandbox_runtime: SandboxRuntimeOpt = "bubblewrap",
    max_bytes: MaxBytes = None,
    service: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option(
            "--service",
            help="Anchor the bundle through this service (repeatable; token: ANCHOR_SERVICE_TOKEN): no funded key"
            " here, pending proofs at once, completed at the end when the service's batch is mined.",
        ),
    ] = None,
    stage: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--stage",
            help="In a pod (anchor mission render k8s): `prepare` (claim, snapshot into --workspace) or `seal`"
            " (hash and anchor what the command's own container left): the command runs between them, elsewhere.",
        ),
    ] = None,
    workspace: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--workspace", help="With --stage: the directory holding the snapshot/ and result/ volumes."),
    ] = None,
    json: JsonFlag = False,
) -> None:
    """Run a dispatched mission against its verified snapshot, measure its six milestones, and anchor
    the result bundle with its timing record (docs/missions.md)."""
    import sys

    from anchor.anchoring.stamper import Stamper
    from anchor.errors import BadInput
    from anchor.missions.runner import prepare_mission, run_mission, seal_mission

    def say(line: str) -> None:
        sys.stderr.write(line + "\n")

    from anchor.research.sandbox import check_runtime

    settings = ctx.find_root().obj["settings"]
    check_runtime(sandbox_runtime)  # before the mission is claimed
    if no_sandbox:
        from anchor.research.sandbox import refuse_unconfined

        refuse_unconfined(settings)  # before the mission is claimed
    if stage not in (None, "prepare", "seal") or (stage is None) != (workspace is None):
        raise BadInput("--stage: `prepare` or `seal`, and only with --workspace DIR (the rendered Job's steps)",
                       detail={"field": "stage"})  # fmt: skip
    stamper = Stamper.from_settings(settings, service)  # a bad --service is refused before the mission runs
    quiet = (lambda _: None) if json else say
    if stage == "prepare":
        assert workspace is not None
        prepared = prepare_mission(settings, output, _cache(ctx, max_bytes), workspace, quiet)
        emit(ctx, json, prepared, [f"mission {output!r} prepared: snapshot {prepared['snapshot']} (read-only for the"
                                   f" command), result {prepared['result']}"])  # fmt: skip
        return
    if stage == "seal":
        assert workspace is not None
        done = seal_mission(settings, output, workspace, stamper, quiet)
    else:
        cache = _cache(ctx, max_bytes)
        done = run_mission(
            settings, output, cache, sandbox=not no_sandbox, say=quiet, stamper=stamper, runtime=sandbox_runtime
        )
    if not done.outcome.anchored:
        _report_through(ctx, json, done, stamper)
        return
    manifest, proof = done.manifest, done.outcome.anchored_proof
    milestones = manifest.milestones.to_json() if manifest.milestones else {}
    data = {
        "output": done.output, "manifest_digest": "0x" + manifest.digest.hex(), "manifest": manifest.identity(),
        "milestones": milestones, "result": str(done.result_dir), "proof": str(done.proof), "sandbox": done.sandbox,
        "tx_hash": proof.anchor.tx_hash, "block_number": proof.anchor.block_number, "seconds": round(done.seconds, 3),
    }  # fmt: skip
    emit(ctx, json, data, [
        f"mission {done.output!r} ran ({done.sandbox}) in {done.seconds:.2f} s and its result bundle is anchored",
        f"  bundle   {data['manifest_digest']}  ({count(manifest.output.file_count, 'file')})",
        f"  in tx    {proof.anchor.tx_hash} (block {proof.anchor.block_number})",
        f"  result   {done.result_dir}",
        f"  proof    {done.proof}",
        f"  check:   anchor verify {done.result_dir}",
    ])  # fmt: skip


def _report_through(ctx: typer.Context, json: bool, done: Any, stamper: Any) -> None:
    """A mission stamped through services: wait for their batch (ANCHOR_UPGRADE_WAIT_S), upgrade the
    bundle's and the timing record's proofs, and say where each stands."""
    from anchor.proof.locate import timing_proof_path

    proofs = [done.proof, *[p for p in [timing_proof_path(done.proof)] if p.is_file()]]
    results = stamper.complete(proofs)
    complete = [p for p, r in results.items() if getattr(r, "complete", False)]
    manifest = done.manifest
    data = {
        "output": done.output, "manifest_digest": "0x" + manifest.digest.hex(), "manifest": manifest.identity(),
        "result": str(done.result_dir), "proof": str(done.proof), "sandbox": done.sandbox,
        "services": [r.url for r in done.outcome.receipts], "complete": len(complete) == len(proofs),
        "seconds": round(done.seconds, 3),
    }  # fmt: skip
    state = "anchored through" if data["complete"] else "pending at"
    emit(ctx, json, data, [
        f"mission {done.output!r} ran ({done.sandbox}) in {done.seconds:.2f} s; its result bundle is {state}"
        f" {', '.join(data['services'])}",
        f"  bundle   {data['manifest_digest']}  ({count(manifest.output.file_count, 'file')})",
        f"  result   {done.result_dir}",
        f"  proof    {done.proof}" + ("" if data["complete"] else " (pending: anchor upgrade it later)"),
        f"  check:   anchor verify {done.result_dir}",
    ])  # fmt: skip


@missions.command("list")
def list_missions(ctx: typer.Context, json: JsonFlag = False) -> None:
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
def status(
    ctx: typer.Context,
    output: Annotated[str, typer.Argument(help="The output identity of a dispatched mission.")],
    json: JsonFlag = False,
) -> None:
    """One dispatched mission: what it binds, where its run stands, where its result and proof are."""
    from anchor.errors import NotAnchored
    from anchor.missions.runner import mission_states

    settings = ctx.find_root().obj["settings"]
    found = mission_states(settings.data_dir, output)
    if not found:
        raise NotAnchored(f"output: no dispatched mission has output {output!r} (see `anchor mission list`)",
                          detail={"field": "output"})  # fmt: skip
    m = found[0]
    data = m.to_json()
    mission_dir = settings.layout.mission(output)
    failed = sorted(p.name for p in mission_dir.glob("result.failed-*")) if mission_dir.is_dir() else []
    next_step = {
        "dispatched": f"run it: anchor mission run {output}",
        "interrupted": f"its runner stopped before the end; run it again: anchor mission run {output}",
        "failed": f"see {mission_dir / 'run.log'}; it may run again: anchor mission run {output}",
        "running": "it is running",
        "done": f"check it: anchor verify {m.result}",
    }[m.state]
    emit(ctx, json, {**data, "failed_results": failed}, [
        f"mission {output!r}: {m.state}" + (f" (since {m.updated_at})" if m.updated_at else ""),
        f"  submitted       {m.submitted_at}",
        f"  mission_sha256  {data['mission_sha256']}",
        f"  snapshot        sha256 {data['snapshot_sha256']}",
        f"  image           {data['image']}",
        f"  profile         {data['profile']}",
        *([f"  resumes         {data['resume']['digest']}"] if data["resume"] else []),
        *([f"  bundle          {data['bundle']}", f"  result          {m.result}"] if m.bundle else []),
        *([f"  failed runs     {', '.join(failed)} (kept in {mission_dir})"] if failed else []),
        f"  next            {next_step}",
    ])  # fmt: skip


@missions.command("render")
def render(
    ctx: typer.Context,
    target: Annotated[str, typer.Argument(help="What to render: k8s (a Job running the dispatched mission).")],
    output: Annotated[str, typer.Argument(help="The output identity of a dispatched mission.")],
    chain_rpc_url: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--chain-rpc-url", help="The chain's RPC URL as the pod reaches it (ANCHOR_RPC_URL)."),
    ] = None,
    service_url: ServiceUrlOpt = None,
    token_secret: Annotated[
        str, typer.Option(help="The Secret whose key `token` is the service token (scope: submit).")
    ] = "anchor-service-token",  # noqa: S107 - the name of a Secret object
    keys_secret: GoneKeysSecretOpt = None,
    results_claim: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="A PersistentVolumeClaim the result directory is written to (else it leaves with the pod)."),
    ] = None,
    namespace: Annotated[Optional[str], typer.Option(help="The namespace.")] = None,  # noqa: UP045
    anchor_image: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--anchor-image",
            help="The anchor image (name@sha256:…) that prepares and seals; it alone holds"
            " the token. The mission's command runs in the dispatched image, apart.",
        ),
    ] = None,
    egress_cidr: EgressCidrOpt = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="Write here (refuses to overwrite).")] = None,  # noqa: UP045
) -> None:
    """Render a dispatched mission for a cluster: a ConfigMap, a Job and its NetworkPolicy. Trusted steps
    (the anchor image) fetch and verify the snapshot, then hash and anchor the result; the mission's
    command runs between them in its own container, on its profile, with no key and no network."""
    from anchor.anchoring.k8s import to_yaml
    from anchor.chain.deployment import only_deployment
    from anchor.cli.output import write_rendered
    from anchor.errors import BadInput, NotAnchored
    from anchor.missions.k8s import render_job

    if target != "k8s":
        raise BadInput(f"render: unknown target {target!r} (hint: anchor mission render k8s OUTPUT ...)",
                       detail={"field": "target"})  # fmt: skip
    _no_funded_key(keys_secret, service_url)
    assert service_url is not None
    if anchor_image is None:
        raise BadInput("--anchor-image is required: the anchor image (name@sha256:…) that prepares and seals the"
                       " mission, apart from the submitter's image", detail={"field": "anchor_image"})  # fmt: skip
    settings = ctx.find_root().obj["settings"]
    rpc_url = chain_rpc_url or settings.rpc_url
    if not rpc_url:
        raise BadInput("--chain-rpc-url is required (the chain as the pod reaches it)", detail={"field": "rpc_url"})
    from anchor.missions.dispatch import dispatched

    record = dispatched(settings.data_dir, output)
    if record is None:
        raise NotAnchored(f"output: no dispatched mission has output {output!r} (hint: anchor mission submit)",
                          detail={"field": "output"})  # fmt: skip
    if not record["snapshot"]["ref"].startswith(("https://", "http://")):
        raise BadInput(
            f"snapshot: {record['snapshot']['ref']!r} is a path on this machine; a pod fetches an http(s) URL"
            " (submit the mission with --snapshot URL)",
            detail={"field": "snapshot"},
        )
    deployment = only_deployment(settings.data_dir).model_dump(mode="json")
    documents = render_job(record, deployment, rpc_url, service_url, anchor_image, token_secret, results_claim,
                           namespace, tuple(egress_cidr or ()))  # fmt: skip
    write_rendered(to_yaml(documents), out, f"a ConfigMap, a Job and its NetworkPolicy for mission output {output!r}")


def _no_funded_key(keys_secret: str | None, service_url: str | None) -> None:
    """A rendered mission holds no funded key (docs/calendar.md): it anchors through the service."""
    from anchor.errors import BadInput

    if keys_secret is not None:
        raise BadInput("--keys-secret: a mission pod no longer gets the funded key; give --service-url URL and"
                       " --token-secret NAME (a Secret whose key `token` is a submit-only service token)",
                       detail={"field": "keys_secret"})  # fmt: skip
    if service_url is None:
        raise BadInput("--service-url is required: the pod anchors through the service that holds the funded key"
                       " (hint: --service-url http://anchor:8000)", detail={"field": "service_url"})  # fmt: skip


def _pin_verifier(settings: Any) -> Any:
    """A resume pin is anchored when its proof verifies against a live read of the chain."""

    def verify(proof: Any) -> None:
        from anchor.readback.verifier import leaned_on

        leaned_on(proof, settings)

    return verify


def _cache(ctx: typer.Context, max_bytes: int | None) -> Any:
    from anchor.missions.snapshots import SnapshotCache
    from anchor.settings.env import env

    settings = ctx.find_root().obj["settings"]
    cap = max_bytes or env().snapshot_cache_bytes or None
    return SnapshotCache(settings.layout.snapshots, cap)


@snapshots.command("add")
def add(
    ctx: typer.Context,
    path: Annotated[Path, typer.Argument(help="A snapshot file (an archive, a table).")],
    max_bytes: MaxBytes = None,
    json: JsonFlag = False,
) -> None:
    """Put a local file in the cache under its SHA-256 (read-only)."""
    done = _cache(ctx, max_bytes).add(path)
    emit(ctx, json, {"snapshot": f"sha256:{done.key}", "path": str(done.path), "size": done.size, "hit": done.hit},
         [f"sha256:{done.key}  {path} ({count(done.size, 'byte')}){' (already cached)' if done.hit else ''}",
          f"  cached at {done.path} (read-only)"])  # fmt: skip


@snapshots.command("fetch")
def fetch(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="sha256:<64 hex>")],
    source: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--from", help="Where to get it if the cache has no good copy: a path or an http(s) URL."),
    ] = None,
    max_bytes: MaxBytes = None,
    json: JsonFlag = False,
) -> None:
    """The snapshot for KEY: the cached copy if it still hashes to KEY, else fetched and verified."""
    done = _cache(ctx, max_bytes).fetch(key, source)
    state = "hit: verified, nothing transferred" if done.hit else f"fetched {count(done.size, 'byte')}, verified"
    lines = [f"sha256:{done.key}  {state}", f"  at {done.path} (read-only)"]
    if done.quarantined is not None:
        lines.insert(1, f"  the cached copy did not hash to its key: moved to {done.quarantined}")
    emit(ctx, json, {"snapshot": f"sha256:{done.key}", "path": str(done.path), "size": done.size, "hit": done.hit,
                     "quarantined": None if done.quarantined is None else str(done.quarantined)}, lines)  # fmt: skip


@snapshots.command("list")
def list_(ctx: typer.Context, json: JsonFlag = False) -> None:
    """The cached snapshots, least recently used first."""
    entries = _cache(ctx, None).entries()
    emit(ctx, json, {"snapshots": [{"snapshot": f"sha256:{k}", "size": s, "last_used": t} for k, s, t in entries]},
         [f"sha256:{k}  {count(s, 'byte')}" for k, s, _ in entries] or ["(the cache is empty)"])  # fmt: skip
