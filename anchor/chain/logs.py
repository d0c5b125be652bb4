"""Event logs read the way hosted RPC providers allow: bounded block windows, never 0..latest.

Why: providers for Base and other public chains cap `eth_getLogs` (commonly 500-10,000 blocks per
call, or 10,000 results) and answer 429 under load. A reader that asks for block 0 to latest works on
anvil and fails everywhere else. Every scan here starts at the registry's deployment block, walks
windows of `ANCHOR_LOG_WINDOW` blocks (default 5,000), halves the window when the provider says the
range or result set is too large; a 429 or a rate-limit error is waited out by the RPC client itself
(anchor.chain.rpc), as for every read, before it gives up with `ChainUnreachable`.

Lookups that know a record's block (registry v2 keeps it beside the record) never scan: they ask for
exactly that block, one call at any chain height.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from anchor.errors import ChainUnreachable

if TYPE_CHECKING:
    from anchor.chain.rpc import Rpc

DEFAULT_WINDOW = 5_000
_TOO_LARGE = ("range", "too large", "too many", "limit exceeded", "exceed", "10000 results", "block range")


def _too_large(exc: Exception) -> bool:
    """The provider refuses the window (its range or result cap), not the request: halve and ask again.
    Throttling never reaches here: the RPC client waits it out (anchor.chain.rpc.throttled)."""
    text = str(exc).lower()
    return any(word in text for word in _TOO_LARGE)


def scan_logs(
    rpc: Rpc,
    address: str,
    topics: list[Any],
    from_block: int,
    to_block: int,
    window: int | None = None,
    stop: Callable[[list[dict[str, Any]]], bool] | None = None,
) -> list[dict[str, Any]]:
    """Raw logs of `address` matching `topics` in [from_block, to_block], oldest first, as the node gave
    them (hex strings; `anchor.chain.abi.Event.args` decodes one).

    `stop(found)` is asked after each window; True ends the walk early (a reader that needs one match).
    Raises `ChainUnreachable` when even a one-block window is refused or throttling never ends.
    """
    size = window or (DEFAULT_WINDOW if rpc.log_window is None else max(1, rpc.log_window))
    found: list[dict[str, Any]] = []
    start = max(0, from_block)
    while start <= to_block:
        end = min(to_block, start + size - 1)
        try:
            logs = rpc.get_logs(address, topics, start, end)
        except Exception as exc:
            if not isinstance(exc, ChainUnreachable) and _too_large(exc) and size > 1:
                size = max(1, size // 2)  # the provider's cap is below our window: halve and retry
                continue
            if isinstance(exc, ChainUnreachable):
                raise
            raise ChainUnreachable(
                f"eth_getLogs failed for blocks {start}-{end}: {str(exc)[:200]}",
                detail={"from_block": start, "to_block": end},
            ) from None
        found.extend(logs)
        if stop is not None and stop(found):
            break
        start = end + 1
    return found
