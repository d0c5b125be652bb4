"""Connect web3 to an RPC endpoint, turning every transport failure into `ChainUnreachable`."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from anchor.errors import ChainUnreachable

if TYPE_CHECKING:
    from web3 import Web3


def redact_url(url: str) -> str:
    """scheme://host:port only: hosted RPC URLs often carry an API key in the path or query."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}"


def connect(rpc_url: str, timeout: float = 10.0) -> tuple[Web3, int]:
    """(web3, chain id) for `rpc_url`; raises `ChainUnreachable` if it does not answer."""
    from web3 import Web3

    w3 = Web3(Web3.HTTPProvider(rpc_url, request_kwargs={"timeout": timeout}, exception_retry_configuration=None))
    try:
        chain_id = w3.eth.chain_id
    except Exception as exc:  # noqa: BLE001 - requests, web3 and OS errors all mean the same here
        raise ChainUnreachable(
            f"{redact_url(rpc_url)}: the chain did not answer ({type(exc).__name__})",
            detail={"rpc_url": redact_url(rpc_url)},
        ) from None
    return w3, int(chain_id)
