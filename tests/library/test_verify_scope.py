"""One verify of many paths reads the chain once per thing it needs (`Verifier.verify_each`), and what it
read stays its own: a root mined after the call began is read at the head it was mined under, and two
calls given in turn (two generators interleaved) never leave their reads to a later verify."""

from __future__ import annotations

from pathlib import Path

import pytest

from anchor.errors import AnchorError, Retracted
from anchor.library.verifier import Verifier
from tests.conftest import Chain


def _stamped(chain: Chain, path: Path, text: str) -> Path:
    path.write_text(text)
    chain.cli("stamp", str(path), check=True)
    return path


def _outcome(result: object) -> str:
    return type(result).__name__ if isinstance(result, AnchorError) else "ok"


def test_a_root_mined_after_a_verify_of_many_began_is_read_at_the_head_it_was_mined_under(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    fresh_chain.cli("deploy", check=True)
    first = _stamped(fresh_chain, tmp_path / "a.txt", "a\n")
    later = tmp_path / "d.txt"
    each = Verifier.from_settings(fresh_chain.settings).verify_each([first, later])
    path, verdict = next(each)
    assert path == first and _outcome(verdict) == "ok", verdict
    _stamped(fresh_chain, later, "d\n")  # a later block, while the call is under way
    path, verdict = next(each)
    assert path == later and _outcome(verdict) == "ok", verdict
    assert verdict.read_at_block >= verdict.anchored_block > 0  # type: ignore[union-attr]


def test_two_verifies_of_many_given_in_turn_leave_nothing_to_a_later_verify(fresh_chain: Chain, tmp_path: Path) -> None:
    """Interleaved, the two calls once reset each other's context variables, and the first one's reads
    outlived both: a root retracted afterwards still verified in that thread."""
    fresh_chain.cli("deploy", check=True)
    held = _stamped(fresh_chain, tmp_path / "h.txt", "h\n")
    others = [_stamped(fresh_chain, tmp_path / f"{n}.txt", f"{n}\n") for n in ("b", "c")]
    verifier = Verifier.from_settings(fresh_chain.settings)
    for (_, one), (_, other) in zip(verifier.verify_each([held]), verifier.verify_each(others), strict=False):
        assert _outcome(one) == _outcome(other) == "ok", (one, other)
    fresh_chain.cli("retract", str(held), "--reason", "wrong data", check=True)
    with pytest.raises(Retracted):
        verifier.verify(held)
    with pytest.raises(Retracted):
        Verifier.from_settings(fresh_chain.settings).verify(held)
