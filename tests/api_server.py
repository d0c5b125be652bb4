"""Serve the API with uvicorn in a child process, for tests that need it over real HTTP."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.conftest import ROOT, free_port


def wait_for_health(url: str, bound_s: float = 60.0) -> None:
    """Return once `url`/health answers (a server just started); fail after `bound_s`."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            urllib.request.urlopen(f"{url}/health", timeout=1)  # noqa: S310 - loopback
            return
        time.sleep(0.1)
    raise AssertionError(f"{url} did not come up within {bound_s:g} s")


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
        [
            sys.executable,
            "-m",
            "uvicorn",
            "api.app:create_app",
            "--factory",
            "--port",
            str(port),
            "--workers",
            str(workers),
            "--log-level",
            "warning",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
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


class Replica:
    """One `anchor serve` (uvicorn, one worker, its flusher) in a process group of its own; stopped and
    killed only through the group we started."""

    def __init__(self, index: int, data_dir: Path, env: dict[str, str]) -> None:
        self.index, self.data_dir, self.env = index, data_dir, env
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.up = threading.Event()

    def start(self) -> None:
        log = open(self.data_dir / f"server-{time.monotonic_ns()}.log", "wb")  # noqa: SIM115 - child owns it
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "api.app:create_app",
                "--factory",
                "--port",
                str(self.port),
                "--workers",
                "1",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{self.url}/health", timeout=1)  # noqa: S310 - loopback
                self.up.set()
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError(f"replica {self.index} did not come up")

    def kill(self) -> None:
        self.up.clear()
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # the group we started: server and flusher
        self.process.wait()

    def stop(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=60)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # a flusher still finishing: same group
        self.process.wait()


@contextmanager
def anchor_serve(args: list[str], env: dict[str, str], log: Path) -> Iterator[str]:
    """`anchor serve ARGS --port P` as a user types it (not a bare uvicorn), in a process group of its
    own, its output in `log`; yields its URL once it accepts connections, stops the group at the end."""
    import socket

    from tests.cli import ANCHOR_BIN

    port = free_port()
    with log.open("wb") as out:
        server = subprocess.Popen(
            [str(ANCHOR_BIN), "serve", *args, "--port", str(port)],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, log.read_text()
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # the group we started
        server.wait(timeout=60)
