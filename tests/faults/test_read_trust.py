"""A verdict says how final its block is, and does not rest on one endpoint's word: finality against
anvil's `safe`/`finalized` tags, and a quorum of endpoints against one that lies."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from eth_hash.auto import keccak

from anchor.chain.node import rpc_call
from anchor.errors import ExitCode
from tests.conftest import ANCHOR_BIN, Chain
from tests.faults.rpc_proxy import FaultyProxy
from tests.loopback import loopback

ROOT_RECORD = "0x" + keccak(b"rootRecord(address,bytes32)")[:4].hex()
INCLUSION = "0x" + keccak(b"verifyInclusion(address,bytes32,bytes32[],bytes32)")[:4].hex()
ROOT_ANCHORED = "0x" + keccak(b"RootAnchored(bytes32,address)").hex()
LIAR_SUBMITTER = "0x" + "00" * 12 + "ba" * 20
OURS = "f39fd6e51aad88f6f4ce6ab8827279cfffb92266"  # anvil's first account: the local chain's funded key


def _cli(chain: Chain, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**chain.env(), "ANCHOR_RPC_RETRIES": "1", "ANCHOR_RPC_BACKOFF_S": "0.01"}
    return subprocess.run([str(ANCHOR_BIN), *args], env=env, capture_output=True, text=True, timeout=120)


def test_min_finality_refuses_a_fresh_anchor_and_passes_once_the_chain_has_moved_on(
    fresh_chain: Chain, bundle: Path
) -> None:
    fresh_chain.cli("deploy", check=True)
    fresh_chain.cli("anchor", str(bundle), check=True)
    early = _cli(fresh_chain, "verify", str(bundle), "--min-finality", "finalized")
    assert early.returncode == ExitCode.NOT_FINAL, early.stderr
    assert "not yet finalized" in early.stderr and "Traceback" not in early.stderr
    assert _cli(fresh_chain, "verify", str(bundle), "--min-finality", "1").returncode == ExitCode.OK
    assert _cli(fresh_chain, "verify", str(bundle), "--min-finality", "sure").returncode == ExitCode.BAD_INPUT
    rpc_call(fresh_chain.node.rpc_url, "anvil_mine", [hex(40)])  # anvil: safe = head - 32
    safe = json.loads(_cli(fresh_chain, "--json", "verify", str(bundle)).stdout)
    assert safe["finality"] == "safe" and safe["finalized_block"] < safe["anchored_block"] <= safe["safe_block"]
    assert _cli(fresh_chain, "verify", str(bundle), "--min-finality", "finalized").returncode == ExitCode.NOT_FINAL
    rpc_call(fresh_chain.node.rpc_url, "anvil_mine", [hex(40)])  # finalized = head - 64
    late = _cli(fresh_chain, "verify", str(bundle), "--min-finality", "finalized")
    assert late.returncode == ExitCode.OK, late.stderr
    assert "finality    finalized" in late.stdout


def _liar(upstream: str) -> FaultyProxy:
    """An endpoint that says the root was anchored by LIAR_SUBMITTER, consistently: registry v3 finds a
    root's submitter in the receipt of the proof's transaction, so the liar rewrites that event, and
    answers the registry's reads of the liar's record with what the chain holds for ours."""
    liar = FaultyProxy(upstream)

    def receipt(request: dict[str, Any], result: Any) -> Any:
        for log in (result or {}).get("logs", []):
            if log["topics"][:1] == [ROOT_ANCHORED]:
                log["topics"][2] = LIAR_SUBMITTER
        return result

    def call(request: dict[str, Any], result: Any) -> Any:
        sent = dict(request["params"][0])
        data = str(sent.get("data", sent.get("input", "")))
        if data.startswith((ROOT_RECORD, INCLUSION)) and "ba" * 20 in data:
            sent["data"] = data.replace("ba" * 20, OURS)
            sent.pop("input", None)
            return rpc_call(upstream, "eth_call", [sent, request["params"][1]])
        return result

    liar.lie, liar.lie_receipt = call, receipt
    return liar


def test_two_honest_endpoints_outvote_a_liar_and_name_it_and_the_liar_alone_gets_no_verdict(
    fresh_chain: Chain, bundle: Path
) -> None:
    fresh_chain.cli("deploy", check=True)
    fresh_chain.cli("anchor", str(bundle), check=True)
    honest = [FaultyProxy(fresh_chain.node.rpc_url) for _ in range(2)]
    liar = _liar(fresh_chain.node.rpc_url)
    try:
        alone = json.loads(_cli(fresh_chain, "--rpc-url", liar.url, "--json", "verify", str(bundle)).stdout)
        assert alone["submitter"].lower() == "0x" + "ba" * 20  # one endpoint's word is all a single read has
        urls = [a for p in (*honest, liar) for a in ("--rpc-url", p.url)]
        voted = _cli(fresh_chain, *urls, "verify", str(bundle), "--quorum", "2")
        assert voted.returncode == ExitCode.OK, voted.stderr
        assert f"DISAGREED   {liar.url}: submitter" in voted.stdout
        verdict = json.loads(_cli(fresh_chain, *urls, "--json", "verify", str(bundle), "--quorum", "2").stdout)
        assert verdict["submitter"].lower() != "0x" + "ba" * 20
        assert sorted(verdict["quorum"]["agreeing"]) == sorted(p.url for p in honest)
        assert list(verdict["quorum"]["disagreeing"]) == [liar.url]
        refused = _cli(fresh_chain, "--rpc-url", liar.url, "verify", str(bundle), "--quorum", "2")
        assert refused.returncode == ExitCode.BAD_INPUT and "only 1 read endpoint is" in refused.stderr  # never read
        split = _cli(fresh_chain, "--rpc-url", honest[0].url, "--rpc-url", liar.url, "verify", str(bundle))
        assert split.returncode == ExitCode.NO_QUORUM and liar.url in split.stderr  # 1 against 1: no answer
    finally:
        for proxy in (*honest, liar):
            proxy.stop()


def _claim_everything_is_finalized(request: dict[str, Any], result: Any) -> Any:
    if request["params"][0] in ("safe", "finalized") and isinstance(result, dict):
        return {**result, "number": hex(10**9)}  # its safe and finalized heads far beyond the chain's head
    return result


def test_an_endpoint_listed_first_cannot_make_an_anchor_final_for_the_quorum(fresh_chain: Chain, bundle: Path) -> None:
    """endpoints agree on what is anchored, and may differ on how final it is; the verdict
    is as final as the least final endpoint that backs it. A liar listed first used to decide it."""
    fresh_chain.cli("deploy", check=True)
    fresh_chain.cli("anchor", str(bundle), check=True)
    liar, honest = FaultyProxy(fresh_chain.node.rpc_url), [FaultyProxy(fresh_chain.node.rpc_url) for _ in range(2)]
    liar.lie_block = _claim_everything_is_finalized
    try:
        alone = json.loads(_cli(fresh_chain, "--rpc-url", liar.url, "--json", "verify", str(bundle)).stdout)
        assert alone["finality"] == "finalized"  # one endpoint's word is all a single read has
        urls = [a for p in (liar, *honest) for a in ("--rpc-url", p.url)]
        voted = _cli(fresh_chain, *urls, "verify", str(bundle), "--min-finality", "finalized")
        assert voted.returncode == ExitCode.NOT_FINAL, voted.stdout + voted.stderr
        verdict = json.loads(_cli(fresh_chain, *urls, "--json", "verify", str(bundle)).stdout)
        assert verdict["finality"] != "finalized" and len(verdict["quorum"]["agreeing"]) == 3
    finally:
        for proxy in (liar, *honest):
            proxy.stop()


def test_an_endpoint_named_twice_votes_once_and_a_quorum_no_list_can_meet_is_refused_before_any_read(
    tmp_path: Path,
) -> None:
    """The same endpoint listed twice (`--rpc-url A --rpc-url A --rpc-url B`, or ANCHOR_READ_RPCS) counted
    as two voters, so A alone met a quorum of 2 that was meant to need two parties; and `--quorum 3` with
    two endpoints read both, then said "no quorum" (exit 12) for a list that could never give one. Both are
    now refused as input (exit 2) before anything is read."""
    import pytest

    from anchor.errors import BadInput
    from anchor.readback.quorum import read_agreed
    from anchor.settings.session import Settings

    reads: list[str | None] = []

    def read(one: Settings) -> str:
        reads.append(one.rpc_url)
        return "verified"

    twice = Settings(data_dir=tmp_path, read_rpcs=("http://a.example:8545", "http://a.example:8545/", "http://b:1"))
    with pytest.raises(BadInput, match="named twice") as refused:
        read_agreed(twice, read, lambda answer: answer, quorum=2)
    assert refused.value.detail["field"] == "rpc_url" and reads == []
    two = Settings(data_dir=tmp_path, read_rpcs=("http://a.example:8545", "http://b.example:8545"))
    with pytest.raises(BadInput, match="quorum 3: only 2 read endpoints") as refused:
        read_agreed(two, read, lambda answer: answer, quorum=3)
    assert refused.value.detail["field"] == "quorum" and reads == []
    assert read_agreed(two, read, lambda answer: answer, quorum=2)[0] == "verified" and len(reads) == 2
    # a service configured so is refused when it starts, not on every read it would answer
    import os

    from tests.cli import run_anchor_process

    env = {**os.environ, "ANCHOR_DATA_DIR": str(tmp_path / "d"), "ANCHOR_READ_RPCS": "http://a:1,http://a:1/"}
    served = run_anchor_process(["serve", "--port", "9"], env, timeout=60)  # a child: had it served, it times out
    assert served.returncode == ExitCode.BAD_INPUT and "named twice among the read endpoints" in served.stderr


def test_an_endpoint_out_of_reach_is_asked_once_for_many_paths_and_the_other_two_agree(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """`verify A B C` through three endpoints, one answering 503: each path's reads asked it again and
    waited out its retries and back-off every time (per path, per read). Within one call it is asked
    once; its silence is then remembered, and the two others agree on every path."""
    fresh_chain.cli("deploy", check=True)
    paths = []
    for i in range(3):
        folder = tmp_path / f"results-{i}"
        folder.mkdir()
        (folder / "metrics.json").write_text(f'{{"run": {i}}}')
        fresh_chain.cli("stamp", str(folder), check=True)  # three stamps: three roots, three chain reads
        paths.append(str(folder))
    honest = [FaultyProxy(fresh_chain.node.rpc_url) for _ in range(2)]
    down = FaultyProxy(fresh_chain.node.rpc_url)
    down.mode = "503"
    try:
        urls = [a for p in (honest[0], down, honest[1]) for a in ("--rpc-url", p.url)]
        done = _cli(fresh_chain, *urls, "verify", *paths)
        assert done.returncode == ExitCode.OK, done.stdout + done.stderr
        assert done.stdout.splitlines()[-1] == "3 of 3 paths verified"
        assert down.faults == 2  # ANCHOR_RPC_RETRIES=1: one read, two attempts, then never asked again
    finally:
        for proxy in (*honest, down):
            proxy.stop()


def test_one_verdict_that_reads_the_chain_twice_asks_an_endpoint_out_of_reach_once(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """A result bundle's verdict reads the chain for the bundle and for its timing record: through three
    endpoints, one answering 503, each read waited out that endpoint's retries again."""
    from tests.conftest import result_bundle_spec

    fresh_chain.cli("deploy", check=True)
    spec = result_bundle_spec(tmp_path)
    (tmp_path / "bundle").mkdir()
    (tmp_path / "bundle" / "metrics.json").write_text('{"sharpe": 1.2}')
    fresh_chain.cli("bundle", str(spec), "--anchor", check=True)
    honest = [FaultyProxy(fresh_chain.node.rpc_url) for _ in range(2)]
    down = FaultyProxy(fresh_chain.node.rpc_url)
    down.mode = "503"
    try:
        urls = [a for p in (honest[0], down, honest[1]) for a in ("--rpc-url", p.url)]
        done = _cli(fresh_chain, *urls, "--json", "verify", str(tmp_path / "bundle"))
        assert done.returncode == ExitCode.OK, done.stdout + done.stderr
        assert json.loads(done.stdout)["milestones_anchored"] is True  # the timing record was read too
        assert down.faults == 2  # ANCHOR_RPC_RETRIES=1: asked once, two attempts
    finally:
        for proxy in (*honest, down):
            proxy.stop()


