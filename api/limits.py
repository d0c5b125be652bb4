"""The edge of the service: every request is bounded before any route does work for it.

Plain ASGI (no per-request wrapping cost on the hot verify path). Two rules, in this order:
1. A write route's bearer token is checked from the headers alone, before a byte of the body is read:
   FastAPI parses (and Starlette spools) the whole body before route dependencies run, so a 60 MiB
   body sent without a token used to cost 1.7 GB and 4.7 s before its 401.
2. The body is counted as it streams in, not taken from Content-Length, which a chunked upload does
   not send: past the limit the request ends with 413 and nothing is parsed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request

from anchor.errors import AnchorError
from api.errors import anchor_error_response, http_error_response

Scope = dict[str, Any]


class BodyTooSlow(HTTPException):
    """Raised from `receive` when the client sends no byte of its body for the body deadline."""

    def __init__(self, seconds: float) -> None:
        super().__init__(408, f"no part of the request body arrived for {seconds:g} s")


class BodyTooLarge(HTTPException):
    """Raised from `receive` once the streamed body passes the limit (FastAPI re-raises HTTPException
    from body parsing unchanged, so it reaches the error handler as a 413)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request bodies are limited to {limit} bytes")


class RequestGuard:
    def __init__(
        self,
        app: Any,
        limit: int,
        write_paths: frozenset[str],
        authorize: Callable[[dict[bytes, bytes], str], object],
        path_limits: dict[str, int] | None = None,
        body_timeout_s: float = 30.0,
    ) -> None:
        self.app, self.limit, self.write_paths, self.authorize = app, limit, write_paths, authorize
        self.path_limits = path_limits or {}
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        if scope["method"] == "POST" and scope["path"] in self.write_paths:
            try:
                scope["anchor.client"] = self.authorize(headers, scope["path"])  # the routes need not ask again
            except AnchorError as exc:
                await _answer(send, exc.http_status, exc.to_dict(), ((b"www-authenticate", b"Bearer"),))
                return
        limit = min(self.limit, self.path_limits.get(scope["path"], self.limit))
        length = headers.get(b"content-length")
        if length is not None and (not (length.isascii() and length.isdigit()) or int(length) > limit):
            await _answer(send, 413, _too_large(limit))
            return
        await self.app(scope, self._counting(receive, limit), send)

    def _counting(self, receive: Any, limit: int) -> Any:
        """`receive`, counting the body against `limit` and giving each part of it `body_timeout_s`
        to arrive (a partial body held a connection open for as long as the client liked)."""
        import asyncio

        seen = 0
        complete = False

        async def counted() -> Any:
            nonlocal seen, complete
            if complete:
                return await receive()  # after the body: a disconnect is waited for as long as it takes
            try:
                async with asyncio.timeout(self.body_timeout_s):  # no task per part, as wait_for makes
                    message = await receive()
            except TimeoutError:
                raise BodyTooSlow(self.body_timeout_s) from None
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)
                complete = not message.get("more_body", False)
            return message

        return counted


def _too_large(limit: int) -> dict[str, Any]:
    return {"code": "request_too_large", "message": f"request bodies are limited to {limit} bytes", "detail": {}}


async def _answer(
    send: Any, status: int, content: Mapping[str, object], extra: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    body = json.dumps(content).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class DirectRoutes:
    """Pure ASGI: the hottest routes (POST /v1/manifests, POST /v1/calendar) served by their FastAPI
    endpoint functions directly, skipping FastAPI's exception middleware, exit stacks, router and
    request wrappers; every other request goes through FastAPI. Why: those layers cost about a third
    of a submission's event-loop time, and a calendar's submissions are what a service does most
    (benchmarks/calendar_bench.py). The endpoints take only the request (no declared parameters) and
    return a Response, so FastAPI would add nothing; the route stays declared there for the OpenAPI
    document and for an app used without this layer. Typed errors and HTTP refusals get the app's
    answers (api.errors); anything else reaches the app's 500 handler as before."""

    def __init__(self, app: Any, fastapi_app: Any, routes: Mapping[str, Callable[[Any], Any]]) -> None:
        self.app, self.fastapi_app, self.routes = app, fastapi_app, routes

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        endpoint = self.routes.get(scope["path"]) if scope["type"] == "http" and scope["method"] == "POST" else None
        if endpoint is None:
            await self.app(scope, receive, send)
            return
        scope["app"] = self.fastapi_app  # what request.app is inside FastAPI
        try:
            response = await endpoint(Request(scope, receive, send))
        except AnchorError as exc:
            response = anchor_error_response(exc)
        except HTTPException as exc:  # the body past its limit (413) or its deadline (408): RequestGuard's
            response = http_error_response(exc)
        await response(scope, receive, send)
