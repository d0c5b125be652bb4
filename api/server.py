"""Running the service as `anchor serve` does: what is checked before it starts, what it runs under, and
its two forms (`anchor serve`: the API with the explorer pages over a data dir; `anchor index`: the
explorer from the chain alone).

Why here and not in the command: how the service runs (which proxies are trusted, the open-file limit
its connection cap stays under, the slow-client protocol, where its public URL is recorded) is the
service's own decision, made once; `anchor serve` parses its options into `ServeOptions` (its options
are made from that model's fields) and calls `serve`, `anchor index` likewise with `IndexOptions`, and
anything else that starts the service (a container's entry point, a test) calls the same.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from anchor.errors import BadInput
from anchor.record import Value
from anchor.settings.session import Settings


def _given(default: Any, help: str, **cli: Any) -> Any:
    """A field of the options, with what `anchor serve` and `anchor index` say of it in `--help` (and the
    bounds and spelling of its option): the command line's options are made from these fields
    (anchor.cli.options.options_of), so each is declared here, once."""
    return field(default=default, metadata={"help": help, **cli})


@dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Listen(Value):
    """What both forms of the service take: where it listens, which proxies it trusts, the chain it reads."""

    host: str = _given("127.0.0.1", "Bind address.")
    port: int = _given(8000, "Port.")
    forwarded_allow_ips: str | None = _given(
        None,
        "Trust X-Forwarded-For / -Proto only from these proxies (comma-separated IPs or CIDRs; default: none, so"
        " clients are told apart by their own address: docs/deploy.md).",
    )
    rpc_urls: tuple[str, ...] = _given(
        (),
        "The chain to read (else the root's --rpc-url); repeated, several endpoints, as `anchor --rpc-url A"
        " --rpc-url B` gives.",
        flag="--rpc-url",
    )
    browser_rpc_url: str | None = _given(
        None, "The public RPC URL visitors' browsers read the registry through (no key in it)."
    )

    def __post_init__(self) -> None:
        """A port no socket can take is refused, never wrapped: `--port 99999` said "serving
        http://127.0.0.1:99999" while the socket listened on 34463 (99999 mod 65536)."""
        if not 1 <= self.port <= 65535:
            raise BadInput(f"--port {self.port}: expected a port number, 1 to 65535", detail={"field": "port"})


@dataclass(frozen=True, kw_only=True)
class ServeOptions(Listen):
    """What `anchor serve` was given (docs/api.md, docs/deploy.md): the API and the explorer pages over a
    data dir."""

    public_url: str | None = _given(None, "The URL people reach this service at (default: http://HOST:PORT).")
    calendar: bool = _given(
        False,
        "Also be a public calendar: anyone may stamp a manifest identity without a token (POST /v1/calendar),"
        " rate-limited per client, the queue bounded (docs/calendar.md).",
    )
    access_log: bool = _given(
        False,
        "Log one line per request (off by default: under load, formatting it cost a tenth of each request's time).",
    )


@dataclass(frozen=True, kw_only=True)
class IndexOptions(Listen):
    """What `anchor index` was given (docs/explorer.md): the explorer from the chain alone."""

    quorum: int | None = _given(
        None, "Endpoints (of --rpc-url given several times) that must agree; default a majority."
    )
    registry: str | None = _given(None, "Another registry than the canonical one.")
    index: Path | None = _given(None, "The index file (default: ~/.cache/anchor/index-CHAIN-REGISTRY.sqlite).")
    from_block: int | None = _given(None, "The registry's deployment block (default: found on chain).", min=0)
    confirmations: int = _given(12, "Blocks behind the head re-checked for reorgs.", min=1, max=10_000)
    claims: Path | None = _given(
        None, "A published research ledger; values that hash to the chain's records are shown."
    )
    repo: Path | None = _given(None, "A clone of the attempts' repository; diffs that hash to the records are shown.")


def serve(settings: Settings, options: ServeOptions) -> None:
    """Check the options, then serve the API and the explorer pages over `settings`' data dir until
    stopped. A bad option is `BadInput` before anything starts."""
    if options.browser_rpc_url:
        from anchor.chain.connection import browser_rpc_url as public_url_of

        settings = dataclasses.replace(settings, browser_rpc_urls=(public_url_of(options.browser_rpc_url) or "",))
    settings, _ = with_endpoints(settings, options)  # one named twice: refused now, not on every request

    import uvicorn

    from anchor.chain.explorer import service_record
    from anchor.files import PRIVATE_FILE, atomic_write, private_dir
    from api.app import create_app
    from api.config import ApiConfig

    config = ApiConfig.from_environment(settings.env)
    if options.calendar:
        config = config.model_copy(update={"calendar": True})
    if options.public_url is not None and not re.fullmatch(r"https?://[^\s\"'<>`]+", options.public_url):
        # recorded for `anchor lookup`'s links and said in the pages: a `javascript:` URL was taken as given
        raise BadInput(f"--public-url {options.public_url!r}: not an http(s) URL", detail={"field": "--public-url"})
    check_listenable(options.host, options.port)  # before a URL is recorded that nothing would serve
    private_dir(settings.data_dir)
    url = (options.public_url or f"http://{options.host}:{options.port}").rstrip("/")
    record = json.dumps({"public_url": url}).encode()
    atomic_write(service_record(settings.data_dir), record, PRIVATE_FILE)
    raise_file_limit()  # every connection is a descriptor; the connection cap stays below the limit
    sys.stderr.write(
        f"serving {url}: the explorer at {url}/explorer/, the browser check at {url}/verify,"
        f" the API and its docs at {url}/docs (data dir {settings.data_dir}; Ctrl-C stops it)"
        "\n"
    )
    # slow clients are bounded here, not by a proxy someone may not put in front (api/protocol.py);
    # the settings and the config reach the app as objects: nothing is handed over through the environment
    try:
        uvicorn.run(
            create_app(settings, config),
            host=options.host,
            port=options.port,
            log_level="info",
            access_log=options.access_log,
            http="api.protocol:DeadlineProtocol",
            **proxies(options.forwarded_allow_ips),
        )
    finally:  # stopped: `anchor lookup` links to no page nothing serves (unless another serve wrote its own)
        with contextlib.suppress(OSError):
            if service_record(settings.data_dir).read_bytes() == record:
                service_record(settings.data_dir).unlink()


