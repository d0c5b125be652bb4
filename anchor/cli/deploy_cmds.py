"""`anchor deploy` and `anchor serve`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from anchor.cli.output import JsonFlag, emit, write_rendered


def register(app: typer.Typer) -> None:
    app.command()(deploy)
    app.command()(serve)


def deploy(
    ctx: typer.Context,
    force: Annotated[bool, typer.Option("--force", help="Deploy a new registry even if one is recorded.")] = False,
    json: JsonFlag = False,
) -> None:
    """Compile the registry with the pinned solc and deploy it, unless the recorded one is live."""
    from anchor.chain.compiler import compile_registry
    from anchor.chain.deployment import check_code, load_deployment
    from anchor.chain.deployment import deploy as deploy_registry
    from anchor.chain.keys import load_signer
    from anchor.chain.open import open_chain
    from anchor.errors import DeploymentMismatch, NotDeployed

    settings = ctx.find_root().obj["settings"]
    handle = open_chain(settings, start_local=True)
    existing = None
    if not force:
        try:
            existing = load_deployment(settings.data_dir, handle.chain_id)
            check_code(handle.w3, existing.address, existing.code_hash)
        except (NotDeployed, DeploymentMismatch):
            if existing is not None and not handle.local:
                raise  # never silently replace a recorded deployment on a real chain
            existing = None
    if existing is not None:
        record, verb = existing, "already deployed"
    else:
        compiled = compile_registry(settings.data_dir / "build")
        signer = load_signer(handle.chain_id, settings.keystore)
        record, verb = deploy_registry(handle.w3, handle.chain_id, signer, compiled, settings.data_dir), "deployed"
    from anchor.chain.artifact import CONTRACTS, LATEST, version_of
    from anchor.chain.presets import chain_name, verify_contract_command
    from anchor.chain.toolchain import compiler_settings

    name = CONTRACTS[version_of(record.code_hash) or LATEST]
    settings_ = compiler_settings()
    publish = verify_contract_command(
        record.chain_id, record.address, f"contracts/{name}.sol:{name}", settings_.solc_version,
        settings_.optimizer_runs, settings_.evm_version,
    )  # fmt: skip
    emit(
        ctx,
        json,
        {"status": verb, "deployment": record.model_dump(), "verify_contract": publish},
        [
            f"registry {verb} at {record.address} on {chain_name(record.chain_id)} ({name} {record.registry_version})",
            f"  code hash {record.code_hash}",
            f"  tx {record.tx_hash} (block {record.block_number})",
            *(
                ["  publish its source on the explorer (from foundry/, with ETHERSCAN_API_KEY set):", f"    {publish}"]
                if publish
                else []
            ),
        ],
    )


def serve(
    ctx: typer.Context,
    host: Annotated[str, typer.Option(help="Bind address.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port.")] = 8000,
    public_url: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--public-url", help="The URL people reach this service at (default: http://HOST:PORT)."),
    ] = None,
    render: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--render", help="Do not serve: render the service for a cluster (k8s: a replicated Deployment)."),
    ] = None,
    image: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(help="With --render: the container image, pinned by digest (name@sha256:<64 hex>)."),
    ] = None,
    replicas: Annotated[int, typer.Option(min=1, max=32, help="With --render: replicas of the Deployment.")] = 3,
    chain_rpc_url: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--chain-rpc-url", help="With --render: the chain's RPC URL as the pods reach it."),
    ] = None,
    keys_secret: Annotated[
        str, typer.Option(help="With --render: the Secret with ANCHOR_JOURNAL_URL, the key and ANCHOR_API_TOKENS.")
    ] = "anchor-keys",  # noqa: S107 - the name of a Secret object
    namespace: Annotated[Optional[str], typer.Option(help="With --render: the namespace.")] = None,  # noqa: UP045
    out: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--out", help="With --render: write here (refuses to overwrite)."),
    ] = None,
) -> None:
    """Serve the REST verification API and the explorer pages; links printed by `anchor lookup` follow.

    With --render k8s, print (or --out) Kubernetes objects instead: replicas sharing the PostgreSQL
    journal of the keys Secret, each with its own data directory, `/ready` as readiness probe."""
    import json
    import os

    if render is not None:
        _render_service(ctx, render, image, replicas, chain_rpc_url, public_url, keys_secret, namespace, out)
        return

    import uvicorn

    from anchor.chain.explorer import service_record
    from anchor.files import PRIVATE_FILE, atomic_write, private_dir

    settings = ctx.find_root().obj["settings"]
    private_dir(settings.data_dir)
    url = (public_url or f"http://{host}:{port}").rstrip("/")
    atomic_write(service_record(settings.data_dir), json.dumps({"public_url": url}).encode(), PRIVATE_FILE)
    os.environ["ANCHOR_DATA_DIR"] = str(settings.data_dir)
    if settings.rpc_url:
        os.environ["ANCHOR_RPC_URL"] = settings.rpc_url
    uvicorn.run("api.app:create_app", factory=True, host=host, port=port, log_level="info")


def _render_service(  # noqa: PLR0913 - the options of `serve --render`, passed through
    ctx: typer.Context,
    target: str,
    image: str | None,
    replicas: int,
    rpc_url: str | None,
    public_url: str | None,
    keys_secret: str,
    namespace: str | None,
    out: Path | None,
) -> None:

    from anchor.anchoring.k8s import ServiceSpec, render_service, to_yaml
    from anchor.chain.deployment import only_deployment
    from anchor.errors import BadInput

    if target != "k8s":
        raise BadInput(f"--render: unknown target {target!r} (hint: anchor serve --render k8s ...)",
                       detail={"field": "render"})  # fmt: skip
    settings = ctx.find_root().obj["settings"]
    missing = [name for name, value in (("--image", image), ("--chain-rpc-url", rpc_url or settings.rpc_url),
                                        ("--public-url", public_url)) if not value]  # fmt: skip
    if missing:
        raise BadInput(f"serve --render k8s needs {', '.join(missing)}", detail={"field": missing[0].lstrip("-")})
    record = only_deployment(settings.data_dir)  # a record every replica will accept
    spec = ServiceSpec(
        image=str(image), rpc_url=str(rpc_url or settings.rpc_url), deployment=record.model_dump(mode="json"),
        public_url=str(public_url), replicas=replicas, keys_secret=keys_secret, namespace=namespace,
    )  # fmt: skip
    write_rendered(
        to_yaml(render_service(spec)), out,
        f"a ConfigMap (the deployment record), a Deployment of {replicas} replica(s) with /ready as readiness probe,"
        f" a Service and a PodDisruptionBudget; create Secret {keys_secret!r} first (docs/deploy.md)",
    )  # fmt: skip
