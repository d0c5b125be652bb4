"""`anchor index`: an explorer that needs only the chain.

No data directory, journal or ledger of ours is opened: the pages read the chain-only index
(anchor/index), which a background task keeps in step with the registry (one sync per second, each
reorg-checked). What the chain holds only as hashes (metric values, diffs) is shown when a published
source supplies it and it matches (anchor/index/claims.py). The browser verification page needs no
index at all: the visitor's browser hashes the files and reads the registry itself.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from anchor import __version__
from anchor.errors import AnchorError
from api.errors import install_error_handlers
from api.headers import SecurityHeaders, origin

if TYPE_CHECKING:
    from anchor.index.site import IndexSite

SYNC_EVERY_S = 1.0
log = logging.getLogger("anchor.index")


def create_index_app(site: IndexSite) -> FastAPI:
    from api.routes import browser_verify, index_site

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async def follow() -> None:
            while True:
                try:
                    await run_in_threadpool(site.sync)
                    site.last_error = None
                except AnchorError as exc:
                    site.last_error = exc.message  # shown on every page; the last index stays readable
                    log.warning("index sync failed: %s", exc.code)
                await asyncio.sleep(SYNC_EVERY_S)

        task = asyncio.create_task(follow())
        yield
        task.cancel()

    from api.app import NO_TELEMETRY

    app = FastAPI(
        lifespan=lifespan,
        telemetry=NO_TELEMETRY,
        title="Anchor chain-only explorer",
        version=__version__,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.site = site
    app.state.verify_config = browser_verify.BrowserConfig(
        chain_id=site.chain_id,
        registry=site.follower.address,
        code_hash=site.follower.code_hash,
        rpc_url=site.browser_rpc_urls[0] if site.browser_rpc_urls else None,
        rpc_urls=site.browser_rpc_urls if len(site.browser_rpc_urls) > 1 else (),
    )
    install_error_handlers(app)
    origins = tuple(o for o in (origin(url) for url in site.browser_rpc_urls) if o)
    app.add_middleware(SecurityHeaders, connect=origins)
    index_site.install_error_pages(app)
    app.include_router(index_site.router)
    app.include_router(browser_verify.router)
    browser_verify.mount_assets(app)
    return app
