"""The API's per-block cache of live chain reads: an answer names the block it was read at, a new
block is read in the background while the answer of a block or two before is served, and nothing
older is ever served."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from anchor.settings.session import Settings
from api.reader import STALE_BLOCKS, ChainReader


def test_a_new_block_is_read_in_the_background_while_a_recent_answer_is_served(tmp_path: Path) -> None:
    reader = ChainReader(Settings(data_dir=tmp_path))
    reads: list[int] = []
    released = threading.Event()

    def compute() -> bytes:
        block = reader._head
        assert block is not None
        if reads:  # the background read of the new block waits until the test has seen the stale answer
            assert released.wait(30)
        reads.append(block)
        return f"read at {block}".encode()

    reader._head = 100
    assert reader.read("verify:x", compute) == b"read at 100"
    reader._head = 101  # a new block: the answer of block 100 is served, block 101 is read behind it
    assert reader.cached("verify:x") == b"read at 100"
    assert reader.cached("verify:x") == b"read at 100"  # one background read, not one per request
    released.set()
    deadline = time.monotonic() + 30
    while reader.cached("verify:x") != b"read at 101" and time.monotonic() < deadline:
        time.sleep(0.01)
    assert reader.cached("verify:x") == b"read at 101" and reads == [100, 101]
    reader._head = 101 + STALE_BLOCKS + 1  # too old to serve: the request reads the chain itself
    assert reader.cached("verify:x") is None
