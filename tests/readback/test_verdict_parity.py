"""One verdict from every door: the same proofs, tampered or not, give the same verdict code
through `anchor verify --json`, `POST /v1/verify/proof`, `GET /v1/verify/{digest}` (where the server
holds the proof), the explorer's bundle page and the browser page (`/verify` in headless Chromium,
for every case that asks no policy: the page takes none); and `retracted` from every door once the
root's submitter retracted it. Two doors are held to the same answer where their servers are:
`anchor mlflow verify` beside `anchor verify` and the API (tests/mlflow/test_mlflow.py::
test_every_door_gives_the_run_the_same_verdict, a real MLflow server), a model promotion's record on
the explorer's promotion page beside `anchor mlflow verify models:/…` (tests/mlflow/test_promotion_page.py),
and the page's offline check beside `anchor verify --offline` (tests/explorer/test_browser_sealed.py)."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.config import ApiConfig
from tests.conftest import deployed, result_bundle_spec

TOKEN = "a-long-random-token-for-tests"

Edit = Callable[[dict[str, Any]], None]


def _set(path: str, value: object) -> Edit:
    def edit(proof: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = proof
        for key in parents:
            node = node[key]
        node[last] = value

    return edit


def _milestone(proof: dict[str, Any]) -> None:
    proof["annotations"]["milestones"]["completed"] = "2026-11-30T03:59:00Z"  # the run "took" longer


def _sibling(proof: dict[str, Any]) -> None:
    proof["batch"]["proof"] = ["0x" + "11" * 32]


def _pending(proof: dict[str, Any]) -> None:
    """The same manifest as a pending proof: a service's genuine receipt and no anchor (under
    `--require all` it is pending whether or not a service has anchored it since, at every door)."""
    import time

    from eth_account import Account

    from anchor.anchoring.receipts import ReceiptSigner
    from tests.conftest import free_port

    service = Account.create()
    receipt = (
        ReceiptSigner(service, service.address, "a service")
        .sign(proof["anchor"]["chain_id"], proof["anchor"]["registry"], proof["manifest_digest"], int(time.time()))
        .model_copy(update={"url": f"http://127.0.0.1:{free_port()}"})
    )
    kept = {k: proof[k] for k in ("manifest", "annotations", "files", "manifest_digest") if k in proof}
    proof.clear()
    proof.update(format="anchor/pending", version=1, **kept, receipts=[receipt.model_dump(mode="json")])


def _flip(text: str, at: int) -> str:
    """One hex digit of `text` changed (at `at`; negative from the end)."""
    digits = list(text)
    digits[at] = "0" if digits[at] != "0" else "1"
    return "".join(digits)


def _flip_field(path: str, at: int) -> Edit:
    def edit(proof: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node = proof
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(last)] = _flip(node[int(last)], at)
        else:
            node[last] = _flip(node[last], at)

    return edit


def _block_digit(proof: dict[str, Any]) -> None:
    number = proof["anchor"]["block_number"]
    proof["anchor"]["block_number"] = number - number % 10 + (number + 1) % 10


def _later_block(proof: dict[str, Any]) -> None:
    proof["anchor"]["block_number"] += 1000


NOBODY = "0x" + "12" * 20
CASES: list[tuple[str, Edit | None, dict[str, str], str]] = [
    ("valid", None, {}, "verified"),
    ("milestones edited in the proof", _milestone, {}, "tampered"),
    ("a Merkle sibling edited", _sibling, {}, "bad_proof"),
    ("another registry named", _set("anchor.registry", NOBODY), {}, "unknown_registry"),
    ("another chain named", _set("anchor.chain_id", 84532), {}, "bad_input"),
    ("anchored by someone else than expected", None, {"expect_submitter": NOBODY}, "policy_mismatch"),
    ("anchored after the date required", None, {"anchored_before": "2020-01-01"}, "policy_mismatch"),
    ("not yet as final as required", None, {"min_finality": "1000"}, "not_final"),
    ("a pending proof under --require all", _pending, {"require": "all"}, "pending"),
    ("a mistyped expected submitter", None, {"expect_submitter": "0xabc"}, "bad_input"),
    ("a block_number 1,000 past the real one", _later_block, {}, "tampered"),
    ("a tx_hash that names no transaction", _flip_field("anchor.tx_hash", -1), {}, "not_anchored"),
]
"""(what, how the proof is edited, the policy asked, the verdict code every door must give)"""


SAME = (
    "manifest_digest",
    "root",
    "chain_id",
    "registry",
    "submitter",
    "anchored_block",
    "tx_hash",
    "files",
    "milestones",
    "milestones_anchored",
    "bundle",
)
"""What a verdict asserts; every door must say the same of the same proof (times of reading may differ)."""
verdicts: dict[str, dict[str, Any]] = {}


def _cli_code(chain: Any, bundle: Path, proof_path: Path, policy: dict[str, str]) -> str:
    options = [arg for name, value in policy.items() for arg in (f"--{name.replace('_', '-')}", value)]
    out = json.loads(chain.cli("verify", str(bundle), "--proof", str(proof_path), *options, "--json").stdout)
    if out.get("verified"):
        verdicts["cli"] = out
    return "verified" if out.get("verified") else str(out["error"]["code"])


def _library_code(
    chain: Any,
    subject: Path,
    proof_path: Path | None,
    policy: dict[str, str],
    door: str = "library",
    registries: tuple[str, ...] = (),
) -> str:
    """`anchor.Verifier(...).verify(...)`, the door a training script uses, with top-level names only."""
    import anchor

    try:
        rules = anchor.Policy(**{k: v for k, v in policy.items() if k != "require"})
        verdict = anchor.Verifier(chain.settings, registries=registries).verify(
            subject, proof=proof_path, policy=rules, require=policy.get("require", "any")
        )
    except anchor.errors.AnchorError as exc:
        return exc.code
    verdicts[door] = verdict.to_json()
    return "verified"


def _statement_codes(chain: Any, statements: Path, options: list[str]) -> dict[str, str]:
    """The in-toto statements `anchor attest` wrote, verified by the CLI and by the library: the options
    (--registry, the policy) apply to them as to any proof (they were silently dropped)."""
    named = dict(zip(options[::2], options[1::2], strict=True))
    out = json.loads(chain.cli("verify", str(statements), *options, "--json").stdout)
    if out.get("verified") and not options:
        verdicts["statement cli"] = out
    policy = {k.lstrip("-").replace("-", "_"): v for k, v in named.items() if k != "--registry"}
    registries = (named["--registry"],) if "--registry" in named else ()
    door = "statement library" if not options else "statement library (options)"
    return {
        "statement cli": "verified" if out.get("verified") else str(out["error"]["code"]),
        "statement library": _library_code(chain, statements, None, policy, door, registries),
    }


def _api_code(response: Any, door: str = "api") -> str:
    body = response.json()
    if response.status_code == 200 and body.get("verified"):
        verdicts[door] = body
    return "verified" if response.status_code == 200 and body.get("verified") else str(body.get("code"))


def _browser_codes(url: str, bundle: Path, proofs: dict[str, Path]) -> dict[str, str]:
    """The browser page's verdict on each proof, with the bundle's files picked as a visitor would."""
    from tests.cdp import chromium_page
    from tests.explorer.test_explorer_pages import CHROMIUM_FLAGS, chromium

    codes = {}
    with chromium_page(chromium(), CHROMIUM_FLAGS) as page:
        for name, proof in proofs.items():
            page.goto(url + "/verify", ready="!!document.getElementById('check')")
            page.set_files("#files", sorted(p for p in bundle.rglob("*") if p.is_file()))
            page.set_files("#proof", [proof])
            page.evaluate("document.getElementById('check').click()")
            codes[name] = page.wait_for("document.getElementById('verdict').dataset.status")
    return codes


@pytest.mark.chain
@pytest.mark.browser
def test_every_door_gives_the_same_verdict_code_for_the_same_proof(tmp_path: Path) -> None:
    with deployed(tmp_path / "data") as chain:
        bundle = tmp_path / "bundle"
        (bundle / "outputs").mkdir(parents=True)
        (bundle / "outputs" / "metrics.json").write_text('{"accuracy": 0.93}\n')
        (bundle / "README.md").write_text("results\n")
        spec = result_bundle_spec(tmp_path)
        chain.cli("bundle", str(spec), "--anchor", check=True)
        original = json.loads((tmp_path / "bundle.anchor.json").read_text())
        digest = original["manifest_digest"]
        config = ApiConfig(token_hashes=frozenset({hashlib.sha256(TOKEN.encode()).hexdigest()}))
        seen: dict[str, dict[str, str]] = {}
        for_browser: dict[str, Path] = {}
        with TestClient(create_app(chain.settings, config)) as client:
            for name, edit, policy, _ in CASES:
                proof = copy.deepcopy(original)
                if edit is not None:
                    edit(proof)
                proof_path = tmp_path / f"case-{len(seen)}.anchor.json"
                proof_path.write_text(json.dumps(proof))
                upload = {"proof": ("p.anchor.json", proof_path.read_bytes())}
                seen[name] = {
                    "cli": _cli_code(chain, bundle, proof_path, policy),
                    "library": _library_code(chain, bundle, proof_path, policy),
                    "api upload": _api_code(client.post("/v1/verify/proof", files=upload, params=policy), "api upload"),
                }
                if edit is None:  # the server's own copy of the proof, by its digest
                    by_digest = client.get(f"/v1/verify/{digest}", params=policy)
                    seen[name]["api by digest"] = _api_code(by_digest, "api by digest")
                if not policy or set(policy) == {"require"}:  # the page takes no policy; a pending proof is pending
                    for_browser[name] = proof_path
            # the statements door (`anchor attest`, then `verify NAME.intoto.jsonl`), CLI and library alike
            chain.cli("attest", str(bundle), check=True)
            statements = tmp_path / "bundle.intoto.jsonl"
            for options, expected in (
                ([], "verified"),
                (["--registry", NOBODY], "unknown_registry"),
                (["--expect-submitter", NOBODY], "policy_mismatch"),
                (["--min-finality", "1000"], "not_final"),
                (["--require", "2"], "bad_input"),
                (["--expect-submitter", "0xabc"], "bad_input"),
            ):
                codes = _statement_codes(chain, statements, options)
                assert set(codes.values()) == {expected}, (options, codes)
            # the browser page, served by the same service over the same data dir, reading the same chain
            from tests.api_server import serving_api

            with serving_api(chain.env()) as url:
                browser = _browser_codes(url, bundle, for_browser)
                # a subject changed after stamping: the proof is intact, a file is not
                (bundle / "outputs" / "metrics.json").write_text('{"accuracy": 0.99}\n')
                changed = _browser_codes(url, bundle, {"changed": tmp_path / "case-0.anchor.json"})["changed"]
            assert changed == _cli_code(chain, bundle, tmp_path / "case-0.anchor.json", {}) == "tampered"
            assert _library_code(chain, bundle, tmp_path / "case-0.anchor.json", {}, "tampered") == "tampered"
            assert set(_statement_codes(chain, statements, []).values()) == {"tampered"}
            for name, code in browser.items():
                seen[name]["browser"] = code
            for name, _, _, expected in CASES:
                assert set(seen[name].values()) == {expected}, (name, seen[name])
            # the server's own copy: by digest and on the explorer; and a digest it has no proof of
            assert set(verdicts) == {
                "cli",
                "library",
                "api upload",
                "api by digest",
                "statement cli",
                "statement library",
            }
            shown = {door: {k: v.get(k) for k in SAME} for door, v in verdicts.items()}
            assert shown["cli"]["files"] == 2 and shown["cli"]["milestones_anchored"] is True
            assert shown["api upload"] == shown["cli"] == shown["api by digest"] == shown["library"]
            assert shown["statement cli"] == shown["statement library"] == shown["cli"]
            assert client.get(f"/explorer/bundle/{digest}").status_code == 200
            unknown = "0x" + "77" * 32
            assert _api_code(client.get(f"/v1/verify/{unknown}")) == "not_anchored"
            assert client.get(f"/explorer/bundle/{unknown}").status_code == 404
            never = tmp_path / "never-stamped"
            never.mkdir()
            cli = json.loads(chain.cli("verify", str(never), "--json").stdout)
            assert cli["error"]["code"] == "not_anchored"


@pytest.mark.chain
@pytest.mark.browser
def test_every_door_says_retracted_of_a_root_its_submitter_retracted(tmp_path: Path) -> None:
    """`anchor retract`, then the CLI, the library, the API (upload and by digest), the
    explorer's bundle and batch pages and the browser page all say `retracted`, naming the same block; the
    CLI and the API say where too (the manifest, the chain, the registry), not only when and by whom."""
    with deployed(tmp_path / "data") as chain:
        bundle = tmp_path / "bundle"
        (bundle / "outputs").mkdir(parents=True)
        (bundle / "outputs" / "metrics.json").write_text('{"accuracy": 0.93}\n')
        chain.cli("bundle", str(result_bundle_spec(tmp_path)), "--anchor", check=True)
        proof_path = tmp_path / "bundle.anchor.json"
        digest = json.loads(proof_path.read_text())["manifest_digest"]
        root = json.loads(proof_path.read_text())["batch"]["root"]
        done = json.loads(
            chain.cli("retract", str(proof_path), "--reason", "a leaked test split", "--json", check=True).stdout
        )
        codes = {
            "cli": _cli_code(chain, bundle, proof_path, {}),
            "library": _library_code(chain, bundle, proof_path, {}, "retracted library"),
        }
        cli = json.loads(chain.cli("verify", str(bundle), "--proof", str(proof_path), "--json").stdout)["error"]
        assert cli["detail"]["retracted_block"] == done["block_number"]
        assert cli["detail"]["reason"] == "a leaked test split"
        proof = json.loads(proof_path.read_text())  # where, not only when and by whom
        where = {"manifest_digest": digest, "chain_id": 31337, "registry": proof["anchor"]["registry"]}
        assert {k: cli["detail"][k] for k in where} == where
        with TestClient(create_app(chain.settings, ApiConfig())) as client:
            upload = client.post("/v1/verify/proof", files={"proof": ("p.anchor.json", proof_path.read_bytes())})
            codes["api upload"] = _api_code(upload, "api upload (retracted)")
            assert upload.status_code == 410 and upload.json()["detail"]["retracted_block"] == done["block_number"]
            assert {k: upload.json()["detail"][k] for k in where} == where
            codes["api by digest"] = _api_code(client.get(f"/v1/verify/{digest}"), "api by digest (retracted)")
            page = client.get(f"/explorer/bundle/{digest}")
            codes["explorer"] = "retracted" if page.status_code == 410 and "retracted" in page.text else page.text
            assert all(str(value) in page.text for value in where.values())  # the page says where, too
            assert "<title>Retracted" in page.text and "retracted block" in page.text and "retracted by" in page.text
            batch = client.get(f"/explorer/batch/{root}")
            assert batch.status_code == 200 and "retracted by its submitter" in batch.text
        from tests.api_server import serving_api

        with serving_api(chain.env()) as url:
            codes["browser"] = _browser_codes(url, bundle, {"retracted": proof_path})["retracted"]
        assert set(codes.values()) == {"retracted"}, codes


@pytest.mark.chain
def test_a_retraction_after_the_explorer_first_read_the_record_shows_on_its_search_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The explorer kept each record it read for good ("write-once"), but a submitter may retract once,
    later: the search listed a retracted manifest as "confirmed", unmarked. A record read as not
    retracted is read again after RECORD_FRESH_S; the search marks a retracted one."""
    import api.routes.explorer as explorer

    with deployed(tmp_path / "data") as chain:
        (tmp_path / "result.txt").write_text("0.93\n")
        chain.cli("stamp", str(tmp_path / "result.txt"), check=True)
        proof_path = tmp_path / "result.txt.anchor.json"
        digest = json.loads(proof_path.read_text())["manifest_digest"]
        with TestClient(create_app(chain.settings, ApiConfig())) as client:
            before = client.get("/explorer/search", params={"q": digest})
            assert before.status_code == 200 and digest in before.text and "retracted" not in before.text
            chain.cli("retract", str(proof_path), "--reason", "a leaked test split", check=True)
            monkeypatch.setattr(explorer, "RECORD_FRESH_S", 0.0)
            after = client.get("/explorer/search", params={"q": digest})
            assert "confirmed · retracted by its submitter (block" in after.text, after.text