def test_an_endpoint_answering_malformed_data_is_out_of_reach_not_an_internal_error_and_the_quorum_goes_on(
    fresh_chain: Chain, bundle: Path
) -> None:
    """An endpoint whose `eth_call` answers "0x123" (half a byte) or whose `eth_blockNumber` answers null
    made `bytes.fromhex` or `int` raise: an internal error (exit 1) alone, and through `--quorum` one
    such endpoint stopped the two honest ones from giving a verdict. It is now that endpoint out of
    reach, named with the method, and the others agree."""
    fresh_chain.cli("deploy", check=True)
    fresh_chain.cli("anchor", str(bundle), check=True)
    honest = [FaultyProxy(fresh_chain.node.rpc_url) for _ in range(2)]
    broken = FaultyProxy(fresh_chain.node.rpc_url)
    broken.lie = lambda request, result: "0x123"
    try:
        alone = _cli(fresh_chain, "--rpc-url", broken.url, "verify", str(bundle))
        assert alone.returncode == ExitCode.CHAIN_UNREACHABLE, alone.stdout + alone.stderr
        assert "eth_call answered '0x123', not data" in alone.stderr
        urls = [a for p in (honest[0], broken, honest[1]) for a in ("--rpc-url", p.url)]
        voted = _cli(fresh_chain, *urls, "verify", str(bundle), "--quorum", "2")
        assert voted.returncode == ExitCode.OK, voted.stdout + voted.stderr
    finally:
        for proxy in (*honest, broken):
            proxy.stop()


