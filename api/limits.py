"""Refuse request bodies over the configured size before any route reads them (plain ASGI: no per-request
wrapping cost on the hot verify path)."""

from __future__ import annotations

import json
from typing import Any

Scope = dict[str, Any]


class BodyLimit:
    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            length = dict(scope["headers"]).get(b"content-length")
            if length is not None and (not length.isdigit() or int(length) > self.limit):
                await self._refuse(send)
                return
        await self.app(scope, receive, send)

    async def _refuse(self, send: Any) -> None:
        body = json.dumps(
            {"code": "request_too_large", "message": f"request bodies are limited to {self.limit} bytes", "detail": {}}
        ).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})
