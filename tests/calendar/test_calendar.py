"""Stamping without a key (docs/calendar.md): a real `anchor serve` holds the funded key; the
client's data dir holds none. The client gets a pending proof with a signed receipt at once, the
operator's flush anchors it, `anchor upgrade` checks the service's anchor against the chain and writes
it in, and `verify` names the service's account as submitter. Two services on two chains give one
proof with two anchors; a service that is down is skipped and submitted to again at upgrade."""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from anchor.errors import ExitCode
from tests.api_server import Replica
from tests.cli import run_anchor
from tests.conftest import anvil, deployed

pytestmark = pytest.mark.chain

TOKEN = "calendar-test-token"  # noqa: S105 - a test's own token
DEV_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"  # anvil's public dev account
DEV_ADDRESS = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"


def _hash(token: str, scopes: str = "") -> str:
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest() + (f"/{scopes}" if scopes else "")


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}


@dataclass
class Served:
    url: str
    rpc: str
    registry: str
    chain_id: int
    replica: Replica
    operator: dict[str, str]
    """The operator's environment (data dir, chain, key): what `anchor journal flush` runs with."""

    def flush(self) -> None:
        run_anchor(["journal", "flush"], self.operator, check=True)


def _serve(
    data_dir: Path, operator: dict[str, str], name: str, tokens: str, flush: bool = False, **extra: str
) -> Replica:
    env = {
        **operator,
        "ANCHOR_API_TOKENS": tokens,
        "ANCHOR_API_FLUSH": "1" if flush else "0",
        "ANCHOR_SERVICE_NAME": name,
        **extra,
    }
    replica = Replica(0, data_dir, env)
    replica.start()
    return replica


@contextmanager
def local_service(
    tmp_path: Path, name: str = "service A", tokens: str | None = None, flush: bool = False, **extra: str
) -> Iterator[Served]:
    """A service on the embedded local chain (31337) of a data dir of its own; it flushes only when
    its operator says so (ANCHOR_API_FLUSH=0), so the pending state can be seen."""
    from anchor.chain.deployment import load_deployment

    with deployed(tmp_path / "service-a") as chain:
        replica = _serve(chain.data_dir, chain.env(), name, tokens or _hash(TOKEN), flush, **extra)
        try:
            registry = load_deployment(chain.data_dir, 31337).address
            yield Served(replica.url, chain.node.rpc_url, registry, 31337, replica, chain.env())
        finally:
            replica.stop()


@contextmanager
def other_chain_service(tmp_path: Path, name: str = "service B") -> Iterator[Served]:
    """A service on an anvil of chain 31338, its registry deployed with anvil's public dev key."""
    from anchor.chain.deployment import load_deployment

    with anvil(31338, 1) as rpc:  # a block a second, as a real chain has blocks coming
        data = tmp_path / "service-b"
        operator = {
            **_clean_env(),
            "ANCHOR_DATA_DIR": str(data),
            "ANCHOR_RPC_URL": rpc,
            "ANCHOR_PRIVATE_KEY": DEV_KEY,
            "ANCHOR_CONFIRMATIONS": "1",
        }
        run_anchor(["deploy"], operator, check=True)
        replica = _serve(data, operator, name, _hash(TOKEN))
        try:
            yield Served(replica.url, rpc, load_deployment(data, 31338).address, 31338, replica, operator)
        finally:
            replica.stop()


def _client(tmp_path: Path) -> dict[str, str]:
    """A researcher's machine: a data dir of its own, no key of any kind, the service token only."""
    env = {**_clean_env(), "ANCHOR_DATA_DIR": str(tmp_path / "client"), "ANCHOR_SERVICE_TOKEN": TOKEN}
    assert not any("KEY" in k and k != "ANCHOR_SERVICE_TOKEN" for k in env if k.startswith("ANCHOR_"))
    return env


def _results(tmp_path: Path, name: str = "results", text: str = "0.93") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "metrics.json").write_text(f'{{"accuracy": {text}}}\n')
    (folder / "model.txt").write_text("weights\n")
    return folder


