"""verify-by-digest on a warm cache against a bare `async def` FastAPI route, served the same way
(uvicorn, 2 workers, uvloop + httptools) on this machine, each loaded by wrk with 32 connections.

Targets (issue 6): >= 50% of the bare route's requests per second, p99 under 10 ms.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from anchor.anchoring import anchor_path
from anchor.chain.compiler import compile_registry
from anchor.chain.deployment import deploy
from anchor.chain.keys import load_signer
from anchor.chain.node import LocalChain
from anchor.session import Settings, open_chain

ROOT = Path(__file__).resolve().parents[1]
DURATION = "10s"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve(target: str, port: int, env: dict[str, str], factory: bool) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "uvicorn", target, "--host", "127.0.0.1", "--port", str(port), "--workers", "2",
            "--loop", "uvloop", "--http", "httptools", "--log-level", "warning"]  # fmt: skip
    if factory:
        argv.append("--factory")
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def warm(url: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            for _ in range(20):  # reach both workers, fill their caches
                with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - loopback
                    assert response.status == 200
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


def load(url: str) -> tuple[float, float]:
    out = subprocess.run(
        ["wrk", "-t2", "-c32", f"-d{DURATION}", "--latency", url], capture_output=True, text=True, check=True
    )
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out.stdout).group(1))  # type: ignore[union-attr]
    value, unit = re.search(r"99%\s+([\d.]+)(us|ms|s)", out.stdout).groups()  # type: ignore[union-attr]
    p99_ms = float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
    return rps, p99_ms


def main() -> None:
    if shutil.which("wrk") is None:
        sys.exit("wrk is missing: `make bench` installs it (apt-get install wrk)")
    with tempfile.TemporaryDirectory() as tmp:
        data, chain_port = Path(tmp), free_port()
        settings = Settings(data_dir=data, local_port=chain_port)
        node = LocalChain(data, chain_port)
        node.up()
        servers = []
        try:
            handle = open_chain(settings, start_local=False)
            deploy(handle.w3, handle.chain_id, load_signer(handle.chain_id), compile_registry(data / "build"), data)
            (data / "bundle").mkdir()
            (data / "bundle" / "metrics.json").write_text('{"acc": 0.9}')
            digest = anchor_path(data / "bundle", settings, data / "bundle.anchor.json").proof.manifest_digest
            env = {**os.environ, "ANCHOR_DATA_DIR": str(data), "ANCHOR_LOCAL_PORT": str(chain_port)}
            ours_port, bare_port = free_port(), free_port()
            servers.append(serve("api.app:create_app", ours_port, env, factory=True))
            servers.append(serve("benchmarks.bare_app:app", bare_port, env, factory=False))
            ours_url = f"http://127.0.0.1:{ours_port}/v1/verify/{digest}"
            bare_url = f"http://127.0.0.1:{bare_port}/v1/verify/{digest}"
            warm(ours_url)
            warm(bare_url)
            bare_rps, bare_p99 = load(bare_url)
            ours_rps, ours_p99 = load(ours_url)
        finally:
            for server in servers:
                server.terminate()
                server.wait()
            node.down()
    print(f"wrk -t2 -c32 -d{DURATION}, uvicorn 2 workers, uvloop + httptools, {os.cpu_count()} cores")
    print(f"bare async route      {bare_rps:9.0f} req/s   p99 {bare_p99:6.2f} ms")
    print(f"verify-by-digest      {ours_rps:9.0f} req/s   p99 {ours_p99:6.2f} ms")
    print(f"ratio ours/bare       {ours_rps / bare_rps:9.2f}x        (target >= 0.50, p99 < 10 ms)")


if __name__ == "__main__":
    main()
