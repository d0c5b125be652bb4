"""Which of the user's read endpoints serve a given chain.

Why: one proof file may hold anchors on several chains (one per service, docs/calendar.md). The user
gives every endpoint with `--rpc-url` (repeatable); each anchor is read from the endpoints that serve
its chain, and a quorum (`--quorum`) is counted among those. No endpoint at all: the embedded local
chain, which serves chain 31337 only.
"""

from __future__ import annotations

import threading
from dataclasses import replace

from anchor.errors import BadInput, ChainUnreachable
from anchor.settings.session import Settings

_ids: dict[str, int] = {}
_lock = threading.Lock()


def chain_id_of(url: str) -> int:
    """The chain id an endpoint serves (asked once a process)."""
    from anchor.chain.node import rpc_call
    from anchor.settings.session import endpoint_of as redact_url

    with _lock:
        if url in _ids:
            return _ids[url]
    try:
        found = int(str(rpc_call(url, "eth_chainId", timeout=5.0)), 16)
    except ChainUnreachable:
        raise ChainUnreachable(
            f"{redact_url(url)}: the endpoint did not answer eth_chainId", detail={"rpc_url": redact_url(url)}
        ) from None
    except ValueError:
        raise ChainUnreachable(
            f"{redact_url(url)}: eth_chainId is not a number", detail={"rpc_url": redact_url(url)}
        ) from None
    with _lock:
        _ids[url] = found
    return found


def settings_for_chain(settings: Settings, chain_id: int, service: str | None = None) -> Settings:
    """`settings` reading only the endpoints that serve `chain_id`; `BadInput` naming the chain when
    none of the given ones does. `service`: the anchor came from that service, so without --rpc-url
    this data dir's own local chain is read only if it is running (a service's local chain is the
    service's, at an address only its operator knows: `anchor chain up` here could never serve it)."""
    if settings.offline:  # a sealed anchor is checked against its trusted block: no endpoint is asked
        return settings
    from anchor.chain.node import LOCAL_CHAIN_ID, LocalChain
    from anchor.chain.presets import chain_name

    urls = list(settings.read_rpcs or ([settings.rpc_url] if settings.rpc_url else []))
    if not urls:
        if chain_id == LOCAL_CHAIN_ID and (
            service is None or LocalChain(settings.data_dir, settings.local_port).status().running
        ):
            return settings
        if service is not None:
            raise BadInput(
                f"the anchor from {service} is on {chain_name(chain_id)}, the service's chain: give rpc_url, a URL of"
                " that chain (its operator publishes it; this machine's own local chain cannot serve it)",
                detail={"field": "rpc_url", "chain_id": chain_id, "service": service, "inputs": ["rpc_url"]},
            )
        raise BadInput(
            f"no RPC endpoint for {chain_name(chain_id)}: give rpc_url, a URL of that chain",
            detail={"field": "rpc_url", "chain_id": chain_id, "inputs": ["rpc_url"]},
        )
    matched = [url for url in urls if chain_id_of(url) == chain_id]
    if not matched:
        raise BadInput(
            f"none of the rpc_url endpoints serves {chain_name(chain_id)}: give rpc_url, a URL of that chain",
            detail={"field": "rpc_url", "chain_id": chain_id, "inputs": ["rpc_url"]},
        )
    return replace(settings, rpc_url=matched[0], read_rpcs=tuple(matched) if len(matched) > 1 else ())
