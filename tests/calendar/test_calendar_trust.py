"""A keyless client that trusts nothing it is handed, tried as a hostile service and as someone
who edits a pending proof would. Two services: A anchors, B accepts and never anchors. Each case below
passed the old client: `--require all` met by one anchor on a pending proof, a copied anchor counted
twice, any submitter labelled as any service's account, the token sent to a URL only the file named, a
dripping server holding `verify` and `upgrade` for good, `upgrade` saying COMPLETE while B was pending,
a FIFO at the proof path, and a forwarded header giving one client a fresh calendar bucket per request."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from anchor.errors import ExitCode
from tests.calendar.test_calendar import TOKEN, _client, _hash, _results, local_service, other_chain_service
from tests.cli import ANCHOR_BIN, run_anchor
from tests.conftest import deployed
from tests.loopback import loopback

pytestmark = pytest.mark.chain


def test_one_counting_rule_for_a_pending_proof_and_after_upgrade_with_one_service_never_anchoring(
    tmp_path: Path,
) -> None:
    client = _client(tmp_path)
    with local_service(tmp_path) as a, other_chain_service(tmp_path) as b:
        results = _results(tmp_path)
        run_anchor(["stamp", str(results), "--service", a.url, "--service", b.url], client, check=True)
        a.flush()  # B never flushes
        read = ["--rpc-url", a.rpc, "--rpc-url", b.rpc, "--registry", a.registry, "--registry", b.registry]
        before = run_anchor(["verify", str(results), *read, "--require", "all"], client)
        assert before.returncode == ExitCode.PENDING, before.stdout + before.stderr  # was 0: "1 of 1 verified"
        assert "1 of 2 anchors verified, 2 needed" in before.stderr and b.url in before.stderr
        two = run_anchor(["verify", str(results), *read, "--require", "2"], client)
        assert two.returncode == ExitCode.PENDING
        anyone = run_anchor(["verify", str(results), *read], client)
        assert anyone.returncode == ExitCode.OK and f"(the account of {a.url})" in anyone.stdout

        upgraded = run_anchor(["upgrade", str(results), "--rpc-url", a.rpc, "--rpc-url", b.rpc], client)
        assert upgraded.returncode == ExitCode.PENDING, upgraded.stdout  # B still pending: not COMPLETE, not 0
        lines = upgraded.stdout.splitlines()
        assert lines[0].startswith("PENDING  ") and "\\x0a" not in upgraded.stdout
        assert any(line.startswith(f"  added    anchor from {a.url}") for line in lines)
        assert f"  pending  {b.url}: not in a mined batch yet" in lines
        after = run_anchor(["verify", str(results), *read, "--require", "all"], client)
        assert after.returncode == ExitCode.PENDING and "1 of 2 anchors verified, 2 needed" in after.stderr

        proof_path = tmp_path / "results.anchor.json"
        upgraded_proof = json.loads(proof_path.read_text())
        # the one real anchor copied under B's name: one transaction, counted once
        copy = {"service": b.url, "batch": upgraded_proof["batch"], "anchor": upgraded_proof["anchor"]}
        proof_path.write_text(json.dumps({**upgraded_proof, "anchors": [copy]}))
        doubled = run_anchor(["verify", str(results), *read, "--require", "all"], client)
        assert doubled.returncode == ExitCode.PENDING, doubled.stdout + doubled.stderr  # was 0: "2 of 2 verified"
        shown = run_anchor(["verify", str(results), *read], client)
        assert shown.returncode == ExitCode.OK and f"same transaction as {a.url}" in shown.stdout
        assert run_anchor(["verify", str(results), *read, "--require", "2"], client).returncode == ExitCode.PENDING
        # A's anchor labelled as B's (an unsigned field): never "the account of B"
        proof_path.write_text(json.dumps({**upgraded_proof, "service": b.url}))
        relabelled = run_anchor(["verify", str(results), *read, "--json"], client)
        verdict = json.loads(relabelled.stdout)
        assert verdict["verified"] and verdict["service"] is None, verdict
        assert verdict["anchors"][0]["confirmed"] is False and verdict["anchors"][0]["service"] == b.url
        said = run_anchor(["verify", str(results), *read], client).stdout
        assert "the account of" not in said and "unconfirmed: named in the file" in said
        assert run_anchor(["verify", str(results), *read, "--require", "all"], client).returncode == ExitCode.PENDING


@contextmanager
def _listener(
    answer: bytes | Callable[[bytes], bytes] | None = None, drip_s: float = 0.0
) -> Iterator[tuple[str, list[bytes]]]:
    """A server on loopback that records every request it gets; `answer` (or what it makes of the
    request) is sent, then a byte every `drip_s` when dripping. It stops by itself when the test ends."""
    seen: list[bytes] = []

    def handle(conn: socket.socket, stop: threading.Event) -> None:
        seen.append(conn.recv(65536))
        if answer is None:
            return
        conn.sendall(answer(seen[-1]) if callable(answer) else answer)
        while drip_s and not stop.wait(drip_s):
            conn.sendall(b"x")

    with loopback(handle) as url:
        yield url, seen


def _posing_as_a_service(request: bytes) -> bytes:
    """A hostile server: a plausible /v1/service (so a client goes on to submit), 500 for the rest."""
    if request.startswith(b"GET /v1/service"):
        body = json.dumps(
            {
                "receipt_signer": "0x" + "11" * 20,
                "submitter": "0x" + "22" * 20,
                "chain_id": 31337,
                "registry": "0x" + "33" * 20,
                "calendar": False,
            }
        ).encode()
        return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
    return b"HTTP/1.1 500 x\r\nContent-Length: 0\r\n\r\n"


def test_the_token_goes_only_where_the_user_sent_it(tmp_path: Path) -> None:
    client = _client(tmp_path)  # ANCHOR_SERVICE_TOKEN set, bare: for the configured services only
    with local_service(tmp_path) as a, _listener(_posing_as_a_service) as (hostile, seen):
        results = _results(tmp_path)
        run_anchor(["stamp", str(results), "--service", a.url], client, check=True)
        proof_path = tmp_path / "results.anchor.json"
        edited = {**json.loads(proof_path.read_text()), "unreached": [hostile]}  # whoever edits the file
        proof_path.write_text(json.dumps(edited))
        upgraded = run_anchor(["upgrade", str(results), "--rpc-url", a.rpc], client)
        assert upgraded.returncode == ExitCode.PENDING, upgraded.stdout + upgraded.stderr
        assert f"not contacted  {hostile}" in upgraded.stdout
        assert seen == [], seen  # before: it got POST /v1/manifests with "Authorization: Bearer calendar-test-token"
        assert TOKEN not in proof_path.read_text()
        # configured now, it is the user's choice: it is contacted, with the token the user gave it
        asked = run_anchor(["upgrade", str(results), "--rpc-url", a.rpc, "--service", hostile], client)
        assert asked.returncode == ExitCode.PENDING and f"skipped  {hostile}" in asked.stdout
        [skipped] = [line for line in asked.stdout.splitlines() if line.startswith(f"  skipped  {hostile}")]
        assert skipped.count(hostile) == 1, skipped  # the URL was once said twice
        assert any(request.startswith(b"POST /v1/manifests") for request in seen), seen
    insecure = run_anchor(["stamp", str(results), "--service", "http://anchor-service.invalid:8000"], client)
    assert insecure.returncode == ExitCode.BAD_INPUT and "--allow-insecure-token" in insecure.stderr
    assert "in clear over plain http" in insecure.stderr


def test_a_dripping_server_named_by_the_file_ends_within_its_deadline_and_is_named(tmp_path: Path) -> None:
    client = _client(tmp_path)
    drip = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"
    with local_service(tmp_path) as a, _listener(drip, drip_s=2.0) as (slow, seen):
        results = _results(tmp_path)
        run_anchor(["stamp", str(results), "--service", a.url], client, check=True)
        proof_path = tmp_path / "results.anchor.json"
        pending = json.loads(proof_path.read_text())
        pending["receipts"][0]["url"] = slow  # the receipt's url is not signed
        proof_path.write_text(json.dumps(pending))
        for argv in (["verify", str(results), "--rpc-url", a.rpc], ["upgrade", str(results), "--rpc-url", a.rpc]):
            started = time.monotonic()
            done = subprocess.run([str(ANCHOR_BIN), *argv], env=client, capture_output=True, text=True, timeout=150)
            took = time.monotonic() - started
            assert done.returncode == ExitCode.PENDING, done.stdout + done.stderr  # was: killed at 90 s, no verdict
            assert slow in done.stdout + done.stderr, done.stdout + done.stderr
            print(f"{argv[0]} against the dripping server ended in {took:.1f} s")  # the figure, never asserted
        assert seen  # it was asked (and dripped), which is what had hung the client
        assert (
            "(named by the file)"
            in subprocess.run(
                [str(ANCHOR_BIN), "verify", str(results), "--rpc-url", a.rpc],
                env=client,
                capture_output=True,
                text=True,
                timeout=150,
            ).stderr
        )


def test_upgrade_refuses_a_fifo_at_the_proof_path_at_once(tmp_path: Path) -> None:
    results = _results(tmp_path)
    os.mkfifo(tmp_path / "results.anchor.json")
    done = subprocess.run(
        [str(ANCHOR_BIN), "upgrade", str(results)], env=_client(tmp_path), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == ExitCode.BAD_INPUT, done.stdout + done.stderr  # was: blocked for good
    assert "is not a regular file" in done.stdout + done.stderr


def _post(url: str, n: int, forwarded: str | None) -> int:
    import requests

    identity = {"kind": "filetree", "version": 1, "files_root": f"{n:064x}", "file_count": 1, "total_size": 1}
    headers = {"X-Forwarded-For": forwarded} if forwarded else {}
    return requests.post(f"{url}/v1/calendar", json={"manifest": identity}, headers=headers, timeout=10).status_code


@pytest.mark.parametrize("trusted", [None, "127.0.0.1"], ids=["default", "--forwarded-allow-ips 127.0.0.1"])
def test_a_forwarded_header_gets_no_fresh_calendar_bucket_unless_its_proxy_is_trusted(
    tmp_path: Path, trusted: str | None
) -> None:
    """`anchor serve --calendar` itself (not a bare uvicorn): ten requests from one client, each claiming
    another X-Forwarded-For. By default the burst of 3 holds (uvicorn's default trusted 127.0.0.1: ten
    buckets, ten accepted); told to trust this proxy, each forwarded client has its own bucket."""
    from tests.api_server import anchor_serve

    with deployed(tmp_path / "svc") as chain:
        env = {
            **chain.env(),
            "ANCHOR_API_TOKENS": _hash(TOKEN),
            "ANCHOR_API_FLUSH": "0",
            "ANCHOR_CALENDAR_RATE": "0.01",
            "ANCHOR_CALENDAR_BURST": "3",
            "ANCHOR_CALENDAR_QUEUE": "100",
        }
        args = ["--calendar", *(["--forwarded-allow-ips", trusted] if trusted else [])]
        with anchor_serve(args, env, tmp_path / "serve.log") as url:
            codes = [_post(url, n, f"198.51.100.{n}") for n in range(1, 11)]
    accepted = codes.count(202)
    assert accepted == (10 if trusted else 3), codes


def test_a_service_verifying_an_uploaded_proof_contacts_no_url_only_the_file_names(tmp_path: Path) -> None:
    """A receipt's `url` is not signed: whoever uploads a proof to a service's `/v1/verify/proof` can point
    it at any address the service can reach (its database, a metadata endpoint, a neighbour's admin
    port). Had the service asked it, it would be a request forger for anyone. It does not: its verdict on
    an uploaded proof is the first anchor's, read on that anchor's chain, and no URL the file names is
    contacted (the listener below would have seen `GET .../v1/service`)."""
    import urllib.request

    client = _client(tmp_path)
    with local_service(tmp_path) as a, _listener(_posing_as_a_service) as (inside, seen):
        results = _results(tmp_path)
        run_anchor(["stamp", str(results), "--service", a.url], client, check=True)
        a.flush()
        run_anchor(["upgrade", str(results), "--rpc-url", a.rpc], client, check=True)
        proof_path = tmp_path / "results.anchor.json"
        proof = json.loads(proof_path.read_text())
        proof["receipts"][0]["url"] = inside + "/internal/admin"
        boundary = "anchor-test-boundary"
        body = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="proof"; filename="p.json"\r\n'
            f"Content-Type: application/json\r\n\r\n{json.dumps(proof)}\r\n--{boundary}--\r\n"
        ).encode()
        request = urllib.request.Request(
            a.url + "/v1/verify/proof", body, {"Content-Type": f"multipart/form-data; boundary={boundary}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                said = answer.read().decode()
        except urllib.error.HTTPError as refused:
            said = refused.read().decode()
        assert seen == [], seen
        assert json.loads(said)["status"] == "verified" and inside not in said, said