def _says_nothing_is_anchored(request: dict[str, Any], result: Any) -> Any:
    """A lying endpoint: every registry read answers zeros ("no such root"), whatever the chain holds."""
    return "0x" + "00" * 96


@pytest.mark.chain
@pytest.mark.browser
def test_a_lying_endpoint_listed_first_is_outvoted_at_every_door(tmp_path: Path) -> None:
    """Three read endpoints, the first one lying: the CLI (`--rpc-url` x3), both API routes and the
    explorer (a service with ANCHOR_READ_RPCS) and the browser page (given the same three) each read all
    of them, and the two honest ones outvote it: verified, the liar named. Read alone, the liar's word
    is "not anchored" at every door, so a door that took the first endpoint's answer would fail here."""
    import dataclasses

    from tests.api_server import serving_api
    from tests.faults.rpc_proxy import FaultyProxy

    with deployed(tmp_path / "data") as chain:
        bundle = tmp_path / "bundle"
        (bundle / "outputs").mkdir(parents=True)
        (bundle / "outputs" / "metrics.json").write_text('{"accuracy": 0.93}\n')
        (bundle / "README.md").write_text("results\n")
        chain.cli("bundle", str(result_bundle_spec(tmp_path)), "--anchor", check=True)
        proof_path = tmp_path / "bundle.anchor.json"
        digest = json.loads(proof_path.read_text())["manifest_digest"]
        honest = [FaultyProxy(chain.node.rpc_url) for _ in range(2)]
        liar = FaultyProxy(chain.node.rpc_url)
        liar.lie = _says_nothing_is_anchored
        urls = [liar.url, *(p.url for p in honest)]
        try:
            alone = json.loads(chain.cli("--rpc-url", liar.url, "verify", str(bundle), "--json").stdout)
            assert alone["ok"] is False, alone  # the liar's word alone is not "verified"
            seen: dict[str, str] = {}
            told: dict[str, Any] = {}
            cli = json.loads(
                chain.cli(*(a for u in urls for a in ("--rpc-url", u)), "verify", str(bundle), "--json").stdout
            )
            seen["cli"], told["cli"] = "verified" if cli.get("verified") else str(cli["error"]), cli.get("quorum")
            config = ApiConfig(token_hashes=frozenset({hashlib.sha256(TOKEN.encode()).hexdigest()}))
            settings = dataclasses.replace(chain.settings, read_rpcs=tuple(urls))
            with TestClient(create_app(settings, config)) as client:
                upload = client.post("/v1/verify/proof", files={"proof": ("p.anchor.json", proof_path.read_bytes())})
                by_digest = client.get(f"/v1/verify/{digest}")
                for door, answer in (("api upload", upload), ("api by digest", by_digest)):
                    seen[door], told[door] = _api_code(answer, door), answer.json().get("quorum")
                page = client.get(f"/explorer/bundle/{digest}")
                shown = page.status_code == 200 and f"anchored in block {cli.get('anchored_block')}" in page.text
                seen["explorer"] = "verified" if shown else str(page.status_code)
            with serving_api({**chain.env(), "ANCHOR_READ_RPCS": ",".join(urls)}) as url:
                seen["browser"] = _browser_codes(url, bundle, {"liar first": proof_path})["liar first"]
            assert set(seen.values()) == {"verified"}, seen
            for door, quorum in told.items():
                assert list(quorum["disagreeing"]) == [liar.url] and len(quorum["agreeing"]) == 2, (door, quorum)
            with serving_api({**chain.env(), "ANCHOR_BROWSER_RPC_URL": liar.url}) as url:  # the liar alone
                assert _browser_codes(url, bundle, {"liar": proof_path})["liar"] == alone["error"]["code"]
        finally:
            for proxy in (*honest, liar):
                proxy.stop()


