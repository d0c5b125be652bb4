"""Connect web3 to an RPC endpoint with bounded retries, turning transport failures into
`ChainUnreachable`.

Every method is retried, eth_sendRawTransaction included: a resend carries the same signed bytes,
which the node either already knows or mines once. Retried: refused or reset connections, timeouts,
HTTP 429 and 5xx. Backoff doubles from ANCHOR_RPC_BACKOFF_S with a jitter fixed by host, process and
call (`jitter`), capped at 2 s, for ANCHOR_RPC_RETRIES retries (default 4); each request times out
after ANCHOR_RPC_TIMEOUT_S (10 s). HTTP 401 and 403 (an expired key, a wrong project id) stop at once,
naming the endpoint without its key: no retry can fix a credential.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from anchor.errors import BadInput, ChainUnreachable
from anchor.settings.session import env_number

if TYPE_CHECKING:
    from web3 import Web3


def redact_url(url: str) -> str:
    """scheme://host:port only: hosted RPC URLs often carry an API key in the path or query."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}"


def browser_rpc_url(url: str | None) -> str | None:
    """A URL a browser may be given: without credentials, a path or a query (where hosted providers put
    their keys). Anything else is refused with a hint rather than published on every page."""
    if url is None:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BadInput(
            f"--browser-rpc-url {url!r}: expected http(s)://host[:port]", detail={"field": "browser_rpc_url"}
        )
    if parts.username or parts.password or parts.path.strip("/") or parts.query:
        raise BadInput(
            "--browser-rpc-url: this URL has a path, query or credentials (often an API key); it would be shown"
            " to every visitor (hint: give a public endpoint as --browser-rpc-url)",
            detail={"field": "browser_rpc_url"},
        )
    return url


def jitter(*what: object) -> float:
    """A number in [0, 1) fixed by this host, this process and `what` (the call, its attempt): replicas
    that fail together back off by different amounts, and a run replays its own waits (random.random()
    is neither: two replicas could retry in lockstep, and a seeded one would collide everywhere)."""
    import hashlib
    import os
    import socket

    seed = "|".join(map(str, (socket.gethostname(), os.getpid(), *what))).encode()
    return int.from_bytes(hashlib.blake2b(seed, digest_size=8).digest(), "big") / 2**64


def _provider_class() -> Any:
    import requests
    from eth_typing import URI
    from web3 import HTTPProvider

    class RetryingHTTPProvider(HTTPProvider):  # type: ignore[misc]
        def __init__(self, url: str, retries: int, backoff_s: float, timeout_s: float) -> None:
            super().__init__(url, request_kwargs={"timeout": timeout_s}, exception_retry_configuration=None)
            self.retries, self.backoff_s = retries, backoff_s
            self.url = URI(url)

        def _make_request(self, method: str, request_data: bytes) -> bytes:
            failure = ""
            for attempt in range(self.retries + 1):
                try:
                    content: bytes = self._request_session_manager.make_post_request(
                        self.url, request_data, **self.get_request_kwargs()
                    )
                    return content
                except (requests.ConnectionError, requests.Timeout) as exc:
                    failure = type(exc).__name__
                except requests.HTTPError as exc:
                    status = exc.response.status_code if exc.response is not None else 0
                    if status in (401, 403):  # a key that is wrong or expired: retrying cannot help
                        word = "unauthorized" if status == 401 else "forbidden"
                        raise ChainUnreachable(
                            f"{redact_url(self.url)}: HTTP {status} ({word}) for {method}: the provider refused"
                            " the URL's credentials; check the URL's key"
                            " (a hosted provider puts it in the path or query; it is not shown here)",
                            detail={"rpc_url": redact_url(self.url), "method": method, "status": status},
                        ) from None
                    if status != 429 and status < 500:
                        raise ChainUnreachable(
                            f"{redact_url(self.url)}: HTTP {status} for {method}",
                            detail={"rpc_url": redact_url(self.url), "method": method, "status": status},
                        ) from None
                    failure = f"HTTP {status}"
                if attempt < self.retries:
                    time.sleep(min(2.0, self.backoff_s * 2**attempt) * (0.5 + jitter(method, attempt) / 2))
            raise ChainUnreachable(
                f"{redact_url(self.url)}: {method} failed {self.retries + 1} times ({failure})",
                detail={"rpc_url": redact_url(self.url), "method": method, "last_error": failure},
            )

    return RetryingHTTPProvider


def connect(rpc_url: str) -> tuple[Web3, int]:
    """(web3, chain id) for `rpc_url`; raises `ChainUnreachable` if it does not answer."""
    from web3 import Web3

    provider = _provider_class()(
        rpc_url,
        retries=int(env_number("ANCHOR_RPC_RETRIES", 4)),
        backoff_s=env_number("ANCHOR_RPC_BACKOFF_S", 0.1, float),
        timeout_s=env_number("ANCHOR_RPC_TIMEOUT_S", 10, float),
    )
    w3 = Web3(provider)
    try:
        chain_id = w3.eth.chain_id
    except ChainUnreachable:
        raise
    except Exception as exc:  # noqa: BLE001 - any other failure here means the same to the user
        raise ChainUnreachable(
            f"{redact_url(rpc_url)}: the chain did not answer ({type(exc).__name__})",
            detail={"rpc_url": redact_url(rpc_url)},
        ) from None
    return w3, int(chain_id)
