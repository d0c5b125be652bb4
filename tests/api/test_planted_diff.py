"""An attempt replaced its run dir's code.diff with a link to `/proc/self/fd/N`: about 40
anonymous GETs of its diff blocked every worker thread for good, `/health` and `/v1/verify` stopped
answering and SIGTERM did not stop the server. Against a live server: each GET is a 4xx within 5 s,
the service keeps answering, and SIGTERM stops it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from anchor.research.evidence import run_dir_of
from anchor.research.ledger import Ledger
from anchor.research.searches import remember_search
from tests.api_server import wait_for_health
from tests.conftest import ROOT, free_port

COMMITS = ("a1" * 20, "b2" * 20)


def _ledger(workdir: Path) -> None:
    ledger = Ledger(workdir / "ledger.jsonl")
    for commit in COMMITS:
        ledger.append({"event": "started", "commit": commit, "researcher": "r0", "started_at": "t"})
        ledger.append(
            {
                "commit": commit,
                "parent": "0" * 40,
                "researcher": "r0",
                "status": "completed",
                "kept": False,
                "attempt_digest": "ab" * 32,
                "diff_blake3": "cd" * 32,
                "contract_digest": "ef" * 32,
            }
        )


pytestmark = pytest.mark.chain  # a served API (uvicorn child): the slow tier


def _status(url: str) -> tuple[int, float]:
    start = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:  # noqa: S310 - loopback
            return answer.status, time.monotonic() - start
    except urllib.error.HTTPError as exc:
        return exc.code, time.monotonic() - start


def test_forty_gets_of_a_planted_diff_link_answer_4xx_quickly_and_the_server_still_stops(tmp_path: Path) -> None:
    data, workdir = tmp_path / "data", tmp_path / "data" / "research"
    _ledger(workdir)
    remember_search(data, workdir)
    linked = run_dir_of(workdir, "r0", COMMITS[0])
    linked.mkdir(parents=True)
    (linked / "code.diff").symlink_to("/proc/self/fd/0")  # the server's own stdin: a read would block
    fifo = run_dir_of(workdir, "r0", COMMITS[1])
    fifo.mkdir(parents=True)
    os.mkfifo(fifo / "code.diff")  # and a FIFO nobody writes to

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env.update(ANCHOR_DATA_DIR=str(data), ANCHOR_LOCAL_PORT=str(free_port()))
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "uvicorn",
            "api.app:create_app",
            "--factory",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for_health(url)
        targets = [f"{url}/v1/research/r0/attempts/{c}/diff" for c in COMMITS] * 20
        with ThreadPoolExecutor(40) as pool:
            answers = list(pool.map(_status, targets))
        assert all(400 <= code < 500 for code, _ in answers), answers
        assert max(seconds for _, seconds in answers) < 5.0, answers
        assert _status(f"{url}/health")[0] == 200
        assert _status(f"{url}/v1/verify/{'ab' * 32}")[0] in (404, 503)  # answered (no chain here), not hung
        os.killpg(server.pid, signal.SIGTERM)
        assert server.wait(timeout=20) is not None  # stopped by SIGTERM, not hung in a read
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
