"""Property-based fuzzing of the OpenAPI schema with schemathesis, against the app served by uvicorn on
a real chain: at least 1,000 generated requests, no 5xx."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

from tests.api_server import serving_api
from tests.conftest import ROOT, Chain

TOKEN = "fuzzing-token"


def test_a_thousand_generated_requests_produce_no_server_error(
    deployed_chain: Chain, bundle: Path, tmp_path: Path
) -> None:
    deployed_chain.cli("anchor", str(bundle), check=True)
    env = {
        **deployed_chain.env(),
        "ANCHOR_API_TOKENS": "sha256:" + hashlib.sha256(TOKEN.encode()).hexdigest(),
        "ANCHOR_API_FLUSH": "0",  # journal only: the fuzzer's submissions are not anchored
    }
    with serving_api(env) as url:
        fuzz = subprocess.run(
            [
                str(Path(sys.executable).with_name("st")),
                "run",
                f"{url}/openapi.json",
                "--checks",
                "not_a_server_error",
                "-H",
                f"Authorization: Bearer {TOKEN}",
                "--max-examples",
                "100",
                "--seed",
                "20261130",
                "--report",
                "junit",
                "--report-dir",
                str(tmp_path / "report"),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=900,
        )
    summary = re.search(r"(\d+) generated, (\d+) passed", fuzz.stdout)
    assert fuzz.returncode == 0 and summary is not None, fuzz.stdout[-4000:]
    generated, passed = map(int, summary.groups())
    assert generated >= 1000 and passed == generated, summary.group(0)