def check_listenable(host: str, port: int) -> None:
    """`BadInput` naming --host or --port when the server could not listen there: uvicorn says so in a
    log line and exits 3, which is `not anchored` in our table, after `serve` had said it was serving."""
    import socket

    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise BadInput(
            f"--host {host}: not an address this machine can listen on ({exc})", detail={"field": "--host"}
        ) from None
    family, kind, proto, _, address = found[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is no owner
        try:
            probe.bind(address)
        except OSError as exc:
            raise BadInput(
                f"--port {port}: cannot listen on {host}:{port} ({exc.strerror}) (hint: another server"
                " holds it? give --port N)",
                detail={"field": "--port"},
            ) from None


def with_endpoints(settings: Settings, options: Listen) -> tuple[Settings, tuple[str, ...]]:
    """The settings with `serve --rpc-url` (repeated: several read endpoints, as `anchor --rpc-url A
    --rpc-url B` gives), and the endpoints read; `BadInput` for a list that names one twice."""
    from anchor.readback.quorum import read_endpoints

    if options.rpc_urls:
        several = options.rpc_urls if len(options.rpc_urls) > 1 else ()
        settings = dataclasses.replace(settings, rpc_url=options.rpc_urls[0], read_rpcs=several)
    return settings, tuple(url for url in read_endpoints(settings) if url)


def serve_index(settings: Settings, options: IndexOptions) -> None:
    """The explorer from the chain alone (`anchor index`): check everything before serving (a bad option
    is exit 2, not a page of errors), index up to the head with progress on stderr, then serve while
    following the chain."""
    import uvicorn

    from anchor.index.follow import progress_to_stderr
    from anchor.index.site import SiteOptions, open_site
    from anchor.manifest.onchain import parse_address
    from api.index_app import create_index_app

    settings, urls = with_endpoints(settings, options)
    if not urls:
        raise BadInput("`anchor index` needs --rpc-url (hint: anchor index --rpc-url URL)", detail={"field": "rpc_url"})
    check_listenable(options.host, options.port)  # before the chain is indexed, not after
    registry = options.registry
    if registry is None:  # the canonical registry, the same on every chain: checked by its code hash
        from anchor.chain.canonical import canonical_address

        registry = canonical_address()
    else:
        registry = parse_address(registry, "registry")
    site_options = SiteOptions(
        rpc_urls=urls,
        quorum=options.quorum,
        registry=registry,
        index=options.index,
        from_block=options.from_block,
        confirmations=options.confirmations,
        browser_rpc_url=options.browser_rpc_url,
        claims=options.claims,
        repo=options.repo,
    )
    site = open_site(site_options, progress=progress_to_stderr, env=settings.env)
    report = site.follower.sync()
    counts = site.follower.store.counts()
    site.follower.store.close()
    sys.stderr.write(
        f"index {site.path}: {counts['lineage']} lineage records, {counts['checkpoints']} checkpoints,"
        f" {counts['roots']} roots of registry"
        f" {site.follower.address} on chain {site.chain_id}, to block {report.cursor} (from block"
        f" {site.follower.from_block}; {site.rpc_label})\n"
        f"explorer at http://{options.host}:{options.port}/ (the browser check reads"
        f" {', '.join(site.browser_rpc_urls) or 'nothing: pass --browser-rpc-url'})\n"
        + "".join(f"  outvoted: {url} said {said}\n" for url, said in report.disagreeing.items())
    )
    served = open_site(
        site_options.model_copy(update={"index": site.path}), env=settings.env
    )  # the options as an object
    uvicorn.run(
        create_index_app(served),
        host=options.host,
        port=options.port,
        log_level="warning",
        **proxies(options.forwarded_allow_ips),
    )


def proxies(allowed: str | None) -> dict[str, Any]:
    """uvicorn's proxy settings: forwarded headers trusted from `allowed` only. uvicorn's own default
    trusts them from 127.0.0.1, so behind any local proxy (or any local client that sends the header)
    each request could claim a new client address and get a fresh calendar bucket (150 of 150
    accepted against 67 of 150 without the header)."""
    if not allowed:
        return {"proxy_headers": False}
    return {"proxy_headers": True, "forwarded_allow_ips": allowed}


def raise_file_limit() -> None:
    """The soft open-file limit raised to the hard one: what a server may have, and what the
    connection cap of api/protocol.py is kept below."""
    import contextlib
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
