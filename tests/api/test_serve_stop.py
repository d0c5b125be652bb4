"""`anchor serve` stopped as a supervisor stops it (SIGTERM to its process group) leaves nothing behind.

uvicorn shuts the app down, then raises the signal it caught again, so the process ends by SIGTERM's
default action and no atexit handler runs: the flusher's queue, made at start-up, held three named
semaphores that nobody released, and every stop printed "resource_tracker: There appear to be 3
leaked semaphore objects to clean up at shutdown"."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from tests.api_server import anchor_serve
from tests.conftest import Chain

pytestmark = pytest.mark.chain  # a served API (uvicorn child): the slow tier


def test_serve_stopped_by_sigterm_idle_or_after_a_verdict_leaves_no_semaphore_behind(
    deployed_chain: Chain, bundle: Path, tmp_path: Path
) -> None:
    deployed_chain.cli("stamp", str(bundle), check=True)
    proof = bundle.with_name("bundle.anchor.json").read_bytes()
    boundary = "serve-stop-boundary"
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="proof"; filename="p.json"\r\n'
            "Content-Type: application/json\r\n\r\n"
        ).encode()
        + proof
        + f"\r\n--{boundary}--\r\n".encode()
    )
    for name in ("idle", "after a verdict"):
        log = tmp_path / f"{name.replace(' ', '-')}.log"
        with anchor_serve([], deployed_chain.env(), log) as url:
            urllib.request.urlopen(f"{url}/health", timeout=10).read()  # noqa: S310 - loopback
            if name == "after a verdict":
                request = urllib.request.Request(
                    f"{url}/v1/verify/proof", body, {"Content-Type": f"multipart/form-data; boundary={boundary}"}
                )
                with urllib.request.urlopen(request, timeout=60) as answer:  # noqa: S310 - loopback
                    assert json.loads(answer.read())["status"] == "verified"
        said = log.read_text()
        assert "leaked" not in said and "Traceback" not in said, said
