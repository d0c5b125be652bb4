"""Application factory: `create_app()` reads the same settings as the CLI (ANCHOR_DATA_DIR, ANCHOR_RPC_URL)."""

from __future__ import annotations

from fastapi import FastAPI

from anchor import __version__
from anchor.session import Settings
from api.errors import install_error_handlers
from api.routes import health, verify


def create_app(settings: Settings | None = None) -> FastAPI:
    app = FastAPI(title="Anchor verification API", version=__version__)
    app.state.settings = settings or Settings.from_env()
    install_error_handlers(app)
    app.include_router(health.router)
    app.include_router(verify.router)
    return app
