"""Research reads on a 20,000-attempt ledger, with `/health` on the same server as
the peer and the uncached read (verify the hash chain, read the rows: what every request did before)
measured in the same run.

Prints p50/p95 of `GET /v1/research/r0/attempts?limit=1` after the first read, the first read itself,
`/health`, and the uncached cost per request; raw samples in benchmarks/results/research_reads.json.
Target: p95 <= 20 ms after the first read.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from anchor.manifest.canonical import canonical_json
from anchor.research.ledger import GENESIS, Ledger, entry_digest
from anchor.research.searches import remember_search

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ATTEMPTS = 20_000
ROUNDS = 200


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_ledger(path: Path, attempts: int) -> None:
    """A valid hash chain of `attempts` started/outcome pairs, written at once (no fsync per row)."""
    prev, seq, lines = GENESIS, 0, []
    for n in range(attempts):
        commit = f"{n:040x}"
        for fields in (
            {"event": "started", "commit": commit, "researcher": "r0", "started_at": "2026-12-01T00:00:00+00:00"},
            {
                "commit": commit,
                "parent": "0" * 40,
                "researcher": "r0",
                "status": "completed",
                "kept": n == 0,
                "attempt_digest": "ab" * 32,
                "diff_blake3": "cd" * 32,
                "contract_digest": "ef" * 32,
                "metric": {"name": "score", "value": str(n), "mode": "max"},
            },
        ):
            entry = {**fields, "seq": seq, "prev": prev}
            entry["digest"] = entry_digest(entry)
            lines.append(canonical_json(entry))
            prev, seq = entry["digest"], seq + 1
    path.write_bytes(b"\n".join(lines) + b"\n")


def get(url: str) -> float:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as answer:  # noqa: S310 - loopback
        answer.read()
    return time.perf_counter() - start


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1e3


def main() -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        workdir = data / "research"
        workdir.mkdir(parents=True)
        write_ledger(workdir / "ledger.jsonl", ATTEMPTS)
        remember_search(data, workdir)
        ledger = Ledger(workdir / "ledger.jsonl")
        uncached = []
        for _ in range(5):
            start = time.perf_counter()
            ledger.verify()
            ledger.rows()
            uncached.append(time.perf_counter() - start)
        port = free_port()
        env = {**os.environ, "ANCHOR_DATA_DIR": str(data), "ANCHOR_LOCAL_PORT": str(free_port())}
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
                "critical",
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                with contextlib.suppress(OSError):
                    get(f"{url}/health")
                    break
                time.sleep(0.1)
            page = f"{url}/v1/research/r0/attempts?limit=1"
            first = get(page)
            reads = [get(page) for _ in range(ROUNDS)]
            health = [get(f"{url}/health") for _ in range(ROUNDS)]
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(server.pid, signal.SIGTERM)
            server.wait()
    print(f"ledger: {ATTEMPTS:,} attempts ({2 * ATTEMPTS:,} rows)")
    print(
        f"uncached read (verify the chain + read the rows), what each request did before:"
        f" median {statistics.median(uncached) * 1e3:.0f} ms"
    )
    print(
        f"GET /v1/research/r0/attempts?limit=1: first {first * 1e3:.0f} ms; then p50 {pct(reads, 0.5):.1f} ms,"
        f" p95 {pct(reads, 0.95):.1f} ms (target p95 <= 20 ms: {'met' if pct(reads, 0.95) <= 20 else 'NOT met'})"
    )
    print(
        f"/health on the same server: p50 {pct(health, 0.5):.1f} ms, p95 {pct(health, 0.95):.1f} ms;"
        f" ratio p95 read/health {pct(reads, 0.95) / pct(health, 0.95):.1f}x"
    )
    (RESULTS / "research_reads.json").write_text(
        json.dumps(
            {
                "attempts": ATTEMPTS,
                "uncached_s": uncached,
                "first_s": first,
                "reads_s": reads,
                "health_s": health,
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