def test_a_client_without_a_key_stamps_through_a_service_and_upgrades_to_a_proof_naming_its_account(
    tmp_path: Path,
) -> None:
    client = _client(tmp_path)
    results = _results(tmp_path)
    with local_service(tmp_path) as service:
        stamped = run_anchor(["stamp", str(results), "--service", service.url], client)
        assert stamped.returncode == 0, stamped.stdout + stamped.stderr
        assert "pending" in stamped.stdout and f"at {service.url}" in stamped.stdout
        proof_path = tmp_path / "results.anchor.json"
        pending = json.loads(proof_path.read_text())
        assert pending["format"] == "anchor/pending" and len(pending["receipts"]) == 1
        assert pending["receipts"][0]["service"] == "service A"
        assert not (tmp_path / "client" / "chain").exists()  # no local chain was started for the client
        again = run_anchor(["stamp", str(results), "--service", service.url], client)  # a retry: the same record
        assert again.returncode == 0 and json.loads(proof_path.read_text()) == pending  # first acceptance time kept

        check = ["verify", str(results), "--rpc-url", service.rpc, "--registry", service.registry]
        waiting = run_anchor(check, client)
        assert waiting.returncode == ExitCode.PENDING, waiting.stdout + waiting.stderr
        signer = pending["receipts"][0]["signer"]
        said = waiting.stdout + waiting.stderr
        assert f"pending at {service.url} (named by the file) since" in said and f"receipt signed by {signer}" in said

        early = run_anchor(["upgrade", str(results), "--rpc-url", service.rpc], client)
        assert early.returncode == ExitCode.PENDING and "not in a mined batch yet" in early.stdout
        assert json.loads(proof_path.read_text()) == pending  # nothing to add: the file is untouched

        service.flush()  # the operator's flush: the only key that pays is the service's
        upgraded = run_anchor(["upgrade", str(results), "--rpc-url", service.rpc], client)
        assert upgraded.returncode == 0, upgraded.stdout + upgraded.stderr
        assert f"added    anchor from {service.url}: chain 31337" in upgraded.stdout
        complete = json.loads(proof_path.read_text())
        assert complete["format"] == "anchor/proof" and complete["service"] == service.url
        for kept in ("manifest", "files", "manifest_digest", "receipts"):  # nothing else in the file changed
            assert complete[kept] == pending[kept], kept

        verified = run_anchor(check, client)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert f"by          {DEV_ADDRESS} (the account of {service.url})" in verified.stdout
        assert "anchors     1 of 1 verified (--require any)" in verified.stdout


def test_forged_and_foreign_receipts_are_refused_by_name(tmp_path: Path) -> None:
    from eth_account import Account

    from anchor.anchoring.receipts import ReceiptSigner
    from anchor.proof.receipt import Receipt

    client = _client(tmp_path)
    results, other = _results(tmp_path), _results(tmp_path, "other", "0.5")
    with local_service(tmp_path) as service:
        for folder in (results, other):
            run_anchor(["stamp", str(folder), "--service", service.url], client, check=True)
        proof_path = tmp_path / "results.anchor.json"
        good = json.loads(proof_path.read_text())
        receipt = good["receipts"][0]
        check = ["verify", str(results), "--rpc-url", service.rpc, "--registry", service.registry]

        def verdict(receipts: list[dict[str, object]]) -> tuple[int, str]:
            proof_path.write_text(json.dumps({**good, "receipts": receipts}))
            done = run_anchor(check, client)
            return done.returncode, done.stdout + done.stderr

        code, said = verdict([{**receipt, "accepted_at": receipt["accepted_at"] - 86400}])  # back-dated
        assert code == ExitCode.BAD_INPUT and f"receipt from {service.url}" in said and "altered" in said

        foreign = json.loads((tmp_path / "other.anchor.json").read_text())["receipts"][0]
        code, said = verdict([foreign])
        assert code == ExitCode.BAD_INPUT and f"receipt from {service.url}: it is for manifest" in said

        attacker = Account.create()
        fields = Receipt.model_validate(receipt)
        forged = (
            ReceiptSigner(attacker, attacker.address, fields.service)
            .sign(fields.chain_id, fields.registry, fields.manifest_digest, fields.accepted_at - 86400)
            .model_copy(update={"url": service.url})
        )
        code, said = verdict([forged.model_dump(mode="json")])
        assert code == ExitCode.BAD_INPUT and "forged" in said and attacker.address in said

        code, said = verdict([receipt])  # the genuine one still says pending
        assert code == ExitCode.PENDING


