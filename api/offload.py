"""CPU-heavy decoding of untrusted input (archives, uploaded proof files) runs in a decoder process,
never in the serving one.

Why a process and not the thread pool: decoding is Python code that holds the GIL. A 13 KB archive of
30,000 directory entries costs ~600 ms of tarfile parsing; in a thread it starved the event loop, and
`/health` p99 reached 112 ms while 8 hostile clients sent such inputs. In a process of its own (one per
API worker, spawned, never forked from a threaded server) the serving process stays responsive, and
the decoder runs under an address-space limit, so an input that balloons memory kills only the decoder
(which is then replaced), never the service.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import resource
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

from fastapi import FastAPI
from starlette.concurrency import run_in_threadpool

from anchor.errors import BadInput

T = TypeVar("T")
DECODER_MEMORY_BYTES = 1 << 30
"""Address space of the decoder process: every decode is bounded far below this (docs/api.md)."""


def _init_decoder() -> None:
    """Bounded memory, and a lower CPU priority: decoding someone's upload is background work next to
    answering the service's requests (on 2 cores the decoder at full load otherwise takes their turn)."""
    resource.setrlimit(resource.RLIMIT_AS, (DECODER_MEMORY_BYTES, DECODER_MEMORY_BYTES))
    os.nice(10)


def start_decoder() -> ProcessPoolExecutor:
    return ProcessPoolExecutor(
        max_workers=1, mp_context=multiprocessing.get_context("spawn"), initializer=_init_decoder
    )


def _bounds(app: FastAPI) -> tuple[int, int]:
    """(decodes queued in all, per client) before 429: the app's configuration (api.config), or its
    defaults for an app made without one."""
    from api.config import ApiConfig

    config = getattr(app.state, "config", None) or ApiConfig()
    return config.decode_queue, config.decode_per_client


async def decode(
    app: FastAPI, function: Callable[..., T], *args: Any, client: str | None = None, inline: bool = False
) -> T:
    """`function(*args)` in the app's decoder process (in the thread pool if the app has none, e.g. an
    app used without its lifespan). Typed errors come back as raised; a dead decoder is replaced and
    the input refused.

    The queue in front of the decoder is bounded: 30 concurrent 13 MiB proofs, each 2.2 s of
    decoding, made an honest 0.17 s check wait 65 s. Past ANCHOR_API_DECODE_QUEUE decodes waiting or
    running, or ANCHOR_API_DECODE_PER_CLIENT from one `client` address, the answer is 429 with
    Retry-After at once, before anything is decoded.

    `inline`: the input is small (an honest proof, a few KiB): decoded in the thread pool, at once,
    not queued behind big decodes in the one decoder process (an honest 2 KiB proof waited there for
    whatever 13 MiB inputs were ahead of it). It counts against its client's bound, not the queue's."""
    from collections import Counter

    from anchor.errors import RateLimited

    queue, per_client = _bounds(app)
    state = app.state.__dict__.setdefault("decoding", {"total": 0, "by": Counter()})
    full = not inline and state["total"] >= queue
    if full or (client is not None and state["by"][client] >= per_client):
        busy = "the decoder's queue is full" if full else "this address has decodes running"
        raise RateLimited(f"{busy}; retry later", detail={"retry_after_s": 2})
    counted = 0 if inline else 1
    state["total"] += counted
    if client is not None:
        state["by"][client] += 1
    try:
        pool: ProcessPoolExecutor | None = getattr(app.state, "decoder", None)
        if pool is None or inline:
            return await run_in_threadpool(function, *args)
        try:
            return await asyncio.get_running_loop().run_in_executor(pool, function, *args)
        except (BrokenProcessPool, MemoryError):
            app.state.decoder = start_decoder()
            pool.shutdown(wait=False, cancel_futures=True)
            raise BadInput("the input could not be decoded within the decoder's bounds", detail={}) from None
    finally:
        state["total"] -= counted
        if client is not None:
            state["by"][client] -= 1
            if state["by"][client] <= 0:
                del state["by"][client]
