"""Live chain reads for the API, cached per block: an "anchored" answer is never the database's alone.

Each worker keeps the chain head fresh with a background task (every `HEAD_TTL_S`), so a request never
waits on it; every cached answer is keyed by the block it was read at and says so, and a new block
invalidates it. Answers are cached as serialized JSON, ready to send.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from starlette.concurrency import run_in_threadpool

from anchor.errors import AnchorError
from anchor.session import ChainHandle, Settings, open_chain, open_registry

if TYPE_CHECKING:
    from anchor.chain.registry import Registry

T = TypeVar("T")
HEAD_TTL_S = 0.25
log = logging.getLogger("anchor.api")


class ChainReader:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._handle: ChainHandle | None = None
        self._registry: Registry | None = None
        self._head: int | None = None
        self._cache: dict[tuple[int, str], object] = {}

    def registry(self) -> Registry:
        with self._lock:
            if self._registry is None:
                self._handle = open_chain(self.settings, start_local=False)
                self._registry = open_registry(self.settings, self._handle)
            return self._registry

    def _read_head(self) -> int:
        block = self.registry().checked_block()  # re-checks the registry's code whenever the block moves
        self._head = block
        return block

    async def refresh_forever(self) -> None:
        while True:
            try:
                await run_in_threadpool(self._read_head)
            except AnchorError as exc:
                self._head = None  # unknown head: requests read it themselves and get the typed error
                log.warning("chain head unavailable: %s", exc.code)
            await asyncio.sleep(HEAD_TTL_S)

    def last_head(self) -> int | None:
        """The head the background task read last, without any I/O (None while unknown)."""
        return self._head

    def head(self) -> int:
        return self._head if self._head is not None else self._read_head()

    def cached(self, key: str) -> object | None:
        """A hit for `key` at the current head, without any I/O (the fast path)."""
        head = self._head
        return None if head is None else self._cache.get((head, key))

    def read(self, key: str, compute: Callable[[], T]) -> T:
        block = self.head()
        hit = self._cache.get((block, key))
        if hit is None:
            hit = compute()
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[(block, key)] = hit
        return hit  # type: ignore[return-value]
