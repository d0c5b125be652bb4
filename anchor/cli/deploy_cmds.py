"""`anchor deploy` and `anchor serve`."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from anchor.cli.options import JsonFlag
from anchor.cli.output import emit, write_rendered
from anchor.errors import BadInput


def register(app: typer.Typer) -> None:
    app.command()(deploy)
    app.command()(serve)


def deploy(ctx: typer.Context, json: JsonFlag = False) -> None:
    """Put the registry at its canonical address (the same on every chain) and record it; where it
    already is, record it and send nothing."""
    from anchor.chain.canonical import PROXY, SALT, canonical_address, init_code
    from anchor.chain.compiler import compile_registry
    from anchor.chain.deployment import check_code, load_deployment
    from anchor.chain.deployment import deploy as deploy_registry
    from anchor.chain.keys import load_signer
    from anchor.chain.open import open_chain
    from anchor.errors import DeploymentMismatch, NotDeployed
    from anchor.manifest.keccak import keccak256

    settings = ctx.find_root().obj["settings"]
    handle = open_chain(settings, start_local=True)
    existing = None
    try:
        existing = load_deployment(settings.data_dir, handle.chain_id)
        check_code(handle.rpc, existing.address, existing.code_hash)
    except (NotDeployed, DeploymentMismatch):
        existing = None  # none, a reset local chain, or a retired version's: the canonical one replaces it
    if existing is not None and existing.address == canonical_address():
        record, verb = existing, "already deployed"
    else:
        signer = load_signer(handle.chain_id, settings.keystore)
        record = deploy_registry(handle.w3, handle.chain_id, signer, compile_registry(), settings.data_dir)
        verb = "deployed" if record.tx_hash else "already on this chain (recorded; nothing sent)"
    from anchor.chain.artifact import CONTRACTS, LATEST, version_of
    from anchor.chain.presets import chain_name, verify_contract_command
    from anchor.chain.toolchain import checkout, compiler_settings

    name = CONTRACTS[version_of(record.code_hash) or LATEST]
    settings_ = compiler_settings()
    publish = verify_contract_command(
        record.chain_id, record.address, f"contracts/{name}.sol:{name}", settings_.solc_version,
        settings_.optimizer_runs, settings_.evm_version,
    )  # fmt: skip
    derivation = {
        "proxy": PROXY, "salt": "0x" + SALT.hex(), "init_code_hash": "0x" + keccak256(init_code()).hex(),
        "address": canonical_address(),
    }  # fmt: skip
    emit(
        ctx,
        json,
        {"status": verb, "deployment": record.model_dump(), "canonical": derivation, "verify_contract": publish},
        [
            f"registry {verb} at {record.address} on {chain_name(record.chain_id)} ({name} {record.registry_version})",
            f"  code hash {record.code_hash} (check it: cast keccak $(cast code {record.address} --rpc-url URL))",
            f"  canonical: CREATE2 by {PROXY}, salt {derivation['salt']}, init code hash"
            f" {derivation['init_code_hash']}: the same address on every chain",
            *([f"  tx {record.tx_hash} (block {record.block_number})"] if record.tx_hash else []),
            *(
                [f"  publish its source on the explorer ({_where_to_publish(checkout())}):", f"    {publish}"]
                if publish
                else []
            ),
        ],
    )


def _where_to_publish(root: Path | None) -> str:
    """forge needs the registry's sources and foundry.toml: a wheel has neither, so a wheel user is told
    where to get them rather than sent to a foundry/ folder they do not have."""
    if root is not None:
        return f"from {root / 'foundry'}, with ETHERSCAN_API_KEY set"
    return (
        "needs Foundry and a clone of Anchor's source at this version:"
        " run it from its foundry/, with ETHERSCAN_API_KEY set"
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
    index_only: Annotated[
        bool,
        typer.Option(
            "--index-only", help="Serve an explorer from the chain alone: no data directory, journal or ledger."
        ),
    ] = False,
    calendar: Annotated[
        bool,
        typer.Option(
            "--calendar",
            help="Also be a public calendar: anyone may stamp a manifest identity without a token (POST /v1/calendar),"
            " rate-limited per client, the queue bounded (docs/calendar.md).",
        ),
    ] = False,
    access_log: Annotated[
        bool,
        typer.Option(
            "--access-log",
            help="Log one line per request (off by default: under load, formatting it cost a"
            " tenth of each request's time).",
        ),
    ] = False,
    forwarded_allow_ips: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--forwarded-allow-ips",
            help="Trust X-Forwarded-For / -Proto only from these proxies (comma-separated IPs or CIDRs; default:"
            " none, so clients are told apart by their own address: docs/deploy.md).",
        ),
    ] = None,
    rpc_url: Annotated[Optional[str], typer.Option("--rpc-url", help="With --index-only: the chain to read.")] = None,  # noqa: UP045
    registry: Annotated[
        str | None, typer.Option("--registry", help="With --index-only: another registry than the canonical one.")
    ] = None,  # noqa: UP045
    index: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--index", help="With --index-only: the index file (default: ~/.cache/anchor/index-CHAIN-REGISTRY.sqlite)."
        ),
    ] = None,
    from_block: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--from-block", min=0, help="With --index-only: the registry's deployment block (default: found on chain)."
        ),
    ] = None,
    confirmations: Annotated[
        int, typer.Option(min=1, max=10_000, help="With --index-only: blocks behind the head re-checked for reorgs.")
    ] = 12,
    browser_rpc_url: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--browser-rpc-url", help="The public RPC URL visitors' browsers read the registry through (no key in it)."
        ),
    ] = None,
    claims: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--claims",
            help="With --index-only: a published research ledger; values that hash to the chain's records are shown.",
        ),
    ] = None,
    repo: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option(
            "--repo",
            help="With --index-only: a clone of the attempts' repository; diffs that hash to the records are shown.",
        ),
    ] = None,
) -> None:
    """Serve the REST verification API and the explorer pages; links printed by `anchor lookup` follow.

    With --index-only, serve an explorer that needs only the chain: the registry's events, followed
    from its deployment block into an index of its own, searchable by commit, researcher, root or tx.

    With --render k8s, print (or --out) Kubernetes objects instead: replicas sharing the PostgreSQL
    journal of the keys Secret, each with its own data directory, `/ready` as readiness probe."""
    import json

    if render is not None:
        _render_service(ctx, render, image, replicas, chain_rpc_url, public_url, keys_secret, namespace, out)
        return
    if index_only:
        _serve_index(
            ctx, host, port, rpc_url, registry, index, from_block, confirmations, browser_rpc_url, claims, repo,
            forwarded_allow_ips,
        )  # fmt: skip
        return
    for name, given in (("--registry", registry), ("--index", index), ("--claims", claims), ("--repo", repo),
                        ("--from-block", from_block)):  # fmt: skip
        if given is not None:
            raise BadInput(f"{name} is an option of --index-only (hint: anchor serve --index-only {name} ...)",
                           detail={"field": name.lstrip("-")})  # fmt: skip
    import dataclasses

    settings = ctx.find_root().obj["settings"]
    if browser_rpc_url:
        from anchor.chain.connection import browser_rpc_url as public_url_of

        settings = dataclasses.replace(settings, browser_rpc_urls=(public_url_of(browser_rpc_url) or "",))
    if rpc_url:
        settings = dataclasses.replace(settings, rpc_url=rpc_url)

    import uvicorn

    from anchor.chain.explorer import service_record
    from anchor.files import PRIVATE_FILE, atomic_write, private_dir
    from api.app import create_app
    from api.config import ApiConfig

    config = ApiConfig.from_env()
    if calendar:
        config = config.model_copy(update={"calendar": True})
    private_dir(settings.data_dir)
    url = (public_url or f"http://{host}:{port}").rstrip("/")
    atomic_write(service_record(settings.data_dir), json.dumps({"public_url": url}).encode(), PRIVATE_FILE)
    _raise_file_limit()  # every connection is a descriptor; the connection cap stays below the limit
    import sys

    sys.stderr.write(f"serving {url}: the explorer at {url}/explorer/, the browser check at {url}/verify,"
                     f" the API and its docs at {url}/docs (data dir {settings.data_dir}; Ctrl-C stops it)"
                     "\n")  # fmt: skip
    # slow clients are bounded here, not by a proxy someone may not put in front (api/protocol.py)
    # the settings and the config reach the app as objects: nothing is handed over through the environment
    uvicorn.run(create_app(settings, config), host=host, port=port, log_level="info", access_log=access_log,
                http="api.protocol:DeadlineProtocol", **_proxies(forwarded_allow_ips))  # fmt: skip


def _proxies(allowed: str | None) -> dict[str, Any]:
    """uvicorn's proxy settings: forwarded headers trusted from `allowed` only. uvicorn's own default
    trusts them from 127.0.0.1, so behind any local proxy (or any local client that sends the header)
    each request could claim a new client address and get a fresh calendar bucket (issue 42: 150 of 150
    accepted against 67 of 150 without the header)."""
    if not allowed:
        return {"proxy_headers": False}
    return {"proxy_headers": True, "forwarded_allow_ips": allowed}


def _raise_file_limit() -> None:
    """The soft open-file limit raised to the hard one: what a server may have, and what the
    connection cap of api/protocol.py is kept below."""
    import contextlib
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _serve_index(  # noqa: PLR0913 - the options of `serve --index-only`, passed through
    ctx: typer.Context,
    host: str,
    port: int,
    rpc_url: str | None,
    registry: str | None,
    index: Path | None,
    from_block: int | None,
    confirmations: int,
    public_rpc: str | None,
    claims: Path | None,
    repo: Path | None,
    forwarded_allow_ips: str | None = None,
) -> None:
    """Check everything before serving (a bad option is exit 2, not a page of errors), index up to the
    head with progress on stderr, then serve while following the chain."""
    import sys

    import uvicorn

    from anchor.index.follow import progress_to_stderr
    from anchor.index.site import SiteOptions, open_site
    from anchor.settings.session import endpoint_of as redact_url

    url = rpc_url or ctx.find_root().obj["settings"].rpc_url
    if not url:
        raise BadInput("--index-only needs --rpc-url (hint: anchor serve --index-only --rpc-url URL)",
                       detail={"field": "rpc_url"})  # fmt: skip
    if registry is None:  # the canonical registry, the same on every chain: checked by its code hash
        from anchor.chain.canonical import canonical_address

        registry = canonical_address()
    elif not re.fullmatch(r"0x[0-9a-fA-F]{40}", registry):
        raise BadInput(f"--registry: expected the registry's 0x address (40 hex), got {registry!r}",
                       detail={"field": "registry"})  # fmt: skip
    options = SiteOptions(rpc_url=url, registry=registry, index=index, from_block=from_block,
                          confirmations=confirmations, browser_rpc_url=public_rpc, claims=claims,
                          repo=repo)  # fmt: skip
    site = open_site(options, progress=progress_to_stderr)
    report = site.follower.sync()
    counts = site.follower.store.counts()
    site.follower.store.close()
    sys.stderr.write(
        f"index {site.path}: {counts['lineage']} lineage records, {counts['roots']} roots of registry"
        f" {site.follower.address} on chain {site.chain_id}, to block {report.cursor} (from block"
        f" {site.follower.from_block}; {redact_url(url)})\n"
        f"explorer at http://{host}:{port}/ (the browser check reads"
        f" {site.browser_rpc_url or 'nothing: pass --browser-rpc-url'})\n"
    )
    from api.index_app import create_index_app

    served = open_site(options.model_copy(update={"index": site.path}))  # the options as an object, not a variable
    uvicorn.run(create_index_app(served), host=host, port=port, log_level="warning",
                **_proxies(forwarded_allow_ips))  # fmt: skip


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
