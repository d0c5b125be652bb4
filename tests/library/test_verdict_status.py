"""A returned verdict says what it rests on: `Verification.status`, derived from the verdict's own fields
whenever one is made or copied, and `ok` only when nothing is left open (it was True on every verdict)."""

from __future__ import annotations

import pytest

from anchor import LaterStamp, PendingRow, Verification

FIELDS = {
    "manifest_digest": "0x" + "11" * 32,
    "root": "0x" + "22" * 32,
    "chain_id": 31337,
    "registry": "0x" + "33" * 20,
    "registry_trusted_by": "deployment record",
    "submitter": "0x" + "44" * 20,
    "anchored_at": "2026-12-07T05:00:00Z",
    "tx_hash": "0x" + "55" * 32,
    "anchored_block": 7,
    "read_at_block": 9,
    "confirmations": 3,
    "finality": "3 confirmations",
    "files": 2,
}
LATER: LaterStamp = {"proof": "results.anchor.json", "manifest_digest": "0x" + "66" * 32, "anchored_block": 12}
WAITING: PendingRow = {"service": "https://calendar.example", "state": "pending", "since": "2026-12-07T05:01:00Z"}


@pytest.mark.parametrize(
    ("extra", "status", "ok"),
    [
        ({}, "verified", True),
        ({"trusted": "block 7 0xab… (trusted)"}, "verified_offline", True),
        ({"pending": [WAITING]}, "partly_pending", False),
        ({"pending": [WAITING], "trusted": "block 7"}, "partly_pending", False),
        ({"superseded_by": LATER, "pending": [WAITING]}, "superseded", False),
    ],
)
def test_a_verdicts_status_is_the_first_open_question_its_fields_show(
    extra: dict[str, object], status: str, ok: bool
) -> None:
    verdict = Verification(**FIELDS, **extra)  # type: ignore[arg-type]
    assert (verdict.status, verdict.ok, verdict.verified) == (status, ok, True)
    assert verdict.to_json()["status"] == status


def test_a_status_given_is_replaced_by_the_one_the_fields_show_and_a_copy_derives_its_own() -> None:
    """Nobody can hand a verdict a status its fields do not bear out: not a caller, not cached JSON."""
    claimed = Verification(**FIELDS, status="verified", superseded_by=LATER)  # type: ignore[arg-type]
    assert claimed.status == "superseded"
    later = Verification(**FIELDS).model_copy(update={"superseded_by": LATER})  # what Verifier.verify does
    assert (later.status, later.ok) == ("superseded", False)
    cached = Verification.model_validate_json(later.model_dump_json())  # the API's cache, read back
    assert cached.status == "superseded"
    stale = later.model_dump(mode="json") | {"status": "verified"}
    assert Verification.model_validate(stale).status == "superseded"
