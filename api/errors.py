"""Domain errors become HTTP answers here, and only here: one shape {code, message, detail}."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from anchor.errors import AnchorError


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(AnchorError)
    async def anchor_error(_: Request, exc: AnchorError) -> JSONResponse:
        return JSONResponse(status_code=exc.http_status, content=exc.to_dict())