def test_two_services_on_two_chains_give_one_proof_with_two_anchors_and_a_service_down_is_caught_up(
    tmp_path: Path,
) -> None:
    client = _client(tmp_path)
    with local_service(tmp_path) as a, other_chain_service(tmp_path) as b:
        both = ["--service", a.url, "--service", b.url]
        read = ["--rpc-url", a.rpc, "--rpc-url", b.rpc, "--registry", a.registry, "--registry", b.registry]
        results = _results(tmp_path)
        run_anchor(["stamp", str(results), *both], client, check=True)
        a.flush()
        b.flush()
        upgraded = run_anchor(["upgrade", str(results), "--rpc-url", a.rpc, "--rpc-url", b.rpc], client)
        assert upgraded.returncode == 0, upgraded.stdout + upgraded.stderr
        proof = json.loads((tmp_path / "results.anchor.json").read_text())
        chains = sorted([proof["anchor"]["chain_id"], *(x["anchor"]["chain_id"] for x in proof["anchors"])])
        assert chains == [31337, 31338]
        verified = run_anchor(["verify", str(results), *read, "--require", "all"], client)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert "anchors     2 of 2 verified (--require all)" in verified.stdout
        assert re.search(
            rf"OK       {re.escape(b.url)} \(named by the file\): chain 31338, registry {b.registry}", verified.stdout
        )

        b.replica.stop()  # service B goes down: stamping still succeeds, with a warning
        later = _results(tmp_path, "later", "0.95")
        stamped = run_anchor(["stamp", str(later), *both], client)
        assert stamped.returncode == 0, stamped.stdout + stamped.stderr
        assert f"skipped  {b.url}" in stamped.stdout and "did not take it" in stamped.stderr
        a.flush()
        one = run_anchor(["upgrade", str(later), *both, "--rpc-url", a.rpc, "--rpc-url", b.rpc], client)
        # A's anchor in; B still down, so the proof is not complete: exit 14 (docs/calendar.md), one line each
        assert one.returncode == ExitCode.PENDING and f"\n  skipped  {b.url}" in one.stdout, one.stdout
        assert one.stdout.startswith("PENDING  ") and "\\x0a" not in one.stdout
        only_a = run_anchor(["verify", str(later), *read, "--require", "all"], client)
        assert only_a.returncode == ExitCode.PENDING and "1 of 2 anchors verified, 2 needed" in only_a.stderr

        b.replica.start()  # back, on the same address: upgrade submits to it now, then takes its anchor
        resubmitted = run_anchor(["upgrade", str(later), *both, "--rpc-url", a.rpc, "--rpc-url", b.rpc], client)
        assert resubmitted.returncode == ExitCode.PENDING and f"pending  {b.url}" in resubmitted.stdout
        b.flush()
        run_anchor(["upgrade", str(later), "--rpc-url", a.rpc, "--rpc-url", b.rpc], client, check=True)
        final = run_anchor(["verify", str(later), *read, "--require", "2"], client)
        assert final.returncode == 0 and "anchors     2 of 2 verified (--require 2)" in final.stdout


def test_bad_service_input_is_named_and_leaves_the_files_untouched(tmp_path: Path) -> None:
    from tests.conftest import free_port

    results = _results(tmp_path)
    client = _client(tmp_path)
    dead = f"http://127.0.0.1:{free_port()}"
    down = run_anchor(["stamp", str(results), "--service", dead], client)
    assert (
        down.returncode == ExitCode.CHAIN_UNREACHABLE and dead in down.stderr and "nothing was written" in down.stderr
    )
    assert f"{dead}: {dead}" not in down.stderr  # each service named once
    typo = run_anchor(["stamp", str(results), "--service", "127.0.0.1:8000"], client)
    assert typo.returncode == ExitCode.BAD_INPUT and "--service '127.0.0.1:8000': expected an http(s)" in typo.stderr
    # the same mistake in the variable is named as the variable, where the user has to fix it
    typo = run_anchor(["journal", "submit", str(results)], {**client, "ANCHOR_SERVICE_URLS": "127.0.0.1:8000"})
    assert typo.returncode == ExitCode.BAD_INPUT and "ANCHOR_SERVICE_URLS '127.0.0.1:8000'" in typo.stderr
    assert "(hint: ANCHOR_SERVICE_URLS=http://127.0.0.1:8000)" in typo.stderr
    with local_service(tmp_path, tokens=f"{_hash(TOKEN, 'relay')},{_hash('other')}") as service:
        scoped = run_anchor(["stamp", str(results), "--service", service.url], client)
        assert scoped.returncode == ExitCode.CHAIN_UNREACHABLE and "HTTP 403 (forbidden)" in scoped.stderr
        wrong = run_anchor(["stamp", str(results), "--service", service.url], {**client, "ANCHOR_SERVICE_TOKEN": "x"})
        assert wrong.returncode == ExitCode.CHAIN_UNREACHABLE and "HTTP 401 (unauthorized)" in wrong.stderr
        assert "check ANCHOR_SERVICE_TOKEN" in wrong.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results", "service-a"]  # the client wrote nothing


