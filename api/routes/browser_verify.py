"""The verify-in-your-browser page: a person picks (or drops) a file or a folder and its proof file;
the browser hashes them and reads the registry through the RPC endpoint this service names. The files
never leave the machine: the page's only requests are JSON-RPC reads (tests/test_browser_verify.py
watches every request Chromium makes).

The hashing runs client-side: hash-wasm (npm, MIT; vendored in api/static/vendor, byte-identical to
the npm release, which the tests check) for BLAKE3 of contents and keccak-256, and
api/static/blake3-derive.js for BLAKE3 derive_key. Served by this service: no CDN.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, ConfigDict
from starlette.concurrency import run_in_threadpool

from api.pages import page

STATIC = Path(__file__).resolve().parents[1] / "static"

router = APIRouter(include_in_schema=False)


class BrowserConfig(BaseModel):
    """What the page trusts: one registry, by address and code hash, on one chain, read through one URL
    or, with several (`rpc_urls`), through all of them, a majority agreeing, as `anchor verify` reads a
    quorum of `--rpc-url`s (anchor/readback/quorum.py; verify.js follows the same rule)."""

    model_config = ConfigDict(frozen=True)

    chain_id: int
    registry: str
    code_hash: str
    rpc_url: str | None
    rpc_urls: tuple[str, ...] = ()
    """Every endpoint the page reads when there are several (the service's read endpoints, or
    ANCHOR_BROWSER_RPC_URL listing several); empty: `rpc_url` alone."""
    canonical_registry: str = ""
    """The canonical registry's address (the same on every chain): the one registry a sealed proof is
    checked against offline, a trusted block hash typed in (no request is made then)."""

    def model_post_init(self, context: Any) -> None:
        if not self.canonical_registry:
            from anchor.chain.canonical import canonical_address

            object.__setattr__(self, "canonical_registry", canonical_address())


def browser_rpc_urls(settings: Any) -> tuple[str, ...]:
    """The endpoints a visitor's browser reads the chain from, each safe to publish: those listed in
    ANCHOR_BROWSER_RPC_URL (comma-separated), else the service's read endpoints (`--rpc-url` given
    several times, ANCHOR_READ_RPCS), else its RPC URL or the local chain. A URL with a path, query or
    credentials (a hosted provider's key) is left out, never put in a page. The page's Content-Security-
    Policy lets it connect to exactly these (api/app.py)."""

    from anchor.chain.connection import browser_rpc_url
    from anchor.chain.node import LocalChain
    from anchor.errors import BadInput

    listed = list(settings.browser_rpc_urls)
    urls = (
        listed
        or list(settings.read_rpcs)
        or [settings.rpc_url or LocalChain(settings.data_dir, settings.local_port).rpc_url]
    )
    safe = []
    for url in urls:
        try:
            safe.append(browser_rpc_url(url))
        except BadInput:
            continue
    return tuple(u for u in safe if u)


def mount_assets(app: FastAPI) -> None:
    from fastapi.staticfiles import StaticFiles

    app.mount("/assets", StaticFiles(directory=STATIC), name="assets")


def _service_config(request: Request) -> BrowserConfig:
    """The full service's registry (its deployment record) and the browser-safe RPC URLs it has."""
    reader = request.app.state.reader
    registry = reader.registry()
    urls = browser_rpc_urls(reader.settings)
    return BrowserConfig(
        chain_id=registry.chain_id,
        registry=registry.address,
        code_hash=registry.code_hash,
        rpc_url=urls[0] if urls else None,
        rpc_urls=urls if len(urls) > 1 else (),
    )


@router.get("/verify", response_class=HTMLResponse)
async def verify_page(request: Request) -> HTMLResponse:
    config: BrowserConfig | None = getattr(request.app.state, "verify_config", None)
    if config is None:
        config = await run_in_threadpool(_service_config, request)
    site = getattr(request.app.state, "site", None)
    base = "index/base.html" if site is not None else "base.html"
    from anchor.chain.presets import chain_name

    header = {
        "registry": config.registry,
        "chain_id": config.chain_id,
        "chain": chain_name(config.chain_id),
        "rpc": config.rpc_url or "—",
        "error": None,
    }
    return page("verify.html", "Verify files in your browser", None, base=base, site=header, config=config.model_dump())