def test_an_answer_to_another_request_is_never_taken_for_this_ones() -> None:
    """An endpoint that sends a second, late answer puts the kept-alive connection out of step: each
    request then read the answer meant for the one before. Answers carry the request's id; one with
    another id is dropped with its connection and the request asked again on a fresh one."""
    import socket
    import threading

    from anchor.chain.rpc import Rpc

    served: list[int] = []

    def answer(conn: socket.socket, ident: object, result: str) -> None:
        body = json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}).encode()
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))

    def handle(conn: socket.socket, stop: threading.Event) -> None:
        while request := conn.recv(65536):
            asked = json.loads(request.split(b"\r\n\r\n", 1)[1])
            served.append(asked["id"])
            answer(conn, asked["id"], "0x7a69")
            if len(served) == 1:  # a forged second answer, late: after the next request was sent
                stop.wait(0.2)
                answer(conn, 999, "0x1")

    with loopback(handle) as url:
        rpc = Rpc(url)
        try:
            first = rpc.chain_id()
            time.sleep(0.05)  # the next request goes out before the late answer comes in
            assert [first, rpc.chain_id(), rpc.chain_id()] == [31337, 31337, 31337]
        finally:
            rpc.close()


def test_an_error_answer_or_a_malformed_receipt_is_that_endpoint_out_of_reach_never_a_verdict(
    fresh_chain: Chain, bundle: Path
) -> None:
    """A JSON-RPC error to `eth_getCode` (which every node answers) was an internal error, exit 1, and
    through `--quorum` one such endpoint stopped the honest ones; a receipt answered as "str" read as
    "not anchored" (exit 3), a false verdict. Both are that endpoint out of reach now (exit 5), and a
    quorum of the others still gives its verdict."""
    fresh_chain.cli("deploy", check=True)
    fresh_chain.cli("anchor", str(bundle), check=True)
    honest = [FaultyProxy(fresh_chain.node.rpc_url) for _ in range(2)]
    erring, garbled = FaultyProxy(fresh_chain.node.rpc_url), FaultyProxy(fresh_chain.node.rpc_url)
    erring.unsupported = {"eth_getCode"}
    garbled.lie_receipt = lambda request, result: "str"
    try:
        for broken, said in ((erring, "eth_getCode"), (garbled, "eth_getTransactionReceipt answered 'str'")):
            alone = _cli(fresh_chain, "--rpc-url", broken.url, "verify", str(bundle))
            assert alone.returncode == ExitCode.CHAIN_UNREACHABLE, alone.stdout + alone.stderr
            assert said in alone.stderr and "internal" not in alone.stderr, alone.stderr
            urls = [a for p in (honest[0], broken, honest[1]) for a in ("--rpc-url", p.url)]
            voted = _cli(fresh_chain, *urls, "verify", str(bundle), "--quorum", "2")
            assert voted.returncode == ExitCode.OK, voted.stdout + voted.stderr
    finally:
        for proxy in (*honest, erring, garbled):
            proxy.stop()