@pytest.mark.chain
def test_anchor_service_urls_reaches_every_writer_stamp_bundle_research_and_mission(tmp_path: Path) -> None:
    """With ANCHOR_SERVICE_URLS set and no --service anywhere, every writer stamps through the
    service (`bundle --anchor`, `mission run` and `research run` once ignored it and started a local
    chain of their own; `journal submit` journaled here, for a flush that had no key): each proof holds
    the service's receipt, and the client never starts a chain."""
    import shutil

    from eth_account import Account

    from anchor.chain.deployment import load_deployment
    from tests.calendar.test_calendar import TOKEN, _client, _hash, _results, dispatch_mission, local_service
    from tests.cli import run_anchor
    from tests.conftest import ROOT
    from tests.research.helpers import make_repo

    with local_service(tmp_path, tokens=_hash(TOKEN, "submit+relay"), flush=True) as service:
        researcher = Account.create()
        client = {
            **_client(tmp_path),
            "ANCHOR_SERVICE_URLS": service.url,
            "ANCHOR_RPC_URL": service.rpc,
            "ANCHOR_RESEARCHER_KEY": researcher.key.hex(),
            "ANCHOR_UPGRADE_WAIT_S": "60",
        }
        (tmp_path / "client" / "deployments").mkdir(parents=True)  # the operator's published record
        record = load_deployment(Path(service.operator["ANCHOR_DATA_DIR"]), 31337)
        (tmp_path / "client" / "deployments" / "31337.json").write_text(record.model_dump_json())

        def receipts_of(proof: Path) -> list[str]:
            return [r["url"] for r in json.loads(proof.read_text()).get("receipts", [])]

        # stamp
        results = _results(tmp_path)
        stamped = run_anchor(["stamp", str(results)], client)
        assert stamped.returncode == 0 and "pending" in stamped.stdout, stamped.stdout + stamped.stderr
        assert receipts_of(tmp_path / "results.anchor.json") == [service.url]
        # journal submit: queued at the services (pending proofs at once), not in a journal here
        queued = tmp_path / "queued"
        queued.mkdir()
        (queued / "a.txt").write_text("queued through the service\n")
        submitted = run_anchor(["--json", "journal", "submit", str(queued)], client)
        assert submitted.returncode == 0, submitted.stdout + submitted.stderr
        assert json.loads(submitted.stdout)["submitted"][0]["services"] == [service.url]
        assert receipts_of(tmp_path / "queued.anchor.json") == [service.url]
        assert not (tmp_path / "client" / "journal.sqlite").exists()
        # bundle --anchor
        example = tmp_path / "bundle"
        shutil.copytree(ROOT / "examples" / "result-bundle", example)
        (example / "outputs.anchor.json").unlink(missing_ok=True)
        bundled = run_anchor(["bundle", str(example / "bundle.toml"), "--anchor"], client)
        assert bundled.returncode == 0 and "pending" in bundled.stdout, bundled.stdout + bundled.stderr
        assert receipts_of(example / "outputs.anchor.json") == [service.url]
        # research run
        source = ROOT / "examples" / "research"
        repo = make_repo(
            tmp_path / "repo", {n: (source / n).read_text() for n in ("train.py", "params.json", "data.csv")}
        )
        ran = run_anchor(
            [
                "research",
                "run",
                "--repo",
                str(repo),
                "--contract",
                str(source / "contract.toml"),
                "--max-attempts",
                "3",
            ],
            client,
        )
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert f"relayed by {service.url}" in ran.stdout
        contract = tmp_path / "client" / "research" / "contract.anchor.json"
        assert receipts_of(contract) == [service.url]
        # mission run
        dispatch_mission(tmp_path, client, "wc -l < {snapshot} > {result}/lines.txt")
        done = run_anchor(["--json", "mission", "run", "two-days"], client)
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout)["services"] == [service.url]
        assert receipts_of(Path(json.loads(done.stdout)["proof"])) == [service.url]
        assert not (tmp_path / "client" / "chain").exists()  # no writer started a local chain of its own


