"""Security headers on every page the service serves, set once for both apps (the full service and the
chain-only explorer).

Why: a page of ours shows strangers' text (file names, researchers, search queries); autoescaping is
the first fence and a Content-Security-Policy the second: no script but our own files, no framing (a
page cannot be overlaid to click for a visitor), no connection but to this service and the one RPC
origin the browser check reads the chain from. The browser check compiles WebAssembly (BLAKE3,
keccak), hence 'wasm-unsafe-eval'; the templates carry their style inline. Swagger UI and ReDoc start
from an inline script, so /docs and /redoc allow inline scripts and nothing else more.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

DOCS_PATHS = ("/docs", "/redoc")


def origin(url: str | None) -> str | None:
    """scheme://host[:port] of `url`, or None."""
    if not url:
        return None
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.scheme and parts.netloc else None


def content_security_policy(connect: tuple[str, ...], inline_scripts: bool = False) -> str:
    scripts = "'self' 'unsafe-inline'" if inline_scripts else "'self' 'wasm-unsafe-eval'"
    reads = " ".join(("'self'", *connect))
    return "; ".join(
        (
            "default-src 'self'",
            f"script-src {scripts}",
            "style-src 'self' 'unsafe-inline'",
            "img-src 'self' data:",
            f"connect-src {reads}",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        )
    )


class SecurityHeaders:
    """Pure ASGI: adds `X-Content-Type-Options: nosniff` and `Referrer-Policy` to every response, and
    the policy and `X-Frame-Options: DENY` to every HTML one. `connect`: the RPC origins a page may
    read (the browser check's), fixed when the app is made."""

    def __init__(self, app: Any, connect: tuple[str, ...] = ()) -> None:
        self.app = app
        self.policy = content_security_policy(connect).encode()
        self.docs_policy = content_security_policy(connect, inline_scripts=True).encode()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        docs = scope["path"].rstrip("/") in DOCS_PATHS

        async def with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() not in _OURS]
                headers += [(b"x-content-type-options", b"nosniff"), (b"referrer-policy", b"no-referrer")]
                kind = next((v for k, v in headers if k.lower() == b"content-type"), b"")
                if kind.startswith(b"text/html"):
                    headers += [
                        (b"content-security-policy", self.docs_policy if docs else self.policy),
                        (b"x-frame-options", b"DENY"),
                    ]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, with_headers)


_OURS = frozenset({b"x-content-type-options", b"referrer-policy", b"content-security-policy", b"x-frame-options"})