def test_a_research_run_through_a_service_puts_lineage_on_chain_under_the_researchers_own_address(
    tmp_path: Path,
) -> None:
    """examples/research, run with no funded key: the researcher's key signs each kept attempt's
    record, the service relays it and pays; the run ends with every proof complete."""
    from eth_account import Account

    from tests.conftest import ROOT
    from tests.research.helpers import make_repo

    example = ROOT / "examples" / "research"
    repo = make_repo(
        tmp_path / "repo", {name: (example / name).read_text() for name in ("train.py", "params.json", "data.csv")}
    )
    researcher = Account.create()
    client = {**_client(tmp_path), "ANCHOR_RESEARCHER_KEY": researcher.key.hex(), "ANCHOR_UPGRADE_WAIT_S": "60"}
    with local_service(tmp_path, tokens=_hash(TOKEN, "submit+relay"), flush=True) as service:
        run = run_anchor(
            [
                "--rpc-url",
                service.rpc,
                "research",
                "run",
                "--repo",
                str(repo),
                "--contract",
                str(example / "contract.toml"),
                "--max-attempts",
                "4",
                "--service",
                service.url,
            ],
            client,
        )
        assert run.returncode == 0, run.stdout + run.stderr
        assert f"lineage records signed by {researcher.address}, relayed by {service.url}" in run.stdout
        complete = re.search(r"proofs complete: (\d+) of (\d+)", run.stdout)
        assert complete and complete.group(1) == complete.group(2) != "0", run.stdout
        ledger = [
            json.loads(line) for line in (tmp_path / "client" / "research" / "ledger.jsonl").read_text().splitlines()
        ]
        kept = [row for row in ledger if row.get("kept")]
        assert kept
        # lookup and research verify trust the registry of the data dir's deployment record (they have no
        # --registry): the researcher takes the operator's published record, as `GET /v1/deployment` gives it
        (tmp_path / "client" / "deployments").mkdir()
        record_file = Path(service.operator["ANCHOR_DATA_DIR"]) / "deployments" / "31337.json"
        (tmp_path / "client" / "deployments" / "31337.json").write_bytes(record_file.read_bytes())
        found = run_anchor(
            ["--rpc-url", service.rpc, "--json", "lookup", kept[0]["commit"], "--researcher", researcher.address],
            client,
        )
        assert found.returncode == 0, found.stdout + found.stderr
        record = json.loads(found.stdout)
        assert (
            researcher.address.lower() in json.dumps(record).lower()
            and DEV_ADDRESS.lower() not in json.dumps(record.get("researcher", "")).lower()
        )
        verified = run_anchor(["--rpc-url", service.rpc, "research", "verify"], client)
        assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_public_calendar_stamps_without_a_token_and_bounds_each_client_and_its_queue(tmp_path: Path) -> None:
    """`anchor serve --calendar`: no token at all on the client; a client over its rate, or anyone
    when the queue is full, gets 429 with Retry-After; the receipt is the same as with a token."""
    import requests

    from api.routes.calendar import Backlog

    client = {k: v for k, v in _client(tmp_path).items() if k != "ANCHOR_SERVICE_TOKEN"}
    extra = {
        "ANCHOR_CALENDAR": "1",
        "ANCHOR_CALENDAR_RATE": "0.2",
        "ANCHOR_CALENDAR_BURST": "3",
        "ANCHOR_CALENDAR_QUEUE": "3",
    }
    with local_service(tmp_path, **extra) as service:
        assert requests.get(f"{service.url}/v1/service", timeout=10).json()["calendar"] is True
        first = _results(tmp_path, "first")
        stamped = run_anchor(["stamp", str(first), "--service", service.url], client)
        assert stamped.returncode == 0, stamped.stdout + stamped.stderr
        assert json.loads((tmp_path / "first.anchor.json").read_text())["receipts"][0]["service"] == "service A"

        answers = [post_to(service.url, n) for n in range(1, 4)]  # the bucket held 3: one went to the stamp above
        assert [a.status_code for a in answers[:2]] == [202, 202], [a.text for a in answers]
        assert answers[2].status_code == 429 and int(answers[2].headers["Retry-After"]) >= 1
        assert answers[2].json()["code"] == "too_many_requests"
        listing = requests.post(f"{service.url}/v1/calendar", json={"manifest": {}, "files": []}, timeout=10)
        assert listing.status_code in (422, 429)  # a listing is never taken (or the client is still over)
        service.flush()
    with local_service(
        tmp_path / "q",
        **{**extra, "ANCHOR_CALENDAR_RATE": "100", "ANCHOR_CALENDAR_BURST": "100", "ANCHOR_CALENDAR_QUEUE": "2"},
    ) as service:
        codes = [post_to(service.url, n).status_code for n in range(1, 5)]
        assert codes[:2] == [202, 202] and codes[2:] == [429, 429]  # the queue is full until a flush
        service.flush()
        time.sleep(2 * Backlog().recheck_s)  # a read that said "full" backs refusals that long (a flush took 30 ms)
        assert post_to(service.url, 9).status_code == 202