SEALED_EDITS: list[tuple[str, Edit, str]] = [
    ("one digit of the sealed header", _flip_field("anchor.sealed.header", 2 + 2 * 10), "anchor.sealed.header"),
    ("one digit of the sealed receipt", _flip_field("anchor.sealed.receipt", -4), "anchor.sealed.receipt"),
    ("one digit of a trie node", _flip_field("anchor.sealed.proof.0", 2 + 2 * 40), "anchor.sealed.proof"),
    ("one digit of block_number", _block_digit, "anchor.block_number"),
    ("block_number 1,000 past the real one", _later_block, "anchor.block_number"),
    ("one digit of tx_hash", _flip_field("anchor.tx_hash", -1), "anchor.tx_hash"),
    (
        "one digit of the later state's storage proof",
        _flip_field("anchor.sealed.state.storage_proof.-1", -6),
        "anchor.sealed.state.storage_proof",
    ),
    (
        "one digit of the later state's header",
        _flip_field("anchor.sealed.state.header", 2 + 2 * 10),
        "anchor.sealed.state.header",
    ),
]
"""(what, how a sealed proof is edited, the field every door must name): each a field the verdict reads."""


@pytest.mark.chain
@pytest.mark.browser
def test_every_door_refuses_a_sealed_proof_with_one_field_it_reads_changed_naming_the_field(tmp_path: Path) -> None:
    """A sealed proof read online: its sealed header, receipt and trie proof are checked against the block
    the chain has at that number, its block_number and tx_hash against the chain's record. One digit
    changed in any of them is `tampered` at the CLI (exit 4, the field named), the library, the REST
    upload (422: the document sent proves nothing as it stands) and the browser page; online
    verification once ignored all of them."""
    with deployed(tmp_path / "data") as chain:
        subject = tmp_path / "results"
        subject.mkdir()
        (subject / "metrics.json").write_text('{"accuracy": 0.93}\n')
        chain.cli("stamp", str(subject), check=True)
        (tmp_path / "later.txt").write_text("a block on top: the next block number is a block that exists\n")
        chain.cli("stamp", str(tmp_path / "later.txt"), check=True)
        chain.cli("seal", str(subject), check=True)
        original = json.loads((tmp_path / "results.anchor.json").read_text())
        assert "state" in original["anchor"]["sealed"]  # the first seal carries the record as of a later block
        seen: dict[str, dict[str, str]] = {}
        named: dict[str, str] = {}
        cases: dict[str, Path] = {}
        with TestClient(create_app(chain.settings, ApiConfig())) as client:
            for name, edit, field in [("intact", None, ""), *SEALED_EDITS]:
                proof = copy.deepcopy(original)
                if edit is not None:
                    edit(proof)
                proof_path = tmp_path / f"sealed-{len(cases)}.anchor.json"
                proof_path.write_text(json.dumps(proof))
                cases[name] = proof_path
                said = chain.cli("verify", str(subject), "--proof", str(proof_path), "--json")
                out = json.loads(said.stdout)
                uploaded = client.post("/v1/verify/proof", files={"proof": ("p.anchor.json", proof_path.read_bytes())})
                seen[name] = {
                    "cli": "verified" if out.get("verified") else str(out["error"]["code"]),
                    "library": _library_code(chain, subject, proof_path, {}, f"sealed {name}"),
                    "api upload": _api_code(uploaded, "sealed"),
                }
                if edit is not None:
                    assert said.returncode == 4, (name, said.stdout)
                    # the document sent is what is refused: 422, where 409 is data differing from a proof that holds
                    assert uploaded.status_code == 422, (name, uploaded.status_code)
                    named[name] = out["error"]["detail"].get("field", "")
                    assert (
                        field in out["error"]["message"] or field.removeprefix("anchor.") in out["error"]["message"]
                    ), (name, out["error"]["message"])
        from tests.api_server import serving_api

        with serving_api(chain.env()) as url:
            for name, code in _browser_codes(url, subject, cases).items():
                seen[name]["browser"] = code
        assert set(seen.pop("intact").values()) == {"verified"}
        for name, _, field in SEALED_EDITS:
            assert set(seen[name].values()) == {"tampered"}, (name, seen[name])
            assert named[name] == field, (name, named[name])


