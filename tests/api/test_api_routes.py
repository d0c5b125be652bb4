"""Every API route against a real anvil: happy paths, error cases, auth, hostile archives."""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
import re
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import blake3
import pytest
from fastapi.testclient import TestClient

from anchor.chain.node import rpc_call
from anchor.ingest.archive import ArchiveLimits
from api.app import create_app
from api.config import ApiConfig
from tests.conftest import Chain, deployed, touches
from tests.hostile_archives import HOSTILE, SMALL_LIMITS
from tests.journal_helpers import journal_value

TOKEN = "a-long-random-token-for-tests"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
@touches("chain")
def api_chain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chain]:
    with deployed(tmp_path_factory.mktemp("api-data")) as chain:
        yield chain


@pytest.fixture(scope="module")
def client(api_chain: Chain) -> Iterator[TestClient]:
    config = ApiConfig(
        token_hashes=frozenset({hashlib.sha256(TOKEN.encode()).hexdigest()}),
        archive_limits=ArchiveLimits(**SMALL_LIMITS),  # type: ignore[arg-type]
        max_request_bytes=8 << 20,
    )
    with TestClient(create_app(api_chain.settings, config)) as test_client:
        yield test_client


def _tar(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _confirmed(client: TestClient, digest: str) -> dict[str, Any]:
    """A submission is 202 "pending": the worker's background flusher anchors it. Wait, bounded, until
    the verify route says so (a condition awaited, not a sleep)."""
    import time

    deadline = time.monotonic() + 60
    while True:
        body = client.get(f"/v1/verify/{digest}").json()
        if body.get("verified") or time.monotonic() > deadline:
            return dict(body)
        time.sleep(0.05)


def _items(chain: Chain) -> int:
    return int(journal_value(chain.data_dir, "SELECT count(*) FROM items"))


def _error(response: Any, status: int, code: str) -> dict[str, Any]:
    body = response.json()
    assert response.status_code == status, body
    assert set(body) == {"code", "message", "detail"} and body["code"] == code, body
    return dict(body)


@pytest.fixture(scope="module")
def anchored(client: TestClient) -> dict[str, Any]:
    """One bundle submitted through the API and anchored by its background flush."""
    files = {"metrics.json": b'{"acc": 0.91}', "model/weights.bin": bytes(range(256)) * 4}
    response = client.post("/v1/bundles", files={"archive": ("b.tar", _tar(files))}, headers=AUTH)
    assert response.status_code == 202, response.json()
    _confirmed(client, response.json()["manifest_digest"])
    return {**response.json(), "contents": files}


def test_health(client: TestClient) -> None:
    assert client.get("/health").json()["status"] == "ok"


def test_writes_without_a_valid_token_are_refused_and_store_nothing(client: TestClient, api_chain: Chain) -> None:
    before = _items(api_chain)
    archive = {"archive": ("b.tar", _tar({"x": b"1"}))}
    _error(client.post("/v1/bundles", files=archive), 401, "unauthorized")
    _error(client.post("/v1/bundles", files=archive, headers={"Authorization": "Bearer wrong"}), 401, "unauthorized")
    _error(
        client.post("/v1/manifests", json={"manifest": {}}, headers={"Authorization": "Basic x"}), 401, "unauthorized"
    )
    assert _items(api_chain) == before


def test_a_submitted_bundle_is_anchored_and_verified_by_digest(client: TestClient, anchored: dict[str, Any]) -> None:
    assert anchored["state"] == "pending" and anchored["files"] == 2 and anchored["claimed_digest_matches"] is None
    body = client.get(f"/v1/verify/{anchored['manifest_digest']}").json()
    assert body["verified"] is True and body["manifest_digest"] == anchored["manifest_digest"]
    assert body["read_at_block"] >= body["anchored_block"] > 0


def test_claimed_digests_are_compared_never_adopted(client: TestClient, anchored: dict[str, Any]) -> None:
    archive = {"archive": ("b.tar", _tar(anchored["contents"]))}
    wrong = client.post("/v1/bundles", files=archive, data={"claimed_digest": "0x" + "00" * 32}, headers=AUTH).json()
    assert wrong["claimed_digest_matches"] is False and wrong["manifest_digest"] == anchored["manifest_digest"]
    right = client.post(
        "/v1/bundles", files=archive, data={"claimed_digest": anchored["manifest_digest"]}, headers=AUTH
    )
    assert right.json()["claimed_digest_matches"] is True and right.json()["duplicate"] is True


def test_an_idempotency_key_reused_for_other_content_is_a_conflict(client: TestClient) -> None:
    first = client.post(
        "/v1/bundles", files={"archive": ("a.tar", _tar({"a": b"1"}))}, headers={**AUTH, "Idempotency-Key": "k-1"}
    )
    assert first.status_code == 202
    again = client.post(
        "/v1/bundles", files={"archive": ("a.tar", _tar({"a": b"1"}))}, headers={**AUTH, "Idempotency-Key": "k-1"}
    )
    assert again.json()["duplicate"] is True
    other = client.post(
        "/v1/bundles", files={"archive": ("b.tar", _tar({"b": b"2"}))}, headers={**AUTH, "Idempotency-Key": "k-1"}
    )
    _error(other, 409, "conflict")


def test_manifest_submission_checks_the_identity_and_its_listing(client: TestClient) -> None:
    files = [{"path": "r.txt", "size": 1, "blake3": blake3.blake3(b"r").hexdigest()}]
    from anchor.manifest.filetree import FileTreeManifest

    identity = FileTreeManifest.from_files_json(files).identity()
    ok = client.post("/v1/manifests", json={"manifest": identity, "files": files}, headers=AUTH)
    assert ok.status_code == 202 and ok.json()["files"] == 1
    forged = [{**files[0], "size": 2}]
    _error(client.post("/v1/manifests", json={"manifest": identity, "files": forged}, headers=AUTH), 422, "bad_input")
    bad = client.post("/v1/manifests", json={"manifest": {**identity, "files_root": "xyz"}}, headers=AUTH)
    assert "files_root" in _error(bad, 422, "bad_input")["message"]
    _error(client.post("/v1/manifests", json={"nope": 1}, headers=AUTH), 422, "bad_input")


def test_verify_by_file_returns_a_proof_that_verifies_alone(client: TestClient, anchored: dict[str, Any]) -> None:
    data = anchored["contents"]["model/weights.bin"]
    body = client.post("/v1/verify/file", files={"file": ("w.bin", data)}).json()
    assert body["path"] == "model/weights.bin" and body["blake3"] == blake3.blake3(data).hexdigest()
    assert body["verification"]["verified"] is True and body["proof"]["file"]["tree_size"] == 2
    _error(client.post("/v1/verify/file", files={"file": ("x", b"never anchored")}), 404, "not_anchored")


def test_verify_by_proof_file(client: TestClient, anchored: dict[str, Any]) -> None:
    proof = client.post("/v1/verify/file", files={"file": ("m", anchored["contents"]["metrics.json"])}).json()["proof"]
    ok = client.post("/v1/verify/proof", files={"proof": ("p.json", json.dumps(proof))})
    assert ok.status_code == 200 and ok.json()["verified"] is True
    proof["batch"]["root"] = "0x" + "11" * 32
    _error(client.post("/v1/verify/proof", files={"proof": ("p.json", json.dumps(proof))}), 422, "bad_proof")
    _error(client.post("/v1/verify/proof", files={"proof": ("p.json", b"{not json")}), 422, "bad_proof")


def test_verify_by_digest_errors(client: TestClient) -> None:
    _error(client.get("/v1/verify/0x" + "77" * 32), 404, "not_anchored")
    _error(client.get("/v1/verify/0x1234"), 422, "bad_input")


def test_search_finds_every_kind_of_hash(client: TestClient, anchored: dict[str, Any]) -> None:
    digest = anchored["manifest_digest"]
    verification = client.get(f"/v1/verify/{digest}").json()
    kinds = {
        digest: "manifest",
        "0x" + blake3.blake3(anchored["contents"]["metrics.json"]).hexdigest(): "file",
        verification["root"]: "batch_root",
        verification["tx_hash"]: "transaction",
    }
    for key, kind in kinds.items():
        hits = client.get(f"/v1/search/{key}").json()
        assert kind in [h["kind"] for h in hits["data"]], (kind, hits)
        assert all(h["detail"]["anchored"] is True for h in hits["data"]) and hits["read_at_block"] > 0
    assert client.get("/v1/search/0x" + "99" * 32).json() == {"data": [], "count": 0, "read_at_block": None}
    _error(client.get("/v1/search/not-hex"), 422, "bad_input")


def test_batch_records(client: TestClient, anchored: dict[str, Any]) -> None:
    root = client.get(f"/v1/verify/{anchored['manifest_digest']}").json()["root"]
    body = client.get(f"/v1/batches/{root}").json()
    assert body["anchored"] is True and anchored["manifest_digest"] in [i["manifest_digest"] for i in body["items"]]
    _error(client.get("/v1/batches/0x" + "55" * 32), 404, "not_anchored")


def test_attempts_by_commit(client: TestClient) -> None:
    from anchor.manifest.attempt import AttemptManifest, Metric

    attempt = AttemptManifest.build(
        commit="c0" * 20,
        parent="0" * 40,
        diff_blake3="d1" * 32,
        metric=Metric.of("acc", "max", 0.5),
        kept=True,
        status="completed",
        researcher="r0",
        contract_digest="e2" * 32,
    )
    submitted = client.post("/v1/manifests", json={"manifest": attempt.identity()}, headers=AUTH)
    assert submitted.status_code == 202
    _confirmed(client, submitted.json()["manifest_digest"])
    body = client.get(f"/v1/attempts/{'c0' * 20}").json()
    assert body["manifests"][0]["commit"] == "c0" * 20 and body["manifests"][0]["state"] == "confirmed"
    _error(client.get(f"/v1/attempts/{'f0' * 20}"), 404, "not_anchored")
    _error(client.get("/v1/attempts/xyz"), 422, "bad_input")


def test_lineage_from_the_research_ledger(client: TestClient, api_chain: Chain, tmp_path: Path) -> None:
    from tests.research.helpers import SCORE_IS_X, make_repo

    repo = make_repo(tmp_path / "repo", {"params.json": json.dumps({"x": 1.0, "y": 2}), "README.md": "r\n"})
    contract = tmp_path / "contract.toml"
    contract.write_text(
        f'task = "t"\ncommand = "{SCORE_IS_X.replace(chr(34), chr(92) + chr(34))}"\neditable = ["params.json"]\n'
        'metric = "score"\nmode = "max"\nattempt_timeout_minutes = 1\n'
    )
    api_chain.cli(
        "research", "run", "--repo", str(repo), "--contract", str(contract), "--max-attempts", "4", check=True
    )
    ledger = [json.loads(x) for x in (api_chain.data_dir / "research" / "ledger.jsonl").read_text().splitlines()]
    last = ledger[-1]["commit"]
    body = client.get(f"/v1/lineage/{last}").json()
    assert body["ancestors"][-1] == ledger[0]["commit"] and body["champion_chain"][0] == ledger[0]["commit"]
    assert all(body["lineage_on_chain"].values())
    _error(client.get(f"/v1/lineage/{'ab' * 20}"), 404, "not_anchored")  # well formed, not in any ledger
    _error(client.get("/v1/lineage/xyz"), 422, "bad_input")


def test_a_researchers_attempts_are_listed_over_every_search_with_filters_pages_and_checked_diffs(
    client: TestClient, api_chain: Chain, tmp_path: Path
) -> None:
    from tests.research.helpers import SCORE_IS_X, make_repo

    contract = tmp_path / "contract.toml"
    contract.write_text(
        f'task = "t"\ncommand = "{SCORE_IS_X.replace(chr(34), chr(92) + chr(34))}"\neditable = ["params.json"]\n'
        'metric = "score"\nmode = "max"\nattempt_timeout_minutes = 1\n'
    )
    for name, attempts in (("w1", "3"), ("w2", "2")):  # two searches, each in a work dir of its own
        # README differs: two repositories made in the same second with the same files have the same
        # commits, and a diff link names only the commit (one copy is served; see the closing note)
        files = {"params.json": json.dumps({"x": 1.0, "y": 2}), "README.md": f"r {name}\n"}
        repo = make_repo(tmp_path / f"repo-{name}", files)
        work = ["--workdir", str(tmp_path / name), "--researcher", "alice", "--max-attempts", attempts]
        api_chain.cli("research", "run", "--repo", str(repo), "--contract", str(contract), *work, check=True)
    listed = client.get("/v1/research/alice/attempts").json()
    assert listed["total"] == 5 and len({a["search"] for a in listed["attempts"]}) == 2
    assert all(a["started_at"] and a["measured_by"]["source"] == "jsonl" for a in listed["attempts"])
    kept = client.get("/v1/research/alice/attempts", params={"kept": "true"}).json()
    assert kept["total"] >= 2 and all(a["kept"] for a in kept["attempts"])
    page = client.get("/v1/research/alice/attempts", params={"limit": 2, "offset": 2}).json()
    assert [a["seq"] for a in page["attempts"]] == [a["seq"] for a in listed["attempts"][2:4]]
    assert page["next_offset"] == 4
    assert client.get("/v1/research/alice/attempts", params={"status": "interrupted"}).json()["total"] == 0
    _error(client.get("/v1/research/nobody/attempts"), 404, "not_anchored")
    _error(client.get("/v1/research/alice/attempts", params={"status": "lost"}), 422, "bad_input")
    # the diff, served only while it hashes to what its ledger row binds
    second = listed["attempts"][1]
    diff = client.get(second["links"]["diff"])
    assert diff.status_code == 200 and diff.headers["content-type"].startswith("text/x-diff")
    assert "params.json" in diff.text and blake3.blake3(diff.content).hexdigest() == second["diff_blake3"]
    page_html = client.get(second["links"]["page"]).text
    assert "<pre class='diff'>" in page_html and "params.json" in page_html
    lineage = client.get(f"/explorer/lineage/{second['commit']}").text
    assert "<table class='researchers'>" in lineage and ">alice</a>" in lineage
    kept_file = tmp_path / "w1" / "runs" / "alice" / second["commit"][:12] / "code.diff"
    kept_file.write_bytes(kept_file.read_bytes() + b"+ an edit after the fact\n")
    _error(client.get(second["links"]["diff"]), 409, "tampered")
    # what an attempt can plant in its own run dir: a link to a descriptor, a link to a pipe, a pipe.
    # Each blocked a worker thread for good (40 requests stopped the service); now each is refused at once.
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for plant in (
        lambda: kept_file.symlink_to("/proc/self/fd/0"),
        lambda: kept_file.symlink_to(fifo),
        lambda: os.mkfifo(kept_file),
    ):
        kept_file.unlink()
        plant()
        answers: list[Any] = []
        asking = threading.Thread(
            target=lambda got=answers: got.append(client.get(second["links"]["diff"])), daemon=True
        )
        asking.start()
        asking.join(10)
        assert answers, "the diff request blocked on what the attempt planted"
        assert _error(answers[0], 409, "tampered")["message"].endswith("not served")
        assert "<pre class='diff'>" not in client.get(second["links"]["page"]).text  # the page never follows it


def test_deployment_and_source_material_rebuild_the_deployed_bytecode(client: TestClient, api_chain: Chain) -> None:
    import solcx

    from anchor.chain.toolchain import solc_shim

    deployment = client.get("/v1/deployment").json()
    assert deployment["code_matches"] is True
    material = client.get("/v1/deployment/source").json()
    assert material["constructor_arguments"] == "0x" and material["settings"]["evmVersion"] == "cancun"
    output = solcx.compile_standard(material["standard_json_input"], solc_binary=solc_shim())
    source, name = material["contract"].split(":")
    runtime = output["contracts"][source][name]["evm"]["deployedBytecode"]["object"]
    on_chain = rpc_call(api_chain.node.rpc_url, "eth_getCode", [material["address"], "latest"])
    assert "0x" + runtime == on_chain


def test_unknown_routes_methods_and_oversized_bodies_use_the_error_shape(client: TestClient) -> None:
    _error(client.get("/v1/nothing-here"), 404, "not_found")
    _error(client.delete("/health"), 405, "method_not_allowed")
    big = b"x" * ((8 << 20) + 1)
    _error(client.post("/v1/bundles", files={"archive": ("b.tar", big)}, headers=AUTH), 413, "request_too_large")


@pytest.mark.parametrize("case", list(HOSTILE), ids=list(HOSTILE))
def test_a_hostile_archive_is_refused_with_4xx_and_nothing_is_stored(
    client: TestClient, api_chain: Chain, case: str
) -> None:
    before = _items(api_chain)
    response = client.post("/v1/bundles", files={"archive": ("hostile", HOSTILE[case]())}, headers=AUTH)
    assert 400 <= response.status_code < 500, response.json()
    assert set(response.json()) == {"code", "message", "detail"}
    assert _items(api_chain) == before


def _archive_of(tmp_path: Path, maker: list[str], name: str) -> bytes:
    import shutil
    import subprocess
    import uuid

    from tests.conftest import ROOT

    bundle = tmp_path / f"bundle-{name}"
    shutil.copytree(ROOT / "examples" / "bundle", bundle)
    (bundle / "run-id.txt").write_text(uuid.uuid4().hex)
    subprocess.run([*maker, str(tmp_path / name), "."], cwd=bundle, check=True)
    return (tmp_path / name).read_bytes()


@pytest.mark.parametrize(
    ("maker", "name"), [(["zip", "-qr"], "b.zip"), (["tar", "-cf"], "b.tar")], ids=["zip -r", "tar -cf ."]
)
def test_zip_r_and_tar_dot_archives_anchor_and_verify(
    client: TestClient, tmp_path: Path, maker: list[str], name: str
) -> None:
    """Archives as people make them: `zip -r` writes `dir/` entries, `tar -C d -cf x.tar .` a `.`."""
    archive = _archive_of(tmp_path, maker, name)
    submitted = client.post("/v1/bundles", files={"archive": (name, archive)}, headers=AUTH)
    assert submitted.status_code == 202, submitted.json()
    verified = _confirmed(client, submitted.json()["manifest_digest"])
    assert verified["verified"] is True and verified["files"] == submitted.json()["files"] == 5


def test_explorer_proof_links_percent_encode_file_names(client: TestClient) -> None:
    files = {"decoy&path=results.csv": b"decoy", "results.csv": b"the real one", "a b/#c?.txt": b"x"}
    submitted = client.post("/v1/bundles", files={"archive": ("b.tar", _tar(files))}, headers=AUTH).json()
    _confirmed(client, submitted["manifest_digest"])
    page = client.get(f"/explorer/bundle/{submitted['manifest_digest']}").text
    assert "proof?path=decoy%26path%3Dresults.csv'" in page and "proof?path=a%20b%2F%23c%3F.txt'" in page
    assert "path=decoy&amp;path=results.csv" not in page


def test_a_big_bundle_page_is_paginated_and_its_listing_built_once(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 200,000-file bundle made one 52 MB page rendered on the event loop (6-7 s, /health stalled).
    Now `PAGE_FILES` rows a page with links to the others, a page past the end is a 404, and the
    listing is built once per digest (the second view reads the cache). (Pages of 20 here: this
    client's archives hold 50 files at most.)"""
    from api.routes import explorer

    monkeypatch.setattr(explorer, "PAGE_FILES", 20)
    files = {f"runs/{n:05d}.txt": str(n).encode() for n in range(2 * explorer.PAGE_FILES + 7)}
    submitted = client.post("/v1/bundles", files={"archive": ("b.tar", _tar(files))}, headers=AUTH)
    assert submitted.status_code == 202, submitted.json()
    digest = submitted.json()["manifest_digest"]
    _confirmed(client, digest)
    first = client.get(f"/explorer/bundle/{digest}").text
    assert first.count("/proof?path=") == explorer.PAGE_FILES
    assert f"files 1–{explorer.PAGE_FILES} of {len(files)} · page 1 of 3" in first and "?page=2'>next" in first
    last = client.get(f"/explorer/bundle/{digest}", params={"page": 3}).text
    assert last.count("/proof?path=") == 7 and "runs/00046.txt" in last and "runs/00000.txt" not in last
    assert "?page=2'>previous" in last and ">next<" not in last
    past = client.get(f"/explorer/bundle/{digest}", params={"page": 4})  # a page for a person, not JSON
    assert past.status_code == 404 and past.headers["content-type"].startswith("text/html")
    assert "not_anchored" in past.text
    assert client.get(f"/explorer/bundle/{digest}", params={"page": 0}).status_code == 422
    cached = client.app.state.bundle_listings[bytes.fromhex(digest[2:])]  # type: ignore[attr-defined]
    assert len(cached[1]) == len(files) and cached[0].files is None  # the listing, and the proof without it


def test_explorer_pages_escape_a_strangers_file_names(client: TestClient) -> None:
    """Autoescaped templates: a file name is text on the page, never markup."""
    files = {"<script>alert(1)</script>.txt": b"x", 'it\'s "quoted" & <b>.csv': b"y"}
    submitted = client.post("/v1/bundles", files={"archive": ("b.tar", _tar(files))}, headers=AUTH).json()
    _confirmed(client, submitted["manifest_digest"])
    page = client.get(f"/explorer/bundle/{submitted['manifest_digest']}").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;.txt" in page and "<script>" not in page
    assert "&amp; &lt;b&gt;.csv" in page and "<b>.csv" not in page and "it's \"quoted" not in page


def test_a_proof_naming_another_registry_is_not_ours(client: TestClient, anchored: dict[str, Any]) -> None:
    proof = client.post("/v1/verify/file", files={"file": ("m", anchored["contents"]["metrics.json"])}).json()["proof"]
    proof["anchor"]["registry"] = "0x" + "12" * 20  # a stranger's copy of the registry, say
    refused = _error(
        client.post("/v1/verify/proof", files={"proof": ("p.json", json.dumps(proof))}), 422, "unknown_registry"
    )
    assert refused["detail"]["proof_registry"] == "0x" + "12" * 20


def test_a_verdict_names_the_submitter_and_the_time(client: TestClient, anchored: dict[str, Any]) -> None:
    body = client.get(f"/v1/verify/{anchored['manifest_digest']}").json()
    assert body["submitter"].startswith("0x") and body["anchored_at"].endswith("+00:00")
    assert body["registry_trusted_by"].startswith("canonical address")


def test_the_root_leads_to_the_explorer_home_with_the_latest_batches(
    client: TestClient, anchored: dict[str, Any]
) -> None:
    moved = client.get("/", follow_redirects=False)
    assert moved.status_code == 307 and moved.headers["location"] == "/explorer/"
    root = client.get(f"/v1/verify/{anchored['manifest_digest']}").json()["root"]
    home = client.get("/").text
    assert f"/explorer/batch/{root}" in home and "href='/docs'" in home


def test_every_html_page_carries_a_content_security_policy_and_no_page_can_be_framed(
    client: TestClient, anchored: dict[str, Any]
) -> None:
    """No page had a policy, frame-ancestors or nosniff: a stranger's text on a page (a file name, a
    researcher) had autoescaping as its only fence, and any site could frame /verify."""
    root = client.get(f"/v1/verify/{anchored['manifest_digest']}").json()["root"]
    pages = ["/explorer/", f"/explorer/batch/{root}", f"/explorer/bundle/{anchored['manifest_digest']}", "/verify"]
    for path in pages:
        answer = client.get(path)
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html"), path
        policy = answer.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy and "default-src 'self'" in policy, (path, policy)
        assert "unsafe-inline" not in policy.split("script-src")[1].split(";")[0], (path, policy)
        assert answer.headers["x-content-type-options"] == "nosniff" and answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["referrer-policy"] == "no-referrer"
    verify_policy = client.get("/verify").headers["content-security-policy"]
    connect = verify_policy.split("connect-src ")[1].split(";")[0].split()
    assert connect[0] == "'self'" and all(c.startswith("http") and c.count("/") == 2 for c in connect[1:])
    assert "frame-ancestors 'none'" in client.get("/docs").headers["content-security-policy"]
    json_answer = client.get("/health")
    assert json_answer.headers["x-content-type-options"] == "nosniff"
    assert "content-security-policy" not in json_answer.headers  # a policy is for documents


def test_every_page_names_the_chain_it_was_read_from_and_a_batch_its_registry(
    client: TestClient, anchored: dict[str, Any]
) -> None:
    """The header said "read live from the chain at block 19", and a batch page gave a tx hash and a
    submitter with no chain and no registry: on a public chain a tx hash alone says nowhere."""
    verdict = client.get(f"/v1/verify/{anchored['manifest_digest']}").json()
    root, registry = verdict["root"], verdict["registry"]
    for url in ("/explorer/", f"/explorer/batch/{root}", f"/explorer/bundle/{anchored['manifest_digest']}"):
        header = client.get(url).text.split("<header>", 1)[1].split("</header>", 1)[0]
        assert "read live from local development chain (31337) at block" in header, (url, header)
    batch = client.get(f"/explorer/batch/{root}").text
    assert "<th>chain</th><td class='hash'>local development chain (31337)</td>" in batch, batch[:3000]
    assert f"<th>registry</th><td class='hash'>{registry}</td>" in batch, batch[:3000]


def test_page_text_counts_in_words_and_a_header_without_a_block_ends_cleanly(
    client: TestClient, anchored: dict[str, Any]
) -> None:
    """A batch of one said "1 records"; a page with no chain block read said "Anchor explorer ·"."""
    root = client.get(f"/v1/verify/{anchored['manifest_digest']}").json()["root"]
    batch = client.get(f"/explorer/batch/{root}").text
    assert re.search(r"<h2>(1 record|[02-9]\d* records|1\d+ records)</h2>", batch), batch[:2000]
    assert "1 records" not in batch
    verify_page = client.get("/verify").text
    header = verify_page.split("<header>", 1)[1].split("</header>", 1)[0]
    assert not re.sub(r"<[^>]+>", "", header).rstrip().endswith("·"), header


def test_a_signed_lineage_record_is_relayed_under_its_researcher_and_a_bad_one_refused(
    client: TestClient, api_chain: Chain
) -> None:
    """The service relays a record its researcher signed; it never needs the researcher's key, and a
    signature that does not recover to the named researcher, or is past its deadline, stores nothing."""
    import time

    from eth_account import Account

    from anchor.chain.keys import Signer
    from anchor.chain.open import open_chain, open_registry
    from anchor.chain.signed import LineageFields

    handle = open_chain(api_chain.settings)
    registry = open_registry(api_chain.settings, handle)
    researcher = Signer(Account.from_key("0x" + "3c" * 32), "researcher")
    commit = os.urandom(20).ljust(32, b"\0")
    fields = LineageFields(researcher.address, commit, b"\1" * 32, b"\2" * 32, b"\3" * 32, True, int(time.time()) + 600)
    signed = researcher.sign_lineage(handle.chain_id, registry.address, fields).to_json()
    forged = {**signed, "metric_hash": "ee" * 32}  # a relayer (or anyone) changing a field
    _error(client.post("/v1/lineage", json=forged, headers=AUTH), 422, "bad_input")
    late = researcher.sign_lineage(handle.chain_id, registry.address, dataclasses.replace(fields, deadline=1))
    _error(client.post("/v1/lineage", json=late.to_json(), headers=AUTH), 422, "bad_input")
    _error(client.post("/v1/lineage", json=signed), 401, "unauthorized")
    for field, value in [
        ("deadline", -1),
        ("deadline", 1 << 256),
        ("deadline", 1e300),
        ("researcher", "zzz"),
        ("kept", "false"),
    ]:
        refused = client.post("/v1/lineage", json={**signed, field: value}, headers=AUTH)
        _error(refused, 422, "bad_input")  # never a 500
        assert refused.json()["detail"] == {"field": field}, (field, refused.json())
    accepted = client.post("/v1/lineage", json=signed, headers=AUTH)
    assert accepted.status_code == 202 and accepted.json()["researcher"] == researcher.address
    from anchor.anchoring.service import AnchorService

    service = AnchorService.open(api_chain.settings)
    try:
        service.flush()
        record = service.registry.lineage(commit, researcher.address)
        assert record is not None and record.metric_hash == "0x" + "03" * 32
    finally:
        service.close()
    hits = client.get(f"/v1/search/{commit[:20].hex()}").json()["data"]  # by commit, as a user would search
    [lineage] = [h for h in hits if h["kind"] == "lineage"]
    assert lineage["detail"]["researcher"] == researcher.address.lower() and lineage["detail"]["anchored"] is True


def test_a_journal_write_never_holds_the_event_loop(client: TestClient, monkeypatch: pytest.MonkeyPatch) -> None:
    """A submission whose journal write is stuck (a busy disk, a locked database) must not stop other
    requests: the write runs in the journal writer's thread (anchor.journal.group), and the route awaits
    it, so /health and verify answer while it waits. Proven by order, not by timing: the write is
    released only after the other requests have returned."""
    import threading

    import anchor.journal.group as group

    release, entered = threading.Event(), threading.Event()
    real_submit = group.submit_many

    def stuck(*args: Any, **kwargs: Any) -> Any:
        entered.set()
        assert release.wait(60), "never released"
        return real_submit(*args, **kwargs)

    monkeypatch.setattr(group, "submit_many", stuck)
    manifest = {"kind": "filetree", "version": 1, "files_root": "ab" * 32, "file_count": 1, "total_size": 1}
    result: dict[str, int] = {}
    writer = threading.Thread(
        target=lambda: result.update(
            status=client.post("/v1/manifests", json={"manifest": manifest}, headers=AUTH).status_code
        )
    )
    writer.start()
    assert entered.wait(60)  # the write is in progress, and stuck
    assert client.get("/health").status_code == 200
    assert client.get(f"/v1/verify/0x{'cd' * 32}").status_code == 404  # a verify answers too
    release.set()
    writer.join(60)
    assert result == {"status": 202}


def test_a_streamed_body_past_the_limit_on_a_direct_route_is_413_not_500(client: TestClient) -> None:
    """A route served directly (api.limits.DirectRoutes) answers the edge guard's refusals as every
    other route does: a chunked body that passes the limit while streamed is 413 in the error shape.
    Without the mapping it escaped as a 500 "internal" (the body deadline's 408 takes the same path)."""

    def chunks() -> Iterator[bytes]:
        for _ in range(9):  # 9 MiB against this client's 8 MiB limit, with no Content-Length to refuse early
            yield b" " * (1 << 20)

    answer = client.post("/v1/manifests", content=chunks(), headers={**AUTH, "Content-Type": "application/json"})
    _error(answer, 413, "request_too_large")
