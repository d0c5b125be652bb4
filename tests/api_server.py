"""Serve the API with uvicorn in a child process, for tests that need it over real HTTP."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from tests.conftest import ROOT, free_port


@contextmanager
def serving_api(env: dict[str, str], workers: int = 1) -> Iterator[str]:
    """The base URL of the app, served until the block ends; fails if /health never answers."""
    with serving_api_process(env, workers) as (url, _):
        yield url


@contextmanager
def serving_api_process(env: dict[str, str], workers: int = 1) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`serving_api`, with the server process itself (to check it is still the one serving)."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "api.app:create_app", "--factory", "--port", str(port),
         "--workers", str(workers), "--log-level", "warning"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(150):
            try:
                urllib.request.urlopen(f"{url}/health", timeout=1)  # noqa: S310 - loopback
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError("the API did not come up")
        yield url, server
    finally:
        server.terminate()
        server.wait()
