"""The chain-only explorer and the browser verification, as headless Chromium shows them, for the README.

Run by examples/screenshots.sh after the demo (the chain up, ANCHOR_DATA_DIR set): serves
`anchor index` against the demo chain with the demo's ledger and repository as published
claims, then drives Chromium over the DevTools protocol (tests/cdp.py): the home page, a researcher's
page with the metric chart, and the verification of examples/bundle against its proof, done in the
browser.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.cdp import chromium_page  # noqa: E402
from tests.conftest import free_port  # noqa: E402
from tests.explorer.test_explorer_pages import CHROMIUM_FLAGS, chromium  # noqa: E402


def main() -> None:
    data = Path(os.environ["ANCHOR_DATA_DIR"])
    shots = ROOT / "docs" / "screenshots"
    rpc = f"http://127.0.0.1:{os.environ['ANCHOR_LOCAL_PORT']}"
    registry = json.loads((data / "deployments" / "31337.json").read_text())["address"]
    port = free_port()
    server = subprocess.Popen(
        [str(ROOT / ".venv" / "bin" / "anchor"), "index", "--rpc-url", rpc, "--registry", registry,
         "--index", str(data / "index.sqlite"), "--claims", str(data / "research" / "ledger.jsonl"),
         "--repo", str(data / "research-repo"), "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                home = urllib.request.urlopen(url + "/", timeout=1).read().decode()  # noqa: S310 - loopback
                break
            except OSError:
                time.sleep(0.1)
        researcher = home.split("/researcher/")[1].split("'")[0]
        with chromium_page(chromium(), CHROMIUM_FLAGS) as page:
            page.goto(url + "/")
            page.screenshot(shots / "chain-only-home.png", height=1000)
            page.goto(f"{url}/researcher/{researcher}")
            page.screenshot(shots / "metric-chart.png", height=720)
            page.goto(url + "/verify", ready="!!document.getElementById('check')")
            bundle = ROOT / "examples" / "bundle"
            page.set_files("#files", sorted(p for p in bundle.rglob("*") if p.is_file()))
            page.set_files("#proof", [data / "bundle.anchor.json"])
            page.evaluate("document.getElementById('check').click()")
            assert page.wait_for("document.getElementById('verdict').dataset.status") == "verified"
            page.screenshot(shots / "browser-verify.png", height=620)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    print(f"wrote {shots}/{{chain-only-home,metric-chart,browser-verify}}.png")


if __name__ == "__main__":
    main()
