"""The journal on SQLite against the journal on PostgreSQL, and one `anchor serve` against three, in
one run on this machine.

1. State transitions, each one durable journal transaction, timed one by one: a submission (the
   duplicate checks and the insert) and an effect-style state update. Submissions/s and p50/p99
   latency per backend. Target: PostgreSQL p99 transition <= 5 ms.
2. End to end over HTTP: N replicas (separate data directories, one PostgreSQL journal, one anvil),
   fresh manifests posted by wrk (one per replica, the connections split between them, a Lua script
   making every body unique) for a fixed time; HTTP submissions/s and p99, and anchored items/s from
   the first submission to the last item confirmed. Target: 3 replicas >= 2x
   one replica's HTTP submissions/s, or this run shows where the bottleneck is (the CPU busy share
   of the machine during the run is printed beside it).

3. Growth (`--growth 10000,100000,1000000`): one data dir per backend filled to each size through the
   service (10,000 submissions journaled, then flushed in batches of `--batch` on anvil, the proof
   store kept, and again; PostgreSQL's autovacuum on, as a server runs by default), then
   at each size: bytes on disk per item (the journal's file or PostgreSQL relations, the proof store),
   `anchor journal status` end to end, a submission's p50, and `GET /v1/proofs/{digest}` and
   `GET /v1/verify/{digest}` p50 on one `anchor serve` (random confirmed items). Targets:
   status <= 0.3 s at 1M, the rest flat, <= 500 bytes an item.

The PostgreSQL server is the tests' (tests/postgres.py: initdb in a temporary directory, Unix socket,
stopped by its PID). Raw samples: benchmarks/results/journal_bench.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from anchor.journal.backends import open_journal  # noqa: E402
from anchor.journal.submit import Submission, submit  # noqa: E402
from tests.api_server import Replica  # noqa: E402
from tests.postgres import fresh_database, postgres_server  # noqa: E402

TOKEN = "journal-bench-token"


def _identity(i: int) -> dict[str, Any]:
    return {"kind": "filetree", "version": 1, "files_root": os.urandom(32).hex(), "file_count": 1, "total_size": i}


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def transitions(url: str | None, n: int, workdir: Path) -> dict[str, Any]:
    journal = open_journal(workdir, url)
    submits: list[float] = []
    for i in range(n):
        sub = Submission(_identity(i), {})
        started = time.perf_counter()
        submit(journal, 31337, sub)
        submits.append((time.perf_counter() - started) * 1000)
    ids = [row[0] for row in journal.db.execute("SELECT id FROM items ORDER BY id").fetchall()]
    updates: list[float] = []
    for item_id in ids:
        started = time.perf_counter()
        with journal.tx() as db:
            db.execute("UPDATE items SET state = 'batched' WHERE id = ?", (item_id,))
        updates.append((time.perf_counter() - started) * 1000)
    journal.close()
    return {"submit_ms": submits, "update_ms": updates}


WRK_SCRIPT = """
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
end
function init(args)
  math.randomseed(tonumber(args[1]) * 1000 + id)
end
function request()
  local hex = {}
  for i = 1, 8 do hex[i] = string.format("%08x", math.random(0, 0x7fffffff)) end
  local body = '{"manifest":{"kind":"filetree","version":1,"files_root":"' .. table.concat(hex)
    .. '","file_count":1,"total_size":1}}'
  return wrk.format("POST", "/v1/manifests",
    {["Content-Type"] = "application/json", ["Authorization"] = "Bearer TOKEN"}, body)
