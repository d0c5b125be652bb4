"""One verify of many paths reads the chain once per thing it needs (`Verifier.verify_each`), and what it
read stays its own: a root mined after the call began is read at the head it was mined under, and two
calls given in turn (two generators interleaved) never leave their reads to a later verify."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from anchor.errors import AnchorError, ChainUnreachable, Retracted
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


def test_a_producer_that_gives_each_path_after_the_verdict_before_it_is_never_waited_on(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """Reading ahead takes paths ahead of the checks; from a lazy iterable it would wait for paths that
    a producer gives only once it has the verdicts before them (a queue fed by what was verified). From
    an iterable that is not a sequence, each path is taken when the one before it has its verdict."""
    fresh_chain.cli("deploy", check=True)
    paths = [_stamped(fresh_chain, tmp_path / f"{n}.txt", f"{n}\n") for n in range(4)]
    seen: list[Path] = []

    def produced() -> Iterator[Path]:
        for n, path in enumerate(paths):
            assert len(seen) == n, f"path {n} taken before the verdict on path {n - 1} was given"
            yield path

    for path, verdict in Verifier.from_settings(fresh_chain.settings).verify_each(produced()):
        assert _outcome(verdict) == "ok", verdict
        seen.append(path)
    assert seen == paths


def test_what_is_read_ahead_skips_an_endpoint_out_of_reach_and_keeps_one_window_of_answers(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """An endpoint the verdicts already count as silent is sent no batch (it could hold each one up to
    its timeout); and an answer read ahead that no verdict took (a proof whose claim was false) is
    dropped when the next window is read, not held for the rest of the call."""
    from anchor.readback.ahead import read_ahead
    from anchor.readback.checklist import ChainReads, reads_once
    from tests.faults.rpc_proxy import FaultyProxy

    fresh_chain.cli("deploy", check=True)
    paths = [_stamped(fresh_chain, tmp_path / f"{n}.txt", f"{n}\n") for n in range(3)]
    proxy = FaultyProxy(fresh_chain.node.rpc_url)
    try:
        settings = replace(fresh_chain.settings, rpc_url=proxy.url)
        verifier, scope = Verifier.from_settings(settings), ChainReads()
        with reads_once(scope):
            verifier.verify(paths[0])
        (registry,) = scope.registries
        posts = proxy.posts
        assert read_ahead(scope, paths[1:2]) == 1 and proxy.posts == posts + 2  # a receipt, then a record
        assert len(registry.rpc._ahead) == 2  # noqa: SLF001 - what waits in memory is what this test is about
        scope.down[registry.rpc.url] = ChainUnreachable("silent")
        assert read_ahead(scope, paths[2:]) == 0 and proxy.posts == posts + 2  # nothing sent
        assert registry.rpc._ahead == {}  # noqa: SLF001 - the window before, not taken, dropped
    finally:
        proxy.stop()


def test_a_local_chain_started_during_a_verify_of_many_is_read_for_the_paths_after(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """A chain that is not running fails its path at once; it is not remembered as out of reach, so the
    paths given after it is started are read (only a wait for a busy chain is remembered, briefly)."""
    fresh_chain.cli("deploy", check=True)
    paths = [_stamped(fresh_chain, tmp_path / f"{n}.txt", f"{n}\n") for n in range(3)]
    fresh_chain.node.down()
    each = Verifier.from_settings(fresh_chain.settings).verify_each(paths)
    path, verdict = next(each)
    assert isinstance(verdict, ChainUnreachable) and "not running" in str(verdict), verdict
    fresh_chain.node.up()
    assert [_outcome(v) for _, v in each] == ["ok", "ok"]


def test_an_endpoint_that_stops_answering_during_a_verify_of_many_is_waited_out_once_for_the_paths_right_after(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """After the first verdict the endpoint answers only errors (a chain SIGSTOPped: each read timed out
    its retries, 51 s a path, over an hour for 80 paths). A path whose reads failed after a wait tells the
    paths right after it the same at once, for as long as it waited; then the endpoint is asked again,
    and read if it is back."""
    import time

    from anchor.settings.model import Environment
    from tests.faults.rpc_proxy import FaultyProxy

    fresh_chain.cli("deploy", check=True)
    paths = [_stamped(fresh_chain, tmp_path / f"{n}.txt", f"{n}\n") for n in range(5)]  # five roots
    proxy = FaultyProxy(fresh_chain.node.rpc_url)
    try:
        retries = {"ANCHOR_RPC_RETRIES": "3", "ANCHOR_RPC_BACKOFF_S": "1"}  # about 4 s of waits a failed read
        settings = replace(fresh_chain.settings, rpc_url=proxy.url, env=Environment(retries))
        each = Verifier.from_settings(settings).verify_each(iter(paths))  # one at a time: nothing read ahead
        assert _outcome(next(each)[1]) == "ok"
        proxy.mode = "503"
        started = time.monotonic()
        assert _outcome(next(each)[1]) == "ChainUnreachable"
        waited, posts = time.monotonic() - started, proxy.posts
        assert [_outcome(next(each)[1]) for _ in range(2)] == ["ChainUnreachable"] * 2
        assert proxy.posts == posts  # the two paths right after were told at once, not asked again
        proxy.mode = "ok"
        time.sleep(waited)  # past the wait: the endpoint, back, is read again
        assert _outcome(next(each)[1]) == "ok"
    finally:
        proxy.stop()


def test_a_read_that_fails_for_one_path_alone_is_not_taken_for_an_endpoint_out_of_reach(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """The wait remembered above is for an endpoint that gave no answer (its retries spent). One that
    answers one path's read slowly and out of form (or with an HTTP 400 for that transaction) has
    answered: the paths after it are read as before, and verify as they do alone."""
    import json
    import time

    from tests.faults.rpc_proxy import FaultyProxy

    fresh_chain.cli("deploy", check=True)
    paths = [_stamped(fresh_chain, tmp_path / f"{n}.txt", f"{n}\n") for n in range(3)]  # three roots
    refused = json.loads(tmp_path.joinpath("1.txt.anchor.json").read_text())["anchor"]["tx_hash"]

    def slow_and_out_of_form(request: dict[str, object], result: object) -> object:
        if refused in json.dumps(request):
            time.sleep(2)
            return "not a receipt"
        return result

    proxy = FaultyProxy(fresh_chain.node.rpc_url)
    proxy.lie_receipt = slow_and_out_of_form
    try:
        settings = replace(fresh_chain.settings, rpc_url=proxy.url)
        outcomes = [_outcome(v) for _, v in Verifier.from_settings(settings).verify_each(iter(paths))]
        assert outcomes == ["ok", "ChainUnreachable", "ok"], outcomes
    finally:
        proxy.stop()


def test_an_endpoint_of_a_quorum_that_refuses_one_paths_read_still_votes_on_the_paths_after(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """With three endpoints and a quorum of three, one refusing one transaction's receipt (an answer out
    of form) was remembered as down for the whole call: every path after it was NO_QUORUM, while each
    alone verified. Only an endpoint that gave no answer is remembered."""
    import json

    from tests.faults.rpc_proxy import FaultyProxy

    fresh_chain.cli("deploy", check=True)
    paths = [_stamped(fresh_chain, tmp_path / f"{n}.txt", f"{n}\n") for n in range(3)]  # three roots
    refused = json.loads(tmp_path.joinpath("1.txt.anchor.json").read_text())["anchor"]["tx_hash"]
    proxies = [FaultyProxy(fresh_chain.node.rpc_url) for _ in range(3)]
    proxies[2].lie_receipt = lambda request, result: "not a receipt" if refused in json.dumps(request) else result
    try:
        settings = replace(fresh_chain.settings, rpc_url=None, read_rpcs=tuple(p.url for p in proxies))
        verifier = Verifier.from_settings(settings, quorum=3)
        outcomes = [_outcome(v) for _, v in verifier.verify_each(iter(paths))]
        assert outcomes[0] == outcomes[2] == "ok" and outcomes[1] != "ok", outcomes
    finally:
        for proxy in proxies:
            proxy.stop()
