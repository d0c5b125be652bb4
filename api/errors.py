"""Every failure becomes one shape, {code, message, detail}, here and only here."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
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


def _http_code(exc: StarletteHTTPException) -> str:
    return {404: "not_found", 405: "method_not_allowed", 413: "request_too_large"}.get(exc.status_code, "http_error")


def http_error_response(exc: StarletteHTTPException) -> JSONResponse:
    """The answer to an HTTP-level refusal (404, 405, a body too large or too slow: api.limits)."""
    return _shape(exc.status_code, _http_code(exc), str(exc.detail))


_PATTERN_WORDS = {
    r"^(0x)?[0-9a-fA-F]{64}$": "expected 32 bytes as 64 hex digits (0x optional)",
    r"^(0x)?([0-9a-fA-F]{40}|[0-9a-fA-F]{64})$": "expected a commit id (40 hex digits) or a 32-byte hash (64)",
    r"^(0x)?[0-9a-fA-F]{7,64}$": "expected a commit id (7 or more of its 40 hex digits) or its 32-byte key (64)",
    r"^[0-9a-f]{12}$": "expected a search id, 12 lowercase hex digits, as the attempts list it",
    r"^0x[0-9a-fA-F]{40}$": "expected an address, 0x and 40 hex digits",
}
"""The patterns the routes declare (api/routes), said in words: pydantic says the regular expression."""


def refused_parameter(errors: Sequence[Any]) -> tuple[str, str]:
    """The message and `detail.field` of a request FastAPI refused, as docs/api.md promises for every
    refused input: it opens with the parameter as the query string, the path or the body spells it
    (`limit`, `manifest_digest`, `manifest.files`), then the value given when it is short, then why."""
    first: dict[str, Any] = dict(errors[0]) if errors else {"loc": (), "msg": "invalid"}
    loc = [str(part) for part in first.get("loc", ())]
    field = ".".join(loc[1:] if loc[:1] and loc[0] in ("path", "query", "body", "header") else loc) or "request"
    given = first.get("input")
    shown = f" {given!r}" if isinstance(given, str | int | float) and len(str(given)) <= 80 else ""
    why = _PATTERN_WORDS.get(str((first.get("ctx") or {}).get("pattern")), str(first.get("msg", "invalid")))
    return f"{field}{shown}: {why}", field


def _for_a_person(request: Request, answer: JSONResponse, code: str, message: str) -> Response:
    """The explorer's pages are for people: a refusal there is a page with the same status, code and words
    (a mistyped link showed the API's JSON in the browser). Everything else keeps the one JSON shape."""
    if not request.url.path.startswith("/explorer"):
        return answer
    import json

    from api.pages import page

    title = {404: "Not found", 410: "Retracted"}.get(answer.status_code, "Error")
    detail = json.loads(bytes(answer.body)).get("detail") or {}
    # what the JSON answer says besides the message (a retraction's when, by whom, where), as a table
    facts = {
        k: v for k, v in detail.items() if isinstance(v, str | int) and not isinstance(v, bool) and len(str(v)) <= 200
    }
    shown = page(
        "error.html",
        title,
        None,
        status_code=answer.status_code,
        message=message,
        code=code,
        status=answer.status_code,
        facts=facts,
    )
    for name in ("Retry-After", "WWW-Authenticate"):
        if name in answer.headers:
            shown.headers[name] = answer.headers[name]
    return shown


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(AnchorError)
    async def anchor_error(request: Request, exc: AnchorError) -> Response:
        return _for_a_person(request, anchor_error_response(exc), exc.code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Response:
        errors = [{"field": ".".join(str(p) for p in e["loc"]), "message": e["msg"]} for e in exc.errors()]
        message, field = refused_parameter(exc.errors())
        answer = _shape(422, "bad_input", message, {"field": field, "errors": errors})
        return _for_a_person(request, answer, "bad_input", message)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        return _for_a_person(request, http_error_response(exc), _http_code(exc), str(exc.detail))

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> Response:
        log.error("internal error: %s", type(exc).__name__)  # never the message: it could carry input
        return _for_a_person(request, _shape(500, "internal", "internal error"), "internal", "internal error")