def _claim_codes(chain: Any, claim: Path, offline: list[str]) -> dict[str, str]:
    """A research claim checked by `anchor research check`, `anchor.research.check_claim` and `POST
    /v1/verify/claim`, online or (`offline`: the trusted block) offline: "verified" or the error code."""
    import anchor.research
    from anchor.errors import AnchorError
    from anchor.sealing.check import offline_settings

    args = ["--offline", "--trusted-block", offline[0]] if offline else []
    out = json.loads(chain.cli("--json", "research", "check", str(claim), *args).stdout)
    codes = {"cli": "verified" if "report" in out else str(out["error"]["code"])}
    settings = offline_settings(chain.settings, offline) if offline else chain.settings
    try:
        anchor.research.check_claim(settings, claim, offline=bool(offline), trusted_block=offline)
        codes["library"] = "verified"
    except AnchorError as exc:
        codes["library"] = exc.code
    query = {"offline": "true", "trusted_block": offline[0]} if offline else {}
    with TestClient(create_app(chain.settings)) as client:
        response = client.post("/v1/verify/claim", params=query, files={"claim": ("claim.tar", claim.read_bytes())})
    body = response.json()
    codes["api"] = "verified" if response.status_code == 200 and "report" in body else str(body.get("code"))
    if response.status_code == 200:
        assert (
            body["lines"]
            == anchor.research.check_claim(settings, claim, offline=bool(offline), trusted_block=offline).lines
        )
    return codes


