"""RPC faults (5xx, stalls, refused connections): bounded retries with backoff, then a typed error;
the journal stays intact and the next run finishes the work."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from anchor.errors import ExitCode
from tests.conftest import Chain
from tests.faults.rpc_proxy import FaultyProxy
from tests.journal_helpers import assert_exactly_once

FAST_RETRIES = {"ANCHOR_RPC_RETRIES": "3", "ANCHOR_RPC_BACKOFF_S": "0.05", "ANCHOR_RPC_TIMEOUT_S": "0.5"}


@pytest.fixture
def proxy(fresh_chain: Chain) -> Iterator[FaultyProxy]:
    fresh_chain.cli("deploy", check=True)
    faulty = FaultyProxy(fresh_chain.node.rpc_url)
    yield faulty
    faulty.stop()


def _cli(chain: Chain, proxy: FaultyProxy, *args: str) -> tuple[int, str, str, float]:
    import subprocess

    from tests.conftest import ANCHOR_BIN

    env = {**chain.env(), **FAST_RETRIES, "ANCHOR_RPC_URL": proxy.url}
    start = time.monotonic()
    result = subprocess.run([str(ANCHOR_BIN), *args], env=env, capture_output=True, text=True, timeout=120)
    return result.returncode, result.stdout, result.stderr, time.monotonic() - start


def _status(chain: Chain, proxy: FaultyProxy) -> dict[str, int]:
    return dict(json.loads(_cli(chain, proxy, "status", "--json")[1])["items"])


def test_a_few_5xx_answers_are_absorbed_by_retries(fresh_chain: Chain, proxy: FaultyProxy, bundle: Path) -> None:
    proxy.fail_next = 2
    code, _, err, _ = _cli(fresh_chain, proxy, "anchor", str(bundle))
    assert code == ExitCode.OK, err
    assert proxy.faults == 2


@pytest.mark.parametrize("throttle_as", ["http", "jsonrpc"])
def test_every_read_of_a_verify_rides_out_a_provider_that_throttles(
    fresh_chain: Chain, proxy: FaultyProxy, bundle: Path, throttle_as: str
) -> None:
    """A hosted provider refuses a share of requests when it is busy, as HTTP 429 or (Infura) as an HTTP
    200 JSON-RPC error, code -32005. Both are the same retry of the one RPC client, for every read a
    verdict makes: the chain id, the code, the record, the receipt, the block, the tagged heads. (The
    JSON-RPC form was retried only where a caller wrapped its read: `eth_chainId` failed the verify.)"""
    assert _cli(fresh_chain, proxy, "stamp", str(bundle))[0] == ExitCode.OK
    proxy.throttle, proxy.throttle_as = 0.4, throttle_as
    env = {**fresh_chain.env(), "ANCHOR_RPC_RETRIES": "12", "ANCHOR_RPC_BACKOFF_S": "0.01", "ANCHOR_RPC_URL": proxy.url}
    import subprocess

    from tests.conftest import ANCHOR_BIN

    for _ in range(3):
        result = subprocess.run(
            [str(ANCHOR_BIN), "verify", str(bundle), "--json"], env=env, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == ExitCode.OK, result.stderr
        assert json.loads(result.stdout)["verified"] is True
    assert proxy.faults > 3  # the throttling was really met
    assert {"eth_chainId", "eth_getCode", "eth_call"} <= set(proxy.calls)


def test_a_write_rides_out_a_provider_that_throttles_it_as_a_json_rpc_error(
    fresh_chain: Chain, proxy: FaultyProxy, bundle: Path
) -> None:
    """Infura's rate-limit answer to eth_sendRawTransaction (HTTP 200, code -32005) is waited out as for a
    read, whether the journal broadcasts (stamp) or web3 sends (retract): resending the same signed bytes
    is safe. Both failed with "the node refused the transaction: project ID request rate exceeded"."""
    proxy.methods, proxy.throttle, proxy.throttle_as = {"eth_sendRawTransaction"}, 0.5, "jsonrpc"
    env = {**fresh_chain.env(), "ANCHOR_RPC_RETRIES": "12", "ANCHOR_RPC_BACKOFF_S": "0.01", "ANCHOR_RPC_URL": proxy.url}
    import subprocess

    from tests.conftest import ANCHOR_BIN

    for n in range(3):
        (bundle / "run-id.txt").write_text(f"write {n}")  # new bytes: a transaction each time
        result = subprocess.run(
            [str(ANCHOR_BIN), "stamp", str(bundle)], env=env, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == ExitCode.OK, result.stderr
    # a retraction is sent by web3 (not the journal): the same transport, the same wait
    proxy.throttle_next, faults = 2, proxy.faults
    retracted = subprocess.run(
        [str(ANCHOR_BIN), "retract", str(bundle), "--reason", "a test"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert retracted.returncode == ExitCode.OK, retracted.stderr
    assert proxy.faults == faults + 2 and proxy.served["eth_sendRawTransaction"] >= 4


def test_a_provider_that_never_stops_throttling_is_chain_unreachable_not_a_bug(
    fresh_chain: Chain, proxy: FaultyProxy, bundle: Path
) -> None:
    """Retries spent on rate-limit error answers end as exit 5 naming the endpoint and the provider's
    words; it was `error[internal]: unexpected RpcError`."""
    assert _cli(fresh_chain, proxy, "stamp", str(bundle))[0] == ExitCode.OK
    proxy.throttle, proxy.throttle_as = 1.0, "jsonrpc"
    code, _, err, _ = _cli(fresh_chain, proxy, "verify", str(bundle))
    assert code == ExitCode.CHAIN_UNREACHABLE, err
    assert "throttled 4 times (project ID request rate exceeded)" in err
    assert proxy.url.removeprefix("http://") in err and "internal" not in err


@pytest.mark.parametrize("status", ["401", "403"])
def test_a_refused_key_stops_at_once_naming_the_endpoint_and_never_the_key(
    fresh_chain: Chain, proxy: FaultyProxy, bundle: Path, status: str
) -> None:
    """An expired key or a wrong project id is not a flaky provider: one request, exit 5, the endpoint
    named without the path that holds the key, and what to check."""
    proxy.mode = status
    env = {**fresh_chain.env(), **FAST_RETRIES, "ANCHOR_RPC_URL": f"{proxy.url}/v3/SECRETKEY0123456789"}
    import subprocess

    from tests.conftest import ANCHOR_BIN

    result = subprocess.run(
        [str(ANCHOR_BIN), "stamp", str(bundle)], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == ExitCode.CHAIN_UNREACHABLE, result.stderr
    assert sum(proxy.calls.values()) == 1  # never retried
    assert f"{proxy.url}: HTTP {status}" in result.stderr and "check the URL's key" in result.stderr
    assert "SECRETKEY" not in result.stderr + result.stdout


def test_retry_jitter_is_fixed_by_host_process_and_call_so_replicas_spread_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from anchor.chain import rpc as connection

    mine = [connection.jitter("eth_call", attempt) for attempt in range(4)]
    assert mine == [connection.jitter("eth_call", attempt) for attempt in range(4)]  # this process replays
    assert all(0 <= j < 1 for j in mine) and len(set(mine)) == 4
    monkeypatch.setattr("os.getpid", lambda: 424242)  # another replica on the same host
    assert [connection.jitter("eth_call", attempt) for attempt in range(4)] != mine


@pytest.mark.parametrize("mode", ["503", "stall"])
def test_a_failing_endpoint_gives_a_typed_error_then_the_next_run_finishes(
    fresh_chain: Chain, proxy: FaultyProxy, bundle: Path, mode: str
) -> None:
    assert _cli(fresh_chain, proxy, "journal", "submit", str(bundle))[0] == ExitCode.OK
    proxy.mode, proxy.methods = mode, {"eth_sendRawTransaction", "eth_getTransactionReceipt"}
    code, _, err, took = _cli(fresh_chain, proxy, "flush")
    assert code == ExitCode.CHAIN_UNREACHABLE, err
    assert "failed 4 times" in err  # 1 try + 3 retries, then the typed error
    assert took < 30
    proxy.mode = "ok"
    assert _status(fresh_chain, proxy) == {"pending": 0, "batched": 1, "confirmed": 0}  # journal intact
    assert _cli(fresh_chain, proxy, "flush")[0] == ExitCode.OK
    assert_exactly_once(fresh_chain.node.rpc_url, fresh_chain.data_dir, 1)


def test_a_refused_connection_gives_a_typed_error_then_the_next_run_finishes(
    fresh_chain: Chain, proxy: FaultyProxy, bundle: Path
) -> None:
    assert _cli(fresh_chain, proxy, "journal", "submit", str(bundle))[0] == ExitCode.OK
    proxy.stop()
    code, _, err, _ = _cli(fresh_chain, proxy, "flush")
    assert code == ExitCode.CHAIN_UNREACHABLE and "connection refused: nothing listens there" in err
    proxy.start()
    assert _status(fresh_chain, proxy) == {"pending": 1, "batched": 0, "confirmed": 0}
    assert _cli(fresh_chain, proxy, "flush")[0] == ExitCode.OK
    assert_exactly_once(fresh_chain.node.rpc_url, fresh_chain.data_dir, 1)
