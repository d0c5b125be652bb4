"""The receipt key, token scopes and the calendar's bucket, without a chain (docs/calendar.md)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from anchor.errors import BadInput
from anchor.settings.session import Settings

DEV_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
DEV_ADDRESS = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"


def test_a_receipt_key_that_is_the_funded_key_is_refused(tmp_path: Path) -> None:
    from anchor.anchoring.receipts import load_receipt_signer
    from anchor.settings.model import Environment

    settings = Settings(data_dir=tmp_path, env=Environment({"ANCHOR_RECEIPT_KEY": DEV_KEY}))
    with pytest.raises(BadInput, match="the receipt key is the funded key") as refused:
        load_receipt_signer(settings, DEV_ADDRESS)
    assert DEV_KEY[2:] not in str(refused.value) and DEV_KEY[2:] not in repr(refused.value.detail)


def test_a_receipt_key_is_made_once_private_and_never_shown(tmp_path: Path) -> None:
    from anchor.anchoring.receipts import load_receipt_signer, receipt_key_path
    from anchor.settings.model import Environment

    settings = Settings(data_dir=tmp_path / "d", env=Environment({"ANCHOR_SERVICE_NAME": "test service"}))
    first = load_receipt_signer(settings, DEV_ADDRESS)
    again = load_receipt_signer(settings, DEV_ADDRESS)
    key_file = receipt_key_path(tmp_path / "d")
    assert first.address == again.address != DEV_ADDRESS and key_file.stat().st_mode & 0o777 == 0o600
    assert key_file.read_text().strip()[-64:] not in repr(first) and first.name == "test service"


def test_workers_making_the_receipt_key_at_once_all_read_one_whole_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two API workers start on a fresh data dir and both make the receipt key. The one that lost the
    race used to read the winner's file between its creation and its write: an empty file, "not a
    receipt key", and a 422 for a good submission (seen in CI). The key must appear whole or not at all."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from eth_account import Account

    from anchor.anchoring import receipts

    monkeypatch.delenv("ANCHOR_RECEIPT_KEY", raising=False)
    real_create = Account.create
    started = threading.Barrier(4)

    def slow_create(*args: object, **kwargs: object) -> object:
        time.sleep(0.3)  # the winner is between creating the file and writing it
        return real_create(*args, **kwargs)

    monkeypatch.setattr(Account, "create", staticmethod(slow_create))

    def load(_: int) -> str:
        started.wait()
        return receipts.load_receipt_signer(Settings(data_dir=tmp_path / "d"), DEV_ADDRESS).address

    with ThreadPoolExecutor(4) as pool:
        addresses = set(pool.map(load, range(4)))
    key_file = receipts.receipt_key_path(tmp_path / "d")
    assert len(addresses) == 1 and key_file.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in key_file.parent.iterdir() if key_file.name in p.name] == [key_file.name]  # no draft left


def test_token_scopes_are_parsed_and_a_plain_token_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from anchor.errors import Forbidden, Unauthorized
    from anchor.settings.model import Environment
    from api.config import ApiConfig
    from api.deps import token_id

    submit, relay = hashlib.sha256(b"s").hexdigest(), hashlib.sha256(b"r").hexdigest()
    monkeypatch.setenv("ANCHOR_API_TOKENS", f"sha256:{submit}/submit,sha256:{relay}/relay+submit")
    config = ApiConfig.from_environment(Environment.load())

    def headers(token: str) -> dict[bytes, bytes]:
        return {b"authorization": f"Bearer {token}".encode()}

    assert token_id(headers("s"), config, "/v1/manifests") == submit[:16]
    with pytest.raises(Forbidden, match="may not relay"):
        token_id(headers("s"), config, "/v1/lineage")
    assert token_id(headers("r"), config, "/v1/lineage") == relay[:16]
    with pytest.raises(Unauthorized):
        token_id(headers("x"), config, "/v1/manifests")
    for bad in ("plain-token", f"sha256:{submit}/pay", f"sha256:{submit}/"):
        monkeypatch.setenv("ANCHOR_API_TOKENS", bad)
        with pytest.raises(BadInput, match="sha256"):
            ApiConfig.from_environment(Environment.load())


def test_the_calendar_bucket_refills_at_its_rate_and_names_the_wait() -> None:
    from api.routes.calendar import Buckets

    bucket = Buckets(rate=1.0, burst=2, clients=2)
    assert [bucket.take("a"), bucket.take("a")] == [0.0, 0.0]
    wait = bucket.take("a")
    assert 0 < wait <= 1.0
    assert bucket.take("b") == 0.0 and bucket.take("c") == 0.0  # a bounded table: "a" is dropped for "c"


def test_a_service_url_or_token_setting_that_cannot_work_is_refused() -> None:
    from anchor.anchoring.client import services_from
    from anchor.settings.model import Environment

    def token(value: str) -> Environment:
        return Environment({"ANCHOR_SERVICE_TOKEN": value})

    for bad in ("anchor.example.org", "ftp://x", "http://user:pw@x"):
        with pytest.raises(BadInput, match="expected an http"):
            services_from([bad])
    with pytest.raises(BadInput, match="named twice"):
        services_from(["http://a:1", "http://a:1/"])
    found = services_from(["https://a:1", "https://b:2", "https://c:3"], env=token("https://a:1=t1,https://b:2=t2"))
    assert [s.token for s in found] == ["t1", "t2", None] and "t1" not in repr(found)
    # never in clear to another host
    with pytest.raises(BadInput, match="allow_insecure_token if you accept"):
        services_from(["http://a:1"], env=token("http://a:1=t1"))
    assert [s.token for s in services_from(["http://a:1"], allow_insecure_token=True, env=token("http://a:1=t1"))] == [
        "t1"
    ]
    assert [s.token for s in services_from(["http://127.0.0.1:8000", "http://localhost:1"], env=token("t"))] == [
        "t",
        "t",
    ]
    with pytest.raises(BadInput, match="ANCHOR_SERVICE_TOKEN"):
        services_from(["http://a:1"], env=token("http://a:1=t1,garbage"))