def post_to(url: str, n: int) -> Any:
    import requests

    identity = {"kind": "filetree", "version": 1, "files_root": f"{n:064x}", "file_count": 1, "total_size": 1}
    return requests.post(f"{url}/v1/calendar", json={"manifest": identity}, timeout=10)


def dispatch_mission(tmp_path: Path, client: dict[str, str], command: str, output: str = "two-days") -> None:
    """A two-day snapshot added and a one-attempt mission running `command` dispatched as `output`."""
    snapshot = tmp_path / "prices.csv"
    snapshot.write_text("day,close\n1,100\n2,101\n")
    mission = tmp_path / "m.toml"
    mission.write_text(
        f'hypothesis = "Two days."\ncommand = "{command}"\nevaluator_policy_sha256 = "{"44" * 32}"\n[covers]\n'
        'symbol = "SPY"\n[budget]\nminutes = 5\nattempts = 1\n'
    )
    key = json.loads(run_anchor(["--json", "snapshot", "add", str(snapshot)], client, check=True).stdout)
    digest = json.loads(run_anchor(["--json", "mission", "check", str(mission)], client, check=True).stdout)
    run_anchor(
        [
            "mission",
            "submit",
            "--mission",
            str(mission),
            "--mission-digest",
            digest["digest"],
            "--snapshot",
            str(snapshot),
            "--snapshot-sha256",
            key["snapshot"].removeprefix("sha256:"),
            "--image",
            "ghcr.io/example/runner@sha256:" + "ab" * 32,
            "--output",
            output,
            "--profile",
            "small",
        ],
        client,
        check=True,
    )


def test_a_mission_run_through_a_service_holds_no_key_and_its_command_never_sees_the_token(tmp_path: Path) -> None:
    """`mission run --service`: the bundle and its timing record go through the service; the command's
    environment has no token; the run ends with both proofs complete and `verify` exits 0 on them."""
    from anchor.chain.deployment import load_deployment

    client = {**_client(tmp_path), "ANCHOR_UPGRADE_WAIT_S": "60"}
    with local_service(tmp_path, tokens=_hash(TOKEN, "submit"), flush=True) as service:
        client["ANCHOR_RPC_URL"] = service.rpc
        (tmp_path / "client" / "deployments").mkdir(parents=True)
        record = load_deployment(Path(service.operator["ANCHOR_DATA_DIR"]), 31337)
        (tmp_path / "client" / "deployments" / "31337.json").write_text(record.model_dump_json())
        dispatch_mission(tmp_path, client, "env > {result}/env.txt; wc -l < {snapshot} > {result}/lines.txt")
        ran = run_anchor(["--json", "mission", "run", "two-days", "--service", service.url], client)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        done = json.loads(ran.stdout)
        assert done["complete"] is True and done["services"] == [service.url]
        result = Path(done["result"])
        seen = (result / "env.txt").read_text()
        assert "ANCHOR_SERVICE_TOKEN" not in seen and TOKEN not in seen  # the command never had it
        verified = run_anchor(["--json", "verify", str(result)], client)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        verdict = json.loads(verified.stdout)
        assert verdict["submitter"] == DEV_ADDRESS and verdict["milestones_anchored"] is True


