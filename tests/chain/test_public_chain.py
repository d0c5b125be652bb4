"""On a real anvil: a stranger who front-runs our commit, a relayer that carries signed
records, and a poisoned effect that must not stop the others (docs/threat-model.md)."""

from __future__ import annotations

import os
import time

from eth_account import Account

from anchor.anchoring.service import AnchorService
from anchor.chain.keys import Signer
from anchor.chain.signed import LineageFields
from anchor.errors import ExitCode
from tests.conftest import Chain
from tests.journal_helpers import unique_submissions

# anvil's second development account: the stranger watching the mempool (and with gas to spend)
STRANGER_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"
RESEARCHER_KEY = "0x" + "7a" * 32  # holds no ether: it only signs


EXPIRED_S = 3600
"""How far in the past an expired signature's deadline lies. One second back was flaky (a fresh clone
of bb1a569: the "expired" record was mined and confirmed, not refused): the chain's clock is anvil's,
read when it mines and rounded to seconds, not the test's, so a deadline one second back is not
reliably past by then. An hour is."""


def _fields() -> tuple[bytes, bytes, bytes, bytes, bool]:
    return os.urandom(20).ljust(32, b"\0"), os.urandom(20).ljust(32, b"\0"), os.urandom(32), os.urandom(32), True


def test_a_stranger_who_anchors_our_commit_first_takes_nothing_and_blocks_nothing(fresh_chain: Chain) -> None:
    """A stranger's record of our commit, with our fields or with others, is the stranger's
    own: ours still anchors under our researcher, nothing is adopted, the flush is not blocked."""
    fresh_chain.cli("deploy", check=True)
    service = AnchorService.open(fresh_chain.settings)
    stranger = Signer(Account.from_key(STRANGER_KEY), "stranger")
    same, other = _fields(), _fields()
    service.registry.anchor_lineage(stranger, *same)  # our exact fields, seen in a public repository
    service.registry.anchor_lineage(stranger, other[0], other[1], b"\x66" * 32, b"\x66" * 32, False)  # forged
    ours = [service.runner.open_lineage(*same), service.runner.open_lineage(*other)]
    service.submit(unique_submissions(2))
    report = service.flush()
    assert sorted(report.confirmed)[-2:] and not report.adopted and not report.failed
    me = service.runner.signer.address
    for fields in (same, other):
        mine = service.registry.lineage(fields[0], me)
        theirs = service.registry.lineage(fields[0], stranger.address)
        assert mine is not None and mine.researcher == me and mine.metric_hash == "0x" + fields[3].hex()
        assert theirs is not None and theirs.tx_hash != mine.tx_hash
    assert set(ours) <= set(report.confirmed)
    assert service.status().items["confirmed"] == 2
    service.close()


def test_a_relayer_carries_signed_records_and_an_expired_one_fails_alone(fresh_chain: Chain) -> None:
    """The journal relays records signed by a researcher whose key it never holds; the signer is the
    researcher. A signature past its deadline is refused by the registry: that effect fails, the
    others anchor, and `retry` after a fix (here: none possible, so abandon) is the way out."""
    fresh_chain.cli("deploy", check=True)
    service = AnchorService.open(fresh_chain.settings)
    researcher = Signer(Account.from_key(RESEARCHER_KEY), "researcher")
    good, late = _fields(), _fields()
    registry = service.registry

    def signed(fields: tuple[bytes, bytes, bytes, bytes, bool], deadline: int):  # type: ignore[no-untyped-def]
        return researcher.sign_lineage(
            registry.chain_id, registry.address, LineageFields(researcher.address, *fields, deadline)
        )

    relayed = service.runner.open_lineage(*good, signed=signed(good, int(time.time()) + 3600))
    expired = service.runner.open_lineage(*late, signed=signed(late, int(time.time()) - EXPIRED_S))
    report = service.flush()
    assert relayed in report.confirmed and report.failed == [expired]
    record = registry.lineage(good[0], researcher.address)
    assert record is not None and record.researcher == researcher.address
    assert registry.lineage(good[0], service.runner.signer.address) is None  # the relayer owns nothing
    [failed] = service.status().failed
    assert "SignatureExpired" in failed["reason"]
    journal = service.journal.db.execute("SELECT args FROM effects WHERE id = ?", (relayed,)).fetchone()
    assert RESEARCHER_KEY[2:] not in journal["args"]  # a signature, never the key
    service.close()


def test_a_researcher_signs_an_expired_record_again_and_it_anchors_even_after_abandon(fresh_chain: Chain) -> None:
    """The threat model promises "the researcher signs again": a new signature of the identical record
    was dropped (the effect kept the expired one), `retry` resent the expired one and `abandon` kept the
    key taken. Now the later deadline replaces the stored signature and reopens the failed, even the
    abandoned, effect; an older or equal deadline changes nothing."""
    fresh_chain.cli("deploy", check=True)
    service = AnchorService.open(fresh_chain.settings)
    researcher = Signer(Account.from_key(RESEARCHER_KEY), "researcher")
    late = _fields()
    registry = service.registry

    def signed(deadline: int):  # type: ignore[no-untyped-def]
        return researcher.sign_lineage(
            registry.chain_id, registry.address, LineageFields(researcher.address, *late, deadline)
        )

    expired = service.runner.open_lineage(*late, signed=signed(int(time.time()) - EXPIRED_S))
    assert service.flush().failed == [expired]
    service.close()
    assert fresh_chain.cli("journal", "abandon", str(expired)).returncode == ExitCode.OK
    service = AnchorService.open(fresh_chain.settings)
    older = signed(int(time.time()) - EXPIRED_S - 5)
    assert service.runner.open_lineage(*late, signed=older) == expired  # older: ignored
    assert service.flush().confirmed == [] and registry.lineage(late[0], researcher.address) is None
    again = service.runner.open_lineage(*late, signed=signed(int(time.time()) + 3600))
    assert again == expired  # the same effect, the same key: opened again with the new signature
    report = service.flush()
    assert report.confirmed == [expired] and not report.failed
    record = registry.lineage(late[0], researcher.address)
    assert record is not None and record.researcher == researcher.address
    assert not [f for f in service.status().failed if f["id"] == expired]  # no longer failed, nor abandoned
    service.close()