@pytest.mark.chain
@pytest.mark.sandbox
def test_every_door_gives_a_research_claim_the_same_verdict_online_and_offline(
    fresh_chain: Any, tmp_path: Path
) -> None:
    """`research check`, the library and the REST door, on a claim as exported and on one whose report
    was edited (its index re-hashed): verified, then tampered, from each, with the chain and without."""
    import tarfile

    import blake3

    from tests.research.helpers import export_example_claim

    done = export_example_claim(fresh_chain, tmp_path)
    edited_dir = tmp_path / "edited"
    with tarfile.open(done.claim) as tar:
        tar.extractall(edited_dir, filter="data")
    report = edited_dir / "report.txt"
    report.write_text(report.read_text().replace(" trials", " trial", 1))
    index = json.loads((edited_dir / "claim.json").read_text())
    index["files"]["report.txt"] = blake3.blake3(report.read_bytes()).hexdigest()
    (edited_dir / "claim.json").write_text(json.dumps(index))
    edited = tmp_path / "edited.tar"
    with tarfile.open(edited, "w") as tar:
        for path in sorted(edited_dir.rglob("*")):
            tar.add(path, arcname=path.relative_to(edited_dir).as_posix(), recursive=False)
    expected = {"cli": "verified", "library": "verified", "api": "verified"}
    assert _claim_codes(fresh_chain, done.claim, []) == expected
    assert _claim_codes(fresh_chain, edited, []) == dict.fromkeys(expected, "tampered")
    fresh_chain.node.down()
    assert _claim_codes(fresh_chain, done.claim, [done.trusted]) == expected
    assert _claim_codes(fresh_chain, edited, [done.trusted]) == dict.fromkeys(expected, "tampered")