def test_journal_submit_and_bundle_anchor_go_through_a_service_as_stamp_does(tmp_path: Path) -> None:
    """`journal submit --service` (several paths) and `bundle SPEC --anchor --service` (the bundle and
    its timing record) write pending proofs through the service; upgraded after its flush, each verifies."""
    import shutil

    from tests.conftest import ROOT

    client = _client(tmp_path)
    first, second = _results(tmp_path, "first"), _results(tmp_path, "second", "0.5")
    example = tmp_path / "bundle"
    shutil.copytree(ROOT / "examples" / "result-bundle", example)
    (example / "outputs.anchor.json").unlink(missing_ok=True)
    with local_service(tmp_path) as service:
        submitted = run_anchor(["journal", "submit", str(first), str(second), "--service", service.url], client)
        assert submitted.returncode == 0, submitted.stdout + submitted.stderr
        assert submitted.stdout.count(f"pending at {service.url}") == 2
        bundled = run_anchor(["bundle", str(example / "bundle.toml"), "--anchor", "--service", service.url], client)
        assert bundled.returncode == 0, bundled.stdout + bundled.stderr
        proofs = [
            tmp_path / "first.anchor.json",
            tmp_path / "second.anchor.json",
            example / "outputs.anchor.json",
            example / "outputs.timing.anchor.json",
        ]
        assert all(json.loads(p.read_text())["format"] == "anchor/pending" for p in proofs)
        service.flush()
        upgraded = run_anchor(["upgrade", *map(str, proofs), "--rpc-url", service.rpc], client)
        assert upgraded.returncode == 0 and upgraded.stdout.count("COMPLETE") == 4, upgraded.stdout + upgraded.stderr
        read = ["--rpc-url", service.rpc, "--registry", service.registry]
        for path in (first, second, example / "outputs"):
            verified = run_anchor(["--json", "verify", str(path), *read], client)
            assert verified.returncode == 0, verified.stdout + verified.stderr
        assert (
            json.loads(run_anchor(["--json", "verify", str(example / "outputs"), *read], client).stdout)[
                "milestones_anchored"
            ]
            is True
        )


def test_a_rotated_receipt_key_still_vouches_for_what_it_signed_while_in_use_and_nothing_after(
    tmp_path: Path,
) -> None:
    """The operator rotates the receipt key (a new ANCHOR_RECEIPT_KEY). A proof made before still holds
    a receipt signed by the old key: `verify` read it as forged (exit 2). The service now publishes its
    past keys with the time each was in use: the old receipt stands (still pending, exit 14); a receipt
    the old key signs dated after its retirement is forged (a leaked old key cannot sign new ones)."""
    from eth_account import Account

    from anchor.anchoring.receipts import ReceiptSigner
    from anchor.proof.receipt import Receipt

    client = _client(tmp_path)
    results = _results(tmp_path)
    with local_service(tmp_path) as service:
        run_anchor(["stamp", str(results), "--service", service.url], client, check=True)
        proof_path = tmp_path / "results.anchor.json"
        before = json.loads(proof_path.read_text())
        old_key = (tmp_path / "service-a" / "receipt.key").read_text().strip()
        assert Account.from_key(old_key).address == before["receipts"][0]["signer"]
        new = Account.create()
        service.replica.stop()
        service.replica.env = {**service.replica.env, "ANCHOR_RECEIPT_KEY": new.key.hex()}
        service.replica.start()
        from anchor.readback import services

        services._infos.clear()  # the CLI runs in this process: a new `anchor` process asks the service anew
        check = ["verify", str(results), "--rpc-url", service.rpc, "--registry", service.registry]
        kept = run_anchor(check, client)
        assert kept.returncode == ExitCode.PENDING, kept.stdout + kept.stderr  # was 2: "forged"
        identity = json.loads(urllib.request.urlopen(f"{service.url}/v1/service", timeout=10).read())  # noqa: S310
        assert identity["receipt_signer"] == new.address
        old, current = identity["receipt_signers"]
        assert old["address"] == before["receipts"][0]["signer"] and old["until"] is not None
        assert current == {"address": new.address, "since": old["until"], "until": None}

        fields = Receipt.model_validate(before["receipts"][0])
        retired = Account.from_key(old_key)
        late = (
            ReceiptSigner(retired, retired.address, fields.service)
            .sign(fields.chain_id, fields.registry, fields.manifest_digest, old["until"] + 60)
            .model_copy(update={"url": service.url})
        )
        proof_path.write_text(json.dumps({**before, "receipts": [late.model_dump(mode="json")]}))
        forged = run_anchor(check, client)
        assert forged.returncode == ExitCode.BAD_INPUT and "forged" in forged.stdout + forged.stderr


