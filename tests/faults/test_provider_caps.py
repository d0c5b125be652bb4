"""Reads through a provider like the hosted ones for Base: `eth_getLogs` capped at 1,000 blocks, 429
answered at random, on a chain past 100,000 blocks. Lookup, verify, an explorer page and crash
recovery all work there, and a researcher-bound lookup costs the same number of calls at 1,000 and
at 100,000 blocks (registry v2 keeps each record's block beside it)."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from anchor.anchoring.service import AnchorService
from anchor.chain.keys import load_signer
from anchor.chain.node import rpc_call
from anchor.chain.open import open_chain, open_registry
from anchor.chain.toolchain import tool
from anchor.settings.session import Settings
from tests.api_server import serving_api
from tests.conftest import ANCHOR_BIN, free_port, touches
from tests.faults.rpc_proxy import FaultyProxy

# generous retries: 20% of requests are throttled, each must get through
PROVIDER = {"ANCHOR_RPC_RETRIES": "10", "ANCHOR_RPC_BACKOFF_S": "0.01", "ANCHOR_RPC_TIMEOUT_S": "5"}
COMMIT = "c0ffee" + "ab" * 17


class Node:
    """An anvil of this test's own, like a remote chain: reached by URL only. Without history pruning
    anvil mines 100,000 empty blocks in minutes; with it, in seconds (reads here are all at the head,
    logs and receipts of old blocks are kept)."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        args = [str(tool("anvil")), "--port", str(port), "--hardfork", "cancun", "--prune-history", "--silent"]
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                rpc_call(self.url, "eth_blockNumber")
                return
            except Exception:  # noqa: BLE001 - not up yet
                time.sleep(0.05)
        raise AssertionError("anvil did not come up")

    def env(self, url: str | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
        return {**env, **PROVIDER, "ANCHOR_DATA_DIR": str(self.data_dir), "ANCHOR_RPC_URL": url or self.url}

    def cli(self, *args: str, url: str | None = None) -> tuple[subprocess.CompletedProcess[str], float]:
        start = time.monotonic()
        result = subprocess.run(
            [str(ANCHOR_BIN), *args],
            env=self.env(url),
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
        )
        return result, time.monotonic() - start

    def mine_to(self, height: int) -> None:
        head = int(str(rpc_call(self.url, "eth_blockNumber", [])), 16)
        if height > head:
            rpc_call(self.url, "anvil_mine", [hex(height - head)], timeout=300)


@pytest.fixture
@touches("chain")
def node(tmp_path: Path) -> Iterator[Node]:
    started = Node(tmp_path / "data")
    yield started
    started.process.terminate()  # ours, by the PID we started
    started.process.wait()


def test_lookup_verify_explorer_and_recovery_work_through_a_capped_flaky_provider_past_100k_blocks(
    node: Node, bundle: Path
) -> None:
    assert node.cli("deploy")[0].returncode == 0
    assert node.cli("anchor", str(bundle))[0].returncode == 0
    settings = Settings(data_dir=node.data_dir, rpc_url=node.url)
    service = AnchorService.open(settings, start_local=False)
    commit = bytes.fromhex(COMMIT).ljust(32, b"\0")
    service.runner.open_lineage(commit, b"\1" * 32, b"\2" * 32, b"\3" * 32, True)
    service.flush()
    me = service.runner.signer.address
    service.close()

    proxy = FaultyProxy(node.url)
    proxy.log_range_cap, proxy.throttle = 1_000, 0.2
    try:
        figures = {}
        for height in (1_000, 100_000):
            node.mine_to(height)
            proxy.served.clear()
            result, seconds = node.cli("--json", "lookup", COMMIT, "--researcher", me, url=proxy.url)
            assert result.returncode == 0, result.stderr
            assert json.loads(result.stdout)["record"]["researcher"] == me
            figures[height] = (sum(proxy.served.values()), seconds, dict(proxy.served))
        print(f"\nlookup --researcher through the capped proxy: {figures}")
        assert figures[1_000][0] == figures[100_000][0], figures  # O(1): the same calls at any height
        assert figures[100_000][2].get("eth_getLogs") == 1  # the record's own block, nothing else

        # without a researcher the commit's events are walked in bounded windows: slower, still an answer
        proxy.faults = 0
        result, seconds = node.cli("--json", "lookup", COMMIT, url=proxy.url)
        assert result.returncode == 0, result.stderr
        print(f"lookup (walk) at 100,000 blocks: {seconds:.1f} s, {proxy.faults} faults answered by the proxy")
        assert proxy.faults > 0  # the cap and the 429s were really met

        result, _ = node.cli("verify", str(bundle), url=proxy.url)
        assert result.returncode == 0, result.stderr

        with (
            serving_api(node.env(proxy.url)) as url,
            urllib.request.urlopen(f"{url}/v1/attempts/{COMMIT}", timeout=60) as answer,
        ):  # noqa: S310
            assert json.loads(answer.read())["lineage_on_chain"]["researcher"] == me

        # crash recovery: our record reached the chain but the journal never learned it (lost with a
        # crash); the next flush, through the provider, finds it in O(1) calls and adopts it
        direct = Settings(data_dir=node.data_dir, rpc_url=proxy.url)
        handle = open_chain(direct, start_local=False)
        registry = open_registry(direct, handle)
        lost = bytes.fromhex("de" * 20).ljust(32, b"\0")
        registry.anchor_lineage(load_signer(handle.chain_id), lost, b"\4" * 32, b"\5" * 32, b"\6" * 32, True)
        service = AnchorService.open(direct, start_local=False)
        effect = service.runner.open_lineage(lost, b"\4" * 32, b"\5" * 32, b"\6" * 32, True)
        report = service.flush()
        assert report.adopted == [effect] and effect in report.confirmed and not report.failed
        service.close()
    finally:
        proxy.stop()
