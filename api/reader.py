"""Live chain reads for the API, cached per block: an "anchored" answer is never the database's alone.

The head block number is re-read at most every `HEAD_TTL_S`; every cached answer is keyed by the block
it was read at, so a new block invalidates it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from anchor.session import ChainHandle, Settings, open_chain, open_registry

if TYPE_CHECKING:
    from anchor.chain.registry import Registry

T = TypeVar("T")
HEAD_TTL_S = 0.25


class ChainReader:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._handle: ChainHandle | None = None
        self._registry: Registry | None = None
        self._head = (0, 0.0)
        self._cache: dict[tuple[int, str], Any] = {}

    def registry(self) -> Registry:
        with self._lock:
            if self._registry is None:
                self._handle = open_chain(self.settings, start_local=False)
                self._registry = open_registry(self.settings, self._handle)
            return self._registry

    def head(self) -> int:
        block, at = self._head
        if time.monotonic() - at > HEAD_TTL_S:
            block = self.registry().checked_block()  # also re-checks the registry's code at a new block
            self._head = (block, time.monotonic())
        return block

    def cached(self, key: str) -> Any | None:
        """A hit for `key` at the head block as last seen, without any I/O (the fast path)."""
        block, at = self._head
        if time.monotonic() - at > HEAD_TTL_S:
            return None
        return self._cache.get((block, key))

    def read(self, key: str, compute: Callable[[], T]) -> T:
        block = self.head()
        hit = self._cache.get((block, key))
        if hit is None:
            hit = compute()
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[(block, key)] = hit
        return hit  # type: ignore[no-any-return]
