"""The suite's own machinery (tests/conftest.py): tiers marked from fixtures, the fast tier kept free of
chains, and random choices replayable from ANCHOR_TEST_SEED."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from anchor.chain.node import LocalChain
from tests.conftest import SEED, test_rng, touches


@pytest.fixture
@touches("soak")
def pretends_to_soak() -> Iterator[None]:
    yield


@pytest.fixture
def built_on_it(pretends_to_soak: None) -> None:
    """Touches nothing itself: the tier comes through the fixture it uses."""


def test_a_test_is_marked_with_the_tier_of_every_fixture_it_uses_even_through_another(
    request: pytest.FixtureRequest, built_on_it: None
) -> None:
    assert request.node.get_closest_marker("soak") is not None
    assert request.node.get_closest_marker("chain") is None


def test_an_unmarked_test_that_starts_the_local_chain_fails_naming_the_mark(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="mark it chain or use a chain fixture"):
        LocalChain(tmp_path / "data", port=1).up()


def test_the_same_seed_and_scope_make_the_same_choices_and_another_scope_others() -> None:
    first = [test_rng("seam", "sqlite").randint(1, 3) for _ in range(1)] + test_rng("x").sample(range(1000), 20)
    again = [test_rng("seam", "sqlite").randint(1, 3) for _ in range(1)] + test_rng("x").sample(range(1000), 20)
    assert first == again
    assert test_rng("x").sample(range(1000), 20) != test_rng("y").sample(range(1000), 20)
    assert SEED  # printed in the header of every run and with every failure
