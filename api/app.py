"""Application factory: `create_app()` reads the same settings as the CLI (ANCHOR_DATA_DIR, ANCHOR_RPC_URL)
and ApiConfig (ANCHOR_API_TOKENS, ANCHOR_API_MAX_REQUEST_BYTES)."""

from __future__ import annotations

import asyncio
import gc
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute

from anchor import __version__
from anchor.anchoring.flusher import Flusher
from anchor.ingest.untrusted_json import restore_recursion_limit
from anchor.settings.session import Settings
from api.config import ApiConfig
from api.deps import close_journals, in_journal, token_id
from api.errors import install_error_handlers
from api.headers import SecurityHeaders, origin
from api.limits import DirectRoutes, RequestGuard
from api.offload import start_decoder
from api.reader import ChainReader
from api.routes import browser_verify, calendar, explorer, health, missions, records, research, submit, verify

MULTIPART_OVERHEAD = 64 * 1024
"""Room for a multipart envelope around an upload that has its own, smaller cap."""


def _browser_rpc_origins(settings: Any) -> tuple[str, ...]:
    """The origins the /verify page reads the chain from (`browser_rpc_urls`, as the page gets them):
    the only ones besides this service a page may connect to."""
    from api.routes.browser_verify import browser_rpc_urls

    return tuple(dict.fromkeys(o for o in map(origin, browser_rpc_urls(settings)) if o))


def _offline_docs(app: FastAPI) -> None:
    """Swagger UI and ReDoc from the assets the fastapi-offline package ships (no CDN: the service and
    its docs work on a machine without internet, and no third-party script is loaded by a visitor)."""
    from pathlib import Path

    import fastapi_offline
    from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
    from fastapi.responses import HTMLResponse
    from fastapi.staticfiles import StaticFiles

    assets = Path(fastapi_offline.__file__).parent / "static"
    app.mount("/docs-assets", StaticFiles(directory=assets), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=f"{app.title} · docs",
            swagger_js_url="/docs-assets/swagger-ui-bundle.js",
            swagger_css_url="/docs-assets/swagger-ui.css",
            swagger_favicon_url="/docs-assets/favicon.png",
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url="/openapi.json",
            title=f"{app.title} · reference",
            redoc_js_url="/docs-assets/redoc.standalone.js",
            redoc_favicon_url="/docs-assets/favicon.png",
        )


async def _open_work(app: FastAPI) -> bool:
    """Is there work a flush would do? False when the journal cannot be read now: the service starts
    all the same, and `/ready` says what is wrong."""
    from anchor.errors import AnchorError
    from anchor.journal.status import has_open_work

    try:
        return await in_journal(app, has_open_work)
    except AnchorError:
        return False


NO_TELEMETRY: Any = {"tracing": False, "metrics": False, "logs": False}
"""FastAPI's built-in OpenTelemetry, off: it looked up the tracer, meter and logger providers (reading
the environment) on every request, 4% of the event loop's time under the calendar bench, and Anchor
exports no telemetry."""


def create_app(settings: Settings | None = None, config: ApiConfig | None = None) -> FastAPI:
    import web3  # noqa: F401 - imported now, so that the recursion limit it raises is lowered right away

    restore_recursion_limit()
    # The event loop answers every request, and pool threads do the CPU work (verdicts, pages,
    # journal reads): it must get the GIL back within a millisecond, not CPython's default 5 ms, or a
    # queue of busy threads holds it for a convoy of slices (/health p99 84 ms while six clients loaded
    # bundle pages; 8 ms at 1 ms: benchmarks/hostile_bench.py --bundle-page). Process-wide, and this
    # process is the server.
    sys.setswitchinterval(0.001)
    reader = ChainReader(settings or Settings.load())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        refresher = asyncio.create_task(reader.refresh_forever())
        app.state.decoder = start_decoder()
        # one background flusher per worker, started at the first submission's kick
        app.state.flusher = Flusher(reader.settings, "api-flush", interval_s=app.state.config.flush_interval_s)
        if app.state.config.flush_after_submit and await _open_work(app):
            app.state.flusher.kick()  # what a replica killed mid-flush left: finished without a new submission
        # Everything alive now (modules, web3 and its tables, models, routes) lives as long as the process:
        # out of the cyclic collector's sight. A full collection walked all of it, holding the GIL for
        # 85-180 ms about once a second while bundle pages were built (/health p99 79-90 ms); objects made
        # later are collected as before, and frozen ones are still freed when their last reference goes.
        # Once per process: a test process starting many apps freezes only what its first one found.
        if gc.get_freeze_count() == 0:
            gc.freeze()
        yield
        refresher.cancel()
        app.state.decoder.shutdown(wait=False, cancel_futures=True)
        await asyncio.get_running_loop().run_in_executor(None, app.state.flusher.close)
        close_journals(app)

    app = FastAPI(
        lifespan=lifespan,
        telemetry=NO_TELEMETRY,
        docs_url=None,  # served below from bundled assets: /docs must work with no internet
        redoc_url=None,
        title="Anchor verification API",
        version=__version__,
        description="Verify anchored research results against a live chain read; submit manifests for anchoring.",
    )
    app.state.settings = reader.settings
    app.state.config = config or ApiConfig.from_environment(reader.settings.env)
    app.state.reader = reader
    app.state.funded_address = None
    app.state.calendar_buckets = calendar.Buckets(app.state.config.calendar_rate, app.state.config.calendar_burst)
    app.state.calendar_backlog = calendar.Backlog()
    install_error_handlers(app)

    for module in (health, verify, records, research, submit, calendar, missions, explorer, browser_verify):
        app.include_router(module.router)
    browser_verify.mount_assets(app)
    _offline_docs(app)
    api_config: ApiConfig = app.state.config
    direct = {"/v1/manifests": submit.submit_manifest, "/v1/calendar": calendar.calendar_submit}
    app.add_middleware(DirectRoutes, fastapi_app=app, routes=direct)  # innermost: after the guard and headers
    app.add_middleware(SecurityHeaders, connect=_browser_rpc_origins(reader.settings))
    app.add_middleware(
        RequestGuard,
        limit=api_config.max_request_bytes,
        path_limits={"/v1/verify/proof": api_config.max_proof_bytes + MULTIPART_OVERHEAD},
        write_paths=frozenset(route.path for route in submit.router.routes if isinstance(route, APIRoute)),
        authorize=lambda headers, path: token_id(headers, api_config, path),
        body_timeout_s=api_config.body_timeout_s,
    )
    return app
