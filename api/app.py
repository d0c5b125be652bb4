"""Application factory: `create_app()` reads the same settings as the CLI (ANCHOR_DATA_DIR, ANCHOR_RPC_URL)
and ApiConfig (ANCHOR_API_TOKENS, ANCHOR_API_MAX_REQUEST_BYTES)."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from anchor import __version__
from anchor.session import Settings
from api.config import ApiConfig
from api.errors import install_error_handlers
from api.reader import ChainReader
from api.routes import health, records, submit, verify


def create_app(settings: Settings | None = None, config: ApiConfig | None = None) -> FastAPI:
    app = FastAPI(
        title="Anchor verification API",
        version=__version__,
        description="Verify anchored research results against a live chain read; submit manifests for anchoring.",
    )
    app.state.settings = settings or Settings.from_env()
    app.state.config = config or ApiConfig.from_env()
    app.state.reader = ChainReader(app.state.settings)
    install_error_handlers(app)

    @app.middleware("http")
    async def limit_body(request: Request, call_next):  # type: ignore[no-untyped-def]
        limit = app.state.config.max_request_bytes
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            return JSONResponse(
                status_code=413,
                content={
                    "code": "request_too_large",
                    "message": f"request bodies are limited to {limit} bytes",
                    "detail": {},
                },
            )
        return await call_next(request)

    for module in (health, verify, records, submit):
        app.include_router(module.router)
    return app
