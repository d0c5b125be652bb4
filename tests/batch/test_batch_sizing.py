"""A service's batches follow its load: the flusher puts every pending item in one root, up to
the bound, so gas per item falls as submissions arrive faster (a root costs ~46,000 gas whatever it holds)."""

from __future__ import annotations

import time

from anchor.anchoring.flusher import Flusher
from anchor.anchoring.service import SERVICE_BATCH, AnchorService
from tests.conftest import Chain
from tests.journal_helpers import unique_submissions


def test_the_services_flusher_puts_every_pending_item_in_one_root(fresh_chain: Chain) -> None:
    service = AnchorService.open(fresh_chain.settings)
    try:
        service.submit(unique_submissions(700))  # what arrives in one flush interval under load
    finally:
        service.close()
    flusher = Flusher(fresh_chain.settings, "test-flush", in_thread=True).start()
    flusher.kick()
    flusher.close()
    service = AnchorService.open(fresh_chain.settings)
    try:
        roots = service.journal.db.execute(
            "SELECT count(*), sum(gas_used) FROM effects WHERE kind = 'root' AND state = 'confirmed'"
        ).fetchone()
        assert service.status().items["confirmed"] == 700
    finally:
        service.close()
    assert roots[0] == 1 and SERVICE_BATCH >= 700  # 256 a root before: 3 transactions
    assert roots[1] / 700 < 100  # 53,000 gas for 256 items was 207 an item


def test_kicks_while_one_waits_are_not_sent_and_what_comes_after_a_flush_began_is_flushed(fresh_chain: Chain) -> None:
    """A kick per submission was a pickled message per submission (8% of a loaded server's samples); now a
    kick that finds one waiting is not sent. The flusher lowers the flag before it reads what is pending,
    so what is journaled after that is flushed by the next kick, which is sent."""
    service = AnchorService.open(fresh_chain.settings)
    flusher = Flusher(fresh_chain.settings, "test-flush", in_thread=True)

    def confirmed(n: int) -> bool:
        deadline = time.monotonic() + 60
        while service.status().items.get("confirmed") != n and time.monotonic() < deadline:
            time.sleep(0.05)
        return service.status().items.get("confirmed") == n

    try:
        service.submit(unique_submissions(3))
        flusher.started = True  # the loop not running yet: what the kicks put in its inbox stays there
        for _ in range(100):
            flusher.kick()
        assert flusher.inbox.qsize() == 1
        flusher.started = False
        flusher.start()
        assert confirmed(3)
        service.submit(unique_submissions(2))
        flusher.kick()  # sent: the flush that took the first kick lowered the flag
        assert confirmed(5)
    finally:
        flusher.close()
        service.close()
