"""The REST service on a real chain: health, verify by digest, one error shape."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient

from api.app import create_app
from tests.conftest import Chain


def test_health_answers_without_the_chain(tmp_path: Path) -> None:
    from anchor.settings.session import Settings

    with TestClient(create_app(Settings(data_dir=tmp_path))) as client:
        response = client.get("/health")
    assert response.status_code == 200 and response.json()["status"] == "ok"


def test_readiness_checks_the_registry_code_and_the_journal_on_both_backends(
    fresh_chain: Chain, journal_url: str | None
) -> None:
    """/ready is what a Deployment's readiness probe asks: 503 until the chain holds the recorded
    registry, 200 with the block and the journal's backend once it does; 503 again when the chain is gone."""
    import dataclasses

    chain = dataclasses.replace(fresh_chain, journal_url=journal_url)
    with TestClient(create_app(chain.settings)) as client:
        before = client.get("/ready")
    assert before.status_code == 502 and before.json()["code"] == "not_deployed"
    chain.cli("deploy", check=True)
    with TestClient(create_app(chain.settings)) as client:
        ready = client.get("/ready")
        assert ready.status_code == 200, ready.json()
        body = ready.json()
        assert body["status"] == "ready" and body["block"] >= 1 and body["chain_id"] == 31337
        assert body["journal"] == ("sqlite" if journal_url is None else "postgresql")
        chain.node.down()  # the chain we started, gone: not ready any more
        gone = client.get("/ready")
    assert gone.status_code == 503, gone.json()


def test_verify_by_digest_is_backed_by_a_live_chain_read(deployed_chain: Chain, bundle: Path) -> None:
    anchored = json.loads(deployed_chain.cli("anchor", str(bundle), "--json", check=True).stdout)
    digest = anchored["proof"]["manifest_digest"]
    with TestClient(create_app(deployed_chain.settings)) as client:
        response = client.get(f"/v1/verify/{digest}")
    body = response.json()
    assert response.status_code == 200, body
    assert body["verified"] is True and body["manifest_digest"] == digest
    assert body["tx_hash"] == anchored["proof"]["anchor"]["tx_hash"]
    assert body["read_at_block"] >= body["anchored_block"]


def test_unknown_digest_is_404_and_malformed_digest_is_422_with_the_error_shape(deployed_chain: Chain) -> None:
    with TestClient(create_app(deployed_chain.settings)) as client:
        missing = client.get("/v1/verify/0x" + "77" * 32)
        malformed = client.get("/v1/verify/0x1234")
    assert missing.status_code == 404 and missing.json()["code"] == "not_anchored"
    assert malformed.status_code == 422
    body = malformed.json()
    assert set(body) == {"code", "message", "detail"} and body["code"] == "bad_input"
    assert "manifest_digest" in body["message"]


def test_a_malformed_parameter_is_named_as_the_query_string_spells_it_with_what_was_given(tmp_path: Path) -> None:
    """docs/api.md: a refused input's message opens with its parameter and `detail.field` holds it. A
    parameter FastAPI refused said "field 'path.manifest_digest': String should match pattern …", with no
    `detail.field` and not the value refused. No chain is asked: the request never reaches a route."""
    from anchor.settings.session import Settings

    with TestClient(create_app(Settings(data_dir=tmp_path))) as client:
        digest = client.get("/v1/verify/0x12").json()
        limit = client.get("/v1/research/r0/attempts", params={"limit": "9999"}).json()
    assert digest["code"] == "bad_input" and digest["detail"]["field"] == "manifest_digest", digest
    assert digest["message"].startswith("manifest_digest '0x12': "), digest
    assert limit["detail"]["field"] == "limit" and limit["message"].startswith("limit '9999': "), limit
    assert digest["detail"]["errors"][0]["field"] == "path.manifest_digest"  # where, as before


def test_an_explorer_link_that_fails_answers_a_person_with_a_page_and_a_client_with_json(tmp_path: Path) -> None:
    """`/explorer/attempt/zzz` (a mistyped link) answered a person's browser with the API's JSON error; the
    explorer is for people, so its refusals are pages, with the same status and words. `/v1/…` stays JSON."""
    from anchor.settings.session import Settings

    with TestClient(create_app(Settings(data_dir=tmp_path))) as client:
        typo = client.get("/explorer/attempt/zzz")
        missing = client.get("/explorer/no-such-page")
        api = client.get("/v1/verify/0x12")
    assert typo.status_code == 422 and typo.headers["content-type"].startswith("text/html"), typo.text[:200]
    assert "commit &#39;zzz&#39;: expected a commit id" in typo.text and "<h1>" in typo.text
    assert missing.status_code == 404 and missing.headers["content-type"].startswith("text/html")
    assert "/explorer/" in missing.text  # a way back
    assert api.status_code == 422 and api.json()["detail"]["field"] == "manifest_digest"