def test_a_proof_with_anchors_on_two_chains_is_sealed_and_verified_offline_with_two_trusted_blocks(
    tmp_path: Path,
) -> None:
    """each chain's anchors sealed through that chain's endpoint, the services stopped, then
    `verify --offline --require all` with one trusted block per chain, in a network namespace of its own."""
    client = _client(tmp_path)
    results = _results(tmp_path)
    with local_service(tmp_path) as a, other_chain_service(tmp_path) as b:
        run_anchor(["stamp", str(results), "--service", a.url, "--service", b.url], client, check=True)
        a.flush()
        b.flush()
        run_anchor(["upgrade", str(results), "--rpc-url", a.rpc, "--rpc-url", b.rpc], client, check=True)
        trusted = []
        for service in (a, b):
            done = json.loads(
                run_anchor(["--rpc-url", service.rpc, "seal", str(results), "--json"], client, check=True).stdout
            )["sealed"][0]
            assert done["sealed"] == 1, done
            block = done["blocks"][0]
            trusted.append(f"{block['chain_id']}:{block['block']}:{block['hash']}")
    import subprocess

    from tests.cli import ANCHOR_BIN

    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ANCHOR_DATA_DIR": client["ANCHOR_DATA_DIR"]}
    env.update({k: v for k, v in os.environ.items() if k == "PYTHONPATH"})
    argv = ["unshare", "--net", str(ANCHOR_BIN), "verify", str(results), "--offline", "--require", "all"]
    one_only = subprocess.run([*argv, "--trusted-block", trusted[0]], env=env, capture_output=True, text=True)
    assert one_only.returncode == ExitCode.BAD_INPUT and "--trusted-block: none for block" in one_only.stderr
    both = subprocess.run(
        [*argv, *(a for t in trusted for a in ("--trusted-block", t))], env=env, capture_output=True, text=True
    )
    assert both.returncode == 0, both.stdout + both.stderr
    assert "anchors     2 of 2 verified (--require all)" in both.stdout


def test_the_calendars_queue_is_read_once_a_second_and_again_at_the_bound_never_per_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """every POST /v1/calendar counted the journal's pending items in the thread pool. The
    backlog now reads the journal once a second and whenever its count reaches the bound (a flush may
    have emptied the queue): 100 submissions under the bound are one read, and at the bound a refusal
    is made on a fresh read, never on this process's count alone."""
    import asyncio

    import api.routes.calendar as calendar

    queue = {"pending": 0, "reads": 0}

    async def count(app: object, work: object) -> int:
        queue["reads"] += 1
        return queue["pending"]

    monkeypatch.setattr(calendar, "in_journal", count)
    backlog = calendar.Backlog(every_s=3600, recheck_s=0)

    async def submit(n: int, bound: int) -> list[int | None]:
        said = []
        for _ in range(n):
            full = await backlog.full(None, 31337, bound)
            said.append(full)
            if full is None:
                backlog.accepted()
                queue["pending"] += 1
        return said

    assert asyncio.run(submit(100, 1000)) == [None] * 100 and queue["reads"] == 1
    assert asyncio.run(submit(2, 101)) == [None, 101] and queue["reads"] == 2  # at the bound: read, refused
    queue["pending"] = 0  # a flush took every pending item into a batch
    assert asyncio.run(submit(1, 101)) == [None] and queue["reads"] == 3  # read again at the bound: room

    # a read that said "full" backs refusals for recheck_s; this process's own count never does
    backlog = calendar.Backlog(every_s=3600, recheck_s=3600)
    queue.update(pending=0, reads=0)
    assert asyncio.run(submit(3, 2)) == [None, None, 2] and queue["reads"] == 2  # the third: read, then refused
    queue["pending"] = 0  # flushed
    assert asyncio.run(submit(1, 2)) == [2] and queue["reads"] == 2  # within recheck_s of a read that said full
    backlog.read_at -= 3600  # recheck_s later
    assert asyncio.run(submit(1, 2)) == [None] and queue["reads"] == 3
