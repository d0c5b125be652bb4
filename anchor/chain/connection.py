"""Reach an RPC endpoint: a reader (`reach`, no web3) for reads, a web3 on the same transport
(`connect`) for writes; transport failures become `ChainUnreachable` (the retry policy is in
anchor.chain.rpc), and the rule for which URL a browser may be given.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from anchor.chain.rpc import Rpc
from anchor.errors import BadInput, ChainUnreachable
from anchor.settings.session import endpoint_of as redact_url

if TYPE_CHECKING:
    from web3 import Web3

    from anchor.settings.model import Environment


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


def web3_for(rpc: Rpc) -> Web3:
    """A web3 whose every request goes through `rpc.post`: writes (transactions, deploys) with the same
    retries, timeouts and credential handling as the read path, and one connection policy."""
    from eth_typing import URI
    from web3 import HTTPProvider, Web3

    class RpcProvider(HTTPProvider):
        def __init__(self) -> None:
            super().__init__(rpc.url, exception_retry_configuration=None)
            self.url = URI(rpc.url)
            self.rpc = rpc

        def _make_request(self, method: str, request_data: bytes) -> bytes:
            return rpc.post(method, request_data)

    return Web3(RpcProvider())


def rpc_of(w3: Web3) -> Rpc:
    """The reader under a web3 made by `web3_for` (or `connect`)."""
    rpc: Rpc = w3.provider.rpc  # type: ignore[attr-defined]
    return rpc


def reach(rpc_url: str, env: Environment | None = None) -> tuple[Rpc, int]:
    """(reader, chain id) for `rpc_url`, its retries and timeouts from `env` (anchor.settings.model; the
    defaults when None); raises `ChainUnreachable` if it does not answer."""
    rpc = Rpc(rpc_url, env)
    try:
        chain_id = rpc.chain_id()
    except ChainUnreachable:
        raise
    except Exception as exc:  # noqa: BLE001 - any other failure here means the same to the user
        raise ChainUnreachable(
            f"{redact_url(rpc_url)}: the chain did not answer ({type(exc).__name__})",
            detail={"rpc_url": redact_url(rpc_url)},
        ) from None
    return rpc, chain_id


def connect(rpc_url: str, env: Environment | None = None) -> tuple[Web3, int]:
    """(web3, chain id) for `rpc_url`, for writes; raises `ChainUnreachable` if it does not answer."""
    rpc, chain_id = reach(rpc_url, env)
    return web3_for(rpc), chain_id