end
"""


def _wrk(url: str, connections: int, seconds: int, seed: int, script: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            "wrk",
            "-t",
            "1",
            "-c",
            str(connections),
            "-d",
            f"{seconds}s",
            "--latency",
            "-s",
            str(script),
            url,
            "--",
            str(seed),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _wrk_figures(output: str) -> dict[str, float]:
    rate = re.search(r"Requests/sec:\s+([\d.]+)", output)
    p99 = re.search(r"99%\s+([\d.]+)(us|ms|s)", output)
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}
    return {
        "per_s": float(rate.group(1)) if rate else 0.0,
        "p99_ms": float(p99.group(1)) * scale[p99.group(2)] if p99 else float("nan"),
        "non_2xx": float(bad.group(1)) if bad else 0.0,
    }


def _cpu_busy() -> tuple[int, int]:
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def _cpu_by_role(replicas: list[Replica]) -> dict[str, float]:
    """CPU seconds so far of each kind of process on the machine: the replicas' servers, their
    flushers (same process group, other PIDs), PostgreSQL and anvil; where the cores went."""
    ticks = os.sysconf("SC_CLK_TCK")
    groups = {r.process.pid for r in replicas if r.process is not None}
    out = {"servers": 0.0, "flushers": 0.0, "postgres": 0.0, "anvil": 0.0}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        comm = text[text.index("(") + 1 : text.rindex(")")]
        fields = text[text.rindex(")") + 2 :].split()
        pid, pgrp, cpu = int(stat.parent.name), int(fields[2]), (int(fields[11]) + int(fields[12])) / ticks
        if pgrp in groups:
            out["servers" if pid == pgrp else "flushers"] += cpu
        elif comm.startswith("postgres"):
            out["postgres"] += cpu
        elif comm == "anvil":
            out["anvil"] += cpu
    return out


class LockSampler(threading.Thread):
    """Every 100 ms: how many database sessions wait for the journal's writer lock (an advisory lock)
    and how many are running a statement. Sessions queueing on the lock while cores sit idle is a
    serialized writer, not a CPU limit."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.samples, self.stop = url, [], threading.Event()

    def run(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self.stop.wait(0.1):
                waiting, active = conn.execute(
                    "SELECT count(*) FILTER (WHERE wait_event = 'advisory'), count(*) FILTER (WHERE state = 'active')"
                    " FROM pg_stat_activity WHERE pid != pg_backend_pid()"
                ).fetchone()
                self.samples.append((int(waiting), int(active)))


def end_to_end(replicas: int, seconds: int, connections: int, server_url: str, workdir: Path) -> dict[str, Any]:
    """`connections` kept-alive connections in all, spread over the replicas (one wrk each), for
    `seconds`; then the time until every accepted item is confirmed."""
    from anchor.chain.compiler import compile_registry
    from anchor.chain.deployment import deploy
    from anchor.chain.keys import load_signer
    from anchor.chain.node import LocalChain
    from anchor.chain.open import open_chain
    from anchor.settings.session import Settings
    from tests.conftest import free_port

    base = workdir / f"e2e-{replicas}"
    chain_dir = base / "chain"
    node = LocalChain(chain_dir, port=free_port())
    node.up()
    started_replicas: list[Replica] = []
    script = base / "submit.lua"
    script.write_text(WRK_SCRIPT.replace("TOKEN", TOKEN))
    try:
        handle = open_chain(Settings(data_dir=chain_dir, local_port=node.port))
        compiled = compile_registry(chain_dir / "build")
        deploy(handle.w3, handle.chain_id, load_signer(handle.chain_id), compiled, chain_dir)
        url = fresh_database(server_url, "bench_" + uuid.uuid4().hex[:12])
        for index in range(replicas):
            data_dir = base / f"replica-{index}"
            shutil.copytree(chain_dir / "deployments", data_dir / "deployments")
            env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
            env.update(
                ANCHOR_DATA_DIR=str(data_dir),
                ANCHOR_RPC_URL=node.rpc_url,
                ANCHOR_JOURNAL_URL=url,
                ANCHOR_API_TOKENS="sha256:" + hashlib.sha256(TOKEN.encode()).hexdigest(),
            )
            replica = Replica(index, data_dir, env)
            replica.start()
            started_replicas.append(replica)
        journal = open_journal(base, url)
        for replica in started_replicas:  # warm: each replica's flusher started and through one flush
            request = urllib.request.Request(
                f"{replica.url}/v1/manifests",
                json.dumps({"manifest": _identity(replica.index)}).encode(),
                {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"},
            )
            urllib.request.urlopen(request, timeout=60).close()  # noqa: S310 - loopback
        while journal.db.execute("SELECT count(*) FROM items WHERE state != 'confirmed'").fetchone()[0]:
            time.sleep(0.05)
        before = journal.db.execute("SELECT count(*) FROM items").fetchone()[0]
        roots_before = journal.db.execute("SELECT count(*) FROM effects WHERE kind = 'root'").fetchone()[0]
        busy0, total0 = _cpu_busy()
        roles0 = _cpu_by_role(started_replicas)
        sampler = LockSampler(url)
        sampler.start()
        began = time.perf_counter()
        loads = [
            _wrk(r.url, max(1, connections // replicas), seconds, 1000 * r.index + random.randrange(999), script)
            for r in started_replicas
        ]
        outputs = [load.communicate(timeout=seconds + 120)[0] for load in loads]
        busy1, total1 = _cpu_busy()
        roles = {k: v - roles0[k] for k, v in _cpu_by_role(started_replicas).items()}
        sampler.stop.set()
        sampler.join()
        items = journal.db.execute("SELECT count(*) FROM items").fetchone()[0] - before
        while journal.db.execute("SELECT count(*) FROM items WHERE state != 'confirmed'").fetchone()[0]:
            time.sleep(0.05)
            if time.perf_counter() - began > 900:
                raise SystemExit("not every item was anchored within 900 s")
        anchored_s = time.perf_counter() - began
        roots = journal.db.execute("SELECT count(*) FROM effects WHERE kind = 'root'").fetchone()[0] - roots_before
        journal.close()
        figures = [_wrk_figures(out) for out in outputs]
        return {
            "replicas": replicas,
            "items": items,
            "http_submissions_per_s": sum(f["per_s"] for f in figures),
            "anchored_items_per_s": items / anchored_s,
            "roots": roots,
            "p99_ms": max(f["p99_ms"] for f in figures),
            "non_2xx": sum(f["non_2xx"] for f in figures),
            "cpu_busy": (busy1 - busy0) / max(1, total1 - total0),
            "cpu_seconds": {
                **roles,
                "machine": (busy1 - busy0) / os.sysconf("SC_CLK_TCK"),
                "available": (total1 - total0) / os.sysconf("SC_CLK_TCK"),
            },
            "lock_waiting_mean": statistics.fmean(w for w, _ in sampler.samples) if sampler.samples else 0.0,
            "sessions_active_mean": statistics.fmean(a for _, a in sampler.samples) if sampler.samples else 0.0,
            "wrk": outputs,
        }
    finally:
        for replica in started_replicas:
            replica.stop()
        node.down()


def _disk(path: Path) -> int:
    """Bytes on disk under `path` (allocated blocks, as du counts them)."""
    if path.is_file():
        return path.stat().st_blocks * 512
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file()) if path.exists() else 0


def _journal_bytes(data: Path, url: str | None) -> int:
    if url is None:
        return sum(_disk(data / name) for name in ("journal.sqlite", "journal.sqlite-wal"))
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'anchor_journal' AND c.relkind = 'r'"
        ).fetchone()
    return int(row[0]) if row else 0


def _get_ms(url: str, n: int) -> float:
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        with urllib.request.urlopen(url, timeout=60) as answer:  # noqa: S310 - loopback
            answer.read()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples)


ROUND = 10_000


def growth(sizes: list[int], url: str | None, batch: int, workdir: Path) -> list[dict[str, Any]]:
    """Fill one data dir to each of `sizes` through the service, ROUND submissions then their flush at a
    time (PostgreSQL's autovacuum as configured: on, its defaults), and measure it there."""
    from dataclasses import replace

    from anchor.anchoring.service import AnchorService
    from benchmarks.deployed import deployed_chain

    rows = []
    with deployed_chain(workdir / "data") as base:
        settings = replace(base, journal_url=url)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
        env.update(
            ANCHOR_DATA_DIR=str(settings.data_dir),
            ANCHOR_LOCAL_PORT=str(settings.local_port),
            ANCHOR_API_FLUSH_INTERVAL_S="3600",
            **({"ANCHOR_JOURNAL_URL": url} if url else {}),
        )
        service = AnchorService.open(settings)
        made = 0
        try:
            for size in sizes:
                submitted_s = flushed_s = 0.0
                while made < size:  # in rounds, as a service runs: submissions, then their flush
                    started = time.perf_counter()
                    for _ in range(min(ROUND, size - made) // 1000 or 1):
                        chunk = min(1000, size - made)
                        service.submit([Submission(_identity(made + i), {}) for i in range(chunk)])
                        made += chunk
                    submitted_s += time.perf_counter() - started
                    started = time.perf_counter()
                    service.flush(max_items=batch)
                    flushed_s += time.perf_counter() - started
                one = []
                for i in range(100):  # a submission's latency at this size (flushed with the next size)
                    began = time.perf_counter()
                    service.submit([Submission(_identity(10**9 + made + i), {})])
                    one.append((time.perf_counter() - began) * 1000)
                service.flush(max_items=batch)
                made += 100
                picked = [
                    bytes(r[0])
                    for r in service.journal.db.execute(
                        "SELECT digest FROM items WHERE id IN ("
                        + ",".join(str(random.randint(1, made)) for _ in range(20))
                        + ")"
                    ).fetchall()
                ]
                status = []
                for _ in range(5):
                    began = time.perf_counter()
                    subprocess.run(
                        [sys.executable, "-m", "anchor", "journal", "status"], env=env, check=True, capture_output=True
                    )
                    status.append(time.perf_counter() - began)
                store = _disk(settings.layout.batches) + _disk(settings.layout.proofs)
                journal = _journal_bytes(settings.data_dir, url)
                replica = Replica(0, settings.data_dir, env)
                replica.start()
                try:
                    proofs = statistics.median(_get_ms(f"{replica.url}/v1/proofs/0x{d.hex()}", 3) for d in picked)
                    verify = statistics.median(_get_ms(f"{replica.url}/v1/verify/0x{d.hex()}", 3) for d in picked)
                finally:
                    replica.stop()
                rows.append(
                    {
                        "backend": "sqlite" if url is None else "postgresql",
                        "items": made,
                        "journal_bytes": journal,
                        "store_bytes": store,
                        "bytes_per_item": (journal + store) / made,
                        "status_s": statistics.median(status),
                        "submit_p50_ms": statistics.median(one),
                        "get_proof_ms": proofs,
                        "get_verify_ms": verify,
                        "fill_s": {"submit": submitted_s, "flush": flushed_s},
                    }
                )
                r = rows[-1]
                print(
                    f"{r['backend']:<11} {made:>9} {r['bytes_per_item']:>9.0f} ({journal / made:.0f} + "
                    f"{store / made:.0f}) {r['status_s']:>8.3f} {r['submit_p50_ms']:>9.2f} {proofs:>9.2f}"
                    f" {verify:>9.2f}   filled in {submitted_s:.0f} s + {flushed_s:.0f} s",
                    flush=True,
                )
        finally:
            service.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transitions", type=int, default=2000, help="journal transactions per backend and kind")
    parser.add_argument("--seconds", type=int, default=10, help="seconds of HTTP load per end-to-end run")
    parser.add_argument("--connections", type=int, default=24, help="kept-alive connections in all")
    parser.add_argument("--runs", type=int, default=2, help="end-to-end runs per replica count")
    parser.add_argument("--growth", help="only the growth section, at these sizes (e.g. 10000,100000,1000000)")
    parser.add_argument("--batch", type=int, default=4096, help="items per batch in the growth section")
    parser.add_argument("--backends", default="sqlite,postgresql", help="the growth section's backends")
    args = parser.parse_args()
    if args.growth:
        sizes = [int(n) for n in args.growth.split(",")]
        print(f"growth: batches of {args.batch}; bytes on disk per item = (journal + proof store) / items")
        print(
            f"{'backend':<11} {'items':>9} {'B/item':>9} {'':>12} {'status s':>8} {'submit ms':>9}"
            f" {'proof ms':>9} {'verify ms':>9}"
        )
        found: list[dict[str, Any]] = []
        with tempfile.TemporaryDirectory(prefix="journal-growth-") as tmp, postgres_server() as server_url:
            for backend in args.backends.split(","):
                url = None if backend == "sqlite" else fresh_database(server_url, "growth_" + uuid.uuid4().hex[:12])
                found += growth(sizes, url, args.batch, Path(tmp) / backend)
        results = Path(__file__).parent / "results"
        results.mkdir(exist_ok=True)
        (results / "journal_growth.json").write_text(json.dumps(found, indent=1))
        return
    random.seed(0)
    raw: dict[str, Any] = {"transitions": {}, "end_to_end": []}
    with tempfile.TemporaryDirectory(prefix="journal-bench-") as tmp, postgres_server() as server_url:
        workdir = Path(tmp)
        print(f"state transitions, {args.transitions} each, one durable transaction each")
        print(f"{'backend':<11} {'kind':<7} {'per s':>8} {'p50 ms':>8} {'p99 ms':>8}")
        for backend in ("sqlite", "postgresql"):
            url = None if backend == "sqlite" else fresh_database(server_url, "tx_" + uuid.uuid4().hex[:12])
            (workdir / backend).mkdir()
            samples = transitions(url, args.transitions, workdir / backend)
            raw["transitions"][backend] = samples
            for kind in ("submit", "update"):
                ms = samples[f"{kind}_ms"]
                print(
                    f"{backend:<11} {kind:<7} {1000 * len(ms) / sum(ms):>8.0f} {statistics.median(ms):>8.2f}"
                    f" {_percentile(ms, 0.99):>8.2f}"
                )
        pg99 = _percentile(raw["transitions"]["postgresql"]["update_ms"], 0.99)
        print(f"PostgreSQL p99 transition {pg99:.2f} ms (target <= 5 ms): {'met' if pg99 <= 5 else 'NOT met'}")
        print(
            f"\nend to end over HTTP: wrk, {args.connections} connections over the replicas, {args.seconds} s,"
            f" {args.runs} runs per replica count"
        )
        print(
            f"{'replicas':>8} {'items':>6} {'HTTP subs/s':>12} {'anchored/s':>11} {'roots':>6} {'p99 ms':>8}"
            f" {'non-2xx':>8} {'CPU busy':>9}"
        )
        best: dict[int, float] = {}
        for run in range(args.runs):
            for replicas in (1, 3):
                result = end_to_end(replicas, args.seconds, args.connections, server_url, workdir / f"run{run}")
                raw["end_to_end"].append(result)
                best[replicas] = max(best.get(replicas, 0.0), result["http_submissions_per_s"])
                print(
                    f"{replicas:>8} {result['items']:>6} {result['http_submissions_per_s']:>12.0f}"
                    f" {result['anchored_items_per_s']:>11.0f} {result['roots']:>6} {result['p99_ms']:>8.1f}"
                    f" {result['non_2xx']:>8.0f} {result['cpu_busy']:>8.0%}"
                )
                cpu = result["cpu_seconds"]
                print(f"{'':>8} CPU s during the load: " + ", ".join(f"{k} {v:.1f}" for k, v in cpu.items()))
                print(
                    f"{'':>8} sessions waiting for the writer lock: {result['lock_waiting_mean']:.1f} on average,"
                    f" of {result['sessions_active_mean']:.1f} active"
                )
        ratio = best[3] / best[1]
        print(f"3 replicas / 1 replica, HTTP submissions/s (best of {args.runs}): {ratio:.2f}x (target >= 2x)")
    results = Path(__file__).parent / "results"
    results.mkdir(exist_ok=True)
    (results / "journal_bench.json").write_text(json.dumps(raw))
    print(f"raw samples: {results / 'journal_bench.json'}")


if __name__ == "__main__":
    main()
