"""Property-based fuzzing of the OpenAPI schema with schemathesis, against the app served by uvicorn on
a real chain: at least 1,000 generated requests, no 5xx."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.conftest import ROOT, Chain, free_port

TOKEN = "fuzzing-token"


def test_a_thousand_generated_requests_produce_no_server_error(
    deployed_chain: Chain, bundle: Path, tmp_path: Path
) -> None:
    deployed_chain.cli("anchor", str(bundle), check=True)
    port = free_port()
    env = {
        **deployed_chain.env(),
        "ANCHOR_API_TOKENS": "sha256:" + hashlib.sha256(TOKEN.encode()).hexdigest(),
        "ANCHOR_API_FLUSH": "0",  # journal only: the fuzzer's submissions are not anchored
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "api.app:create_app", "--factory", "--port", str(port),
         "--log-level", "warning"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{url}/health", timeout=1)  # noqa: S310 - loopback
                break
            except OSError:
                time.sleep(0.1)
        fuzz = subprocess.run(
            [
                str(Path(sys.executable).with_name("st")), "run", f"{url}/openapi.json",
                "--checks", "not_a_server_error",
                "-H", f"Authorization: Bearer {TOKEN}", "--max-examples", "100", "--seed", "20261130",
                "--report", "junit", "--report-dir", str(tmp_path / "report"),
            ],
            cwd=ROOT, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
    finally:
        server.terminate()
        server.wait()
    summary = re.search(r"(\d+) generated, (\d+) passed", fuzz.stdout)
    assert fuzz.returncode == 0 and summary is not None, fuzz.stdout[-4000:]
    generated, passed = map(int, summary.groups())
    assert generated >= 1000 and passed == generated, summary.group(0)
