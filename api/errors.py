"""Every failure becomes one shape, {code, message, detail}, here and only here."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from anchor.errors import AnchorError

log = logging.getLogger("anchor.api")


def _shape(status: int, code: str, message: str, detail: dict[str, object] | None = None) -> JSONResponse:
    return JSONResponse(status_code=status, content={"code": code, "message": message, "detail": detail or {}})


def anchor_error_response(exc: AnchorError) -> JSONResponse:
    """The answer to a typed error: its status, {code, message, detail}, and the header it implies."""
    headers = {"WWW-Authenticate": "Bearer"} if exc.http_status == 401 else None
    if exc.http_status == 429:
        headers = {"Retry-After": str(exc.detail.get("retry_after_s", 1))}
    response = _shape(exc.http_status, exc.code, exc.message, exc.detail)
    if headers:
        response.headers.update(headers)
    return response


def http_error_response(exc: StarletteHTTPException) -> JSONResponse:
    """The answer to an HTTP-level refusal (404, 405, a body too large or too slow: api.limits)."""
    code = {404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}.get(exc.status_code, "http_error")
    return _shape(exc.status_code, code, str(exc.detail))


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(AnchorError)
    async def anchor_error(_: Request, exc: AnchorError) -> JSONResponse:
        return anchor_error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{"field": ".".join(str(p) for p in e["loc"]), "message": e["msg"]} for e in exc.errors()]
        first = errors[0] if errors else {"field": "?", "message": "invalid"}
        return _shape(422, "bad_input", f"field '{first['field']}': {first['message']}", {"errors": errors})

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        return http_error_response(exc)

    @app.exception_handler(Exception)
    async def internal(_: Request, exc: Exception) -> JSONResponse:
        log.error("internal error: %s", type(exc).__name__)  # never the message: it could carry input
        return _shape(500, "internal", "internal error")
