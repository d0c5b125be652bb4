"""Several API workers share one journal: concurrent submissions through two uvicorn workers are all
journaled once and anchored exactly once, their background flushes serialized by the flush lock."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import time
import urllib.error
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor

from tests.api_server import serving_api
from tests.conftest import Chain
from tests.journal_helpers import assert_exactly_once

TOKEN = "workers-token"


def _multipart(archive: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="archive"; filename="b.tar"\r\n'
            "Content-Type: application/x-tar\r\n\r\n"
        ).encode()
        + archive
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


def _bundle(i: int) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        data = f"result {i} {uuid.uuid4()}".encode()
        info = tarfile.TarInfo(f"run-{i}/metrics.txt")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_two_workers_share_the_journal_and_anchor_everything_once(fresh_chain: Chain) -> None:
    fresh_chain.cli("deploy", check=True)
    env = {**fresh_chain.env(), "ANCHOR_API_TOKENS": "sha256:" + hashlib.sha256(TOKEN.encode()).hexdigest()}
    with serving_api(env, workers=2) as url:

        def post(i: int) -> str:
            body, content_type = _multipart(_bundle(i))
            request = urllib.request.Request(
                f"{url}/v1/bundles", body, {"Content-Type": content_type, "Authorization": f"Bearer {TOKEN}"}
            )
            try:
                with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310 - loopback
                    assert answer.status == 202
                    return str(json.loads(answer.read())["manifest_digest"])
            except urllib.error.HTTPError as refused:  # say why: a bare "HTTP Error 422" hid a race in CI
                raise AssertionError(f"submission {i}: {refused.code} {refused.read().decode()}") from None

        with ThreadPoolExecutor(8) as pool:
            digests = list(pool.map(post, range(24)))
        assert len(set(digests)) == 24
        deadline = time.monotonic() + 120
        pending = set(digests)
        while pending and time.monotonic() < deadline:
            for digest in list(pending):
                try:
                    with urllib.request.urlopen(f"{url}/v1/verify/{digest}", timeout=10) as answer:  # noqa: S310
                        if json.loads(answer.read())["verified"]:
                            pending.discard(digest)
                except urllib.error.HTTPError:
                    pass
            time.sleep(0.2)
        assert not pending, f"{len(pending)} submissions never anchored"
    assert_exactly_once(fresh_chain.node.rpc_url, fresh_chain.data_dir, 24)
