"""Live chain reads for the API, cached per block: an "anchored" answer is never the database's alone.

Each worker keeps the chain head fresh with a background task (every `HEAD_TTL_S`), so a request never
waits on it; every cached answer is keyed by the block it was read at and says so. When a new block
arrives, an answer read up to `STALE_BLOCKS` blocks before is still served (it names the block it
was read at) while the new block's is read in the background: a busy chain (a flush mining block
after block) then costs no request a live read. Answers are cached as serialized JSON, ready to send.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

from starlette.concurrency import run_in_threadpool

from anchor.chain.open import ChainHandle, open_chain, open_registry
from anchor.errors import AnchorError
from anchor.settings.session import Settings

if TYPE_CHECKING:
    from anchor.chain.registry import Registry

T = TypeVar("T")
HEAD_TTL_S = 0.25
STALE_BLOCKS = 2
log = logging.getLogger("anchor.api")


class ChainReader:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._handle: ChainHandle | None = None
        self._registry: Registry | None = None
        self._head: int | None = None
        self._cache: dict[tuple[int, str], object] = {}
        self._computes: dict[str, Callable[[], object]] = {}
        self._refreshing: set[tuple[int, str]] = set()
        self._refresher: ThreadPoolExecutor | None = None

    def registry(self) -> Registry:
        with self._lock:
            if self._registry is None:
                self._handle = open_chain(self.settings, start_local=False)
                self._registry = open_registry(self.settings, self._handle)
            return self._registry

    async def registry_async(self) -> Registry:
        """The registry without a hop to the pool once it is loaded (the first call opens the chain
        there): the write routes ask on every request."""
        from starlette.concurrency import run_in_threadpool

        return self._registry if self._registry is not None else await run_in_threadpool(self.registry)

    def where(self) -> str | None:
        """The chain this service reads, by name ("Base Sepolia (84532)"), once it is open (no I/O): every
        page's header names it beside the block it was read at, for a tx hash alone names no chain."""
        from anchor.chain.presets import chain_name

        registry = self._registry
        return None if registry is None else chain_name(registry.chain_id)

    def chain_id(self) -> int:
        """The chain this service reads and anchors on: every journal read is of this chain only."""
        return self.registry().chain_id

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
        """A hit for `key` at the current head, or one read at most STALE_BLOCKS before it while the
        current one is read in the background; without any I/O (the fast path)."""
        head = self._head
        if head is None:
            return None
        hit = self._cache.get((head, key))
        if hit is not None:
            return hit
        for back in range(1, STALE_BLOCKS + 1):
            old = self._cache.get((head - back, key))
            if old is not None:
                self._revalidate(head, key)
                return old
        return None

    def _revalidate(self, head: int, key: str) -> None:
        compute = self._computes.get(key)
        with self._lock:
            if compute is None or (head, key) in self._refreshing:
                return
            self._refreshing.add((head, key))
            if self._refresher is None:
                self._refresher = ThreadPoolExecutor(max_workers=2, thread_name_prefix="anchor-revalidate")

        def refresh() -> None:
            try:
                self.read(key, compute)
            except AnchorError:
                pass  # the next request reads it itself and gets the typed error
            finally:
                with self._lock:
                    self._refreshing.discard((head, key))

        self._refresher.submit(refresh)

    def read(self, key: str, compute: Callable[[], T]) -> T:
        block = self.head()
        hit = self._cache.get((block, key))
        if hit is None:
            hit = compute()
            if len(self._cache) > 10_000:
                self._cache.clear()
                self._computes.clear()
            self._cache[(block, key)] = hit
            self._computes[key] = compute
        return hit  # type: ignore[return-value]
