"""Stamping through a service (docs/calendar.md) against the same work with a local key, in
the same run, on one local chain.

1. stamp → pending receipt: 16 concurrent clients (4 processes × 4 threads), each `submit_to` a
   service (one identity POSTed, the receipt's signature recovered and compared with /v1/service):
   p50/p95 per stamp, hashing excluded. Peer: `anchor_manifest` with the local key (journal, flush,
   receipt, proof file) for the same kind of item, one at a time (each is its own transaction).
   Target: p95 <= 50 ms.
2. Sustained submissions: 16 clients (wrk connections, benchmarks/wrk/submit.lua: a new identity
   each request) POST /v1/manifests for 10 s (no client-side checks: the service's rate), then the
   flusher anchors the backlog in batches; gas per item from the journal. Target: >= 1,000
   submissions/s.
3. pending → complete: one stamp, then `upgrade` polled every 50 ms; the wait printed next to the
   flush interval (ANCHOR_API_FLUSH_INTERVAL_S).
4. Gas per item at the batch size the service reaches under ~1,000 submissions/s (64 wrk connections,
   each waiting PACE_MS before each request: benchmarks/wrk/submit_paced.lua). Target: <= 50.
5. Beside a bare signing route (benchmarks/bare_app.py `/v1/calendar-peer`: the token, the body parsed,
   the identity validated and its digest computed as ours, the same EIP-712 receipt signed by
   libsecp256k1; nothing journaled), both one uvicorn worker without access log, at 1, 16 and 64
   connections, alternating. Targets: >= 0.5x at 1, >= 0.8x at 16 and 64, >= 2,000/s at 64.
   And beside the durable floor (`/v1/calendar-durable`: the same bare route, and each receipt committed
   to SQLite as the journal commits, WAL and synchronous=FULL, one transaction per batch of waiting
   requests): what a service that answers after its receipt is on disk cannot beat. Target: >= 0.8x at
   1, 16 and 64.

Raw samples: benchmarks/results/calendar_bench.json. This machine has 2 cores shared by the server,
its flusher, anvil and the clients: the figures are what they are here, said as they came.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import multiprocessing
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

from anchor.settings.session import Settings

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # benchmarks.deployed, shared with hostile_bench
from benchmarks.deployed import deployed_chain, free_port, service_env  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
TOKEN = "bench-token"
CLIENTS, PROCESSES = 16, 4
STAMPS_PER_CLIENT = 25
SUSTAIN_S = 10.0
FLUSH_INTERVAL_S = 1.0
WRK_SCRIPT = Path(__file__).resolve().parent / "wrk" / "submit.lua"
PACE_CONNECTIONS, PACE_MS = 64, 54  # each connection waits 54 ms before each request: ~1,000 submissions/s
COMPARE_S = 5.0
COMPARE_CONNECTIONS = (1, 16, 64)


def identity(n: int, salt: str) -> dict[str, object]:
    root = hashlib.sha256(f"{salt}:{n}".encode()).hexdigest()
    return {"kind": "filetree", "version": 1, "files_root": root, "file_count": 1, "total_size": n}


def stamp_latencies(url: str, first: int, threads: int, count: int) -> list[float]:
    """(In a client process.) `threads` clients, each `count` stamps through `submit_to`."""
    os.environ["ANCHOR_SERVICE_TOKEN"] = TOKEN
    from anchor.anchoring.client import Service, submit_to

    service = Service(url, TOKEN)
    submit_to(service, identity(first - 1, "warm"))  # /v1/service read once, connection opened

    def client(k: int) -> list[float]:
        out = []
        for i in range(count):
            start = time.perf_counter()
            submit_to(service, identity(first + k * count + i, "latency"))
            out.append(time.perf_counter() - start)
        return out

    with ThreadPoolExecutor(threads) as pool:
        return [s for part in pool.map(client, range(threads)) for s in part]


def sustained(
    url: str, seconds: float, connections: int = CLIENTS, route: str = "/v1/manifests", pace_ms: int | None = None
) -> tuple[int, int, str]:
    """POST a new identity as fast as the service answers, from CLIENTS connections for `seconds`:
    wrk (benchmarks/wrk/submit.lua), so the load generator takes a few percent of a core and the
    figure is the service's, not the clients' (16 Python clients took as much CPU as the service).
    (202s, others, wrk's latency lines)."""
    import re
    import shutil

    wrk = shutil.which("wrk")
    if wrk is None:
        raise SystemExit("wrk is not installed: `make bench` installs it (apt-get install wrk)")
    script = WRK_SCRIPT if pace_ms is None else WRK_SCRIPT.with_name("submit_paced.lua")
    argv = [
        wrk,
        f"-t{min(2, connections)}",
        f"-c{connections}",
        f"-d{seconds:.0f}s",
        "--latency",
        "-s",
        str(script),
        url,
        "--",
        TOKEN,
        str(time.time_ns() // 1_000_000),
        route,
    ]
    env = {**os.environ, "PACE_MS": str(pace_ms or 0)}
    out = subprocess.run(argv, capture_output=True, text=True, check=True, cwd=ROOT, env=env).stdout
    total = int(re.search(r"(\d+) requests in", out).group(1))  # type: ignore[union-attr]
    others = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    refused = int(others.group(1)) if others else 0
    latency = "\n".join(line for line in out.splitlines() if re.match(r"\s+(50|90|99)%", line))
    return total - refused, refused, latency


def local_key_latencies(settings: Settings, count: int) -> list[float]:
    """The peer: the same item anchored with the local key (journal, flush, proof), one at a time."""
    from anchor.anchoring.stamp import anchor_manifest

    out = []
    with tempfile.TemporaryDirectory() as proofs:
        for i in range(count):
            start = time.perf_counter()
            anchor_manifest(identity(i, "local"), None, settings, Path(proofs) / f"{i}.anchor.json")
            out.append(time.perf_counter() - start)
    return out


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def serve(port: int, env: dict[str, str], app: str = "api.app:create_app") -> subprocess.Popen[bytes]:
    """One uvicorn worker, no access log (as `anchor serve` runs by default), in a process group of its own."""
    factory = ["--factory"] if app.endswith("create_app") else []
    argv = [
        sys.executable,
        "-m",
        "uvicorn",
        app,
        *factory,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        "--log-level",
        "critical",
        "--no-access-log",
    ]
    server = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return server
        time.sleep(0.1)
    raise RuntimeError("the service did not come up")


def group_cpu_s(group: int) -> tuple[float, float]:
    """(CPU seconds of the server process, of the rest of its group: the flusher and the decoder),
    user + system: what the service spent, apart from the clients and the chain."""
    ticks = os.sysconf("SC_CLK_TCK")
    server = rest = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[2]) == group:  # pgrp
                used = int(fields[11]) + int(fields[12])  # utime, stime
                if int(stat.parent.name) == group:
                    server += used
                else:
                    rest += used
    return server / ticks, rest / ticks


def wait_anchored(data: Path, bound_s: float = 300) -> None:
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        with contextlib.closing(sqlite3.connect(data / "journal.sqlite")) as db:
            if db.execute("SELECT count(*) FROM items WHERE state != 'confirmed'").fetchone()[0] == 0:
                return
        time.sleep(0.5)


def last_effect(data: Path) -> int:
    with contextlib.closing(sqlite3.connect(data / "journal.sqlite")) as db:
        return int(db.execute("SELECT coalesce(max(id), 0) FROM effects").fetchone()[0])


def gas_per_item(data: Path, after_effect: int = 0) -> tuple[int, int, float]:
    """(root transactions, items, gas per item) of the batches made after effect `after_effect`."""
    db = sqlite3.connect(data / "journal.sqlite")
    effects, gas = db.execute(
        "SELECT count(*), coalesce(sum(gas_used), 0) FROM effects WHERE kind = 'root' AND state = 'confirmed'"
        " AND id > ?",
        (after_effect,),
    ).fetchone()
    items = db.execute(
        "SELECT count(*) FROM items WHERE state = 'confirmed' AND effect_id > ?", (after_effect,)
    ).fetchone()[0]
    db.close()
    return int(effects), int(items), (gas / items if items else float("nan"))


def main() -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    spawn = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp, deployed_chain(Path(tmp) / "service") as settings:
        data, chain_port = settings.data_dir, int(settings.local_port or 0)
        local = Path(tmp) / "local"
        server = bare_server = None
        try:
            local.mkdir()
            (local / "deployments").mkdir()
            for record in (data / "deployments").iterdir():
                (local / "deployments" / record.name).write_bytes(record.read_bytes())
            env = service_env(
                settings,
                TOKEN,
                ANCHOR_API_FLUSH_INTERVAL_S=str(FLUSH_INTERVAL_S),
                ANCHOR_CONFIRMATIONS="0",
                ANCHOR_CALENDAR="1",
                ANCHOR_CALENDAR_RATE="1000000",
                ANCHOR_CALENDAR_BURST="1000000",
                ANCHOR_CALENDAR_QUEUE="100000000",
            )
            # the public calendar on too, its per-client limits lifted: one wrk address is every client here
            port = free_port()
            server = serve(port, env)
            url = f"http://127.0.0.1:{port}"

            per = CLIENTS // PROCESSES
            with ProcessPoolExecutor(PROCESSES, mp_context=spawn) as pool:
                parts = [
                    pool.submit(stamp_latencies, url, 10_000 * (p + 1), per, STAMPS_PER_CLIENT)
                    for p in range(PROCESSES)
                ]
                stamps = [s for part in parts for s in part.result()]
            rpc = f"http://127.0.0.1:{chain_port}"  # the same chain, reached as any client reaches it
            peer = local_key_latencies(Settings(data_dir=local, rpc_url=rpc), 30)

            server_before, rest_before = group_cpu_s(server.pid)
            accepted, refused, latency = sustained(url, SUSTAIN_S)
            server_after, rest_after = group_cpu_s(server.pid)
            server_cpu, rest_cpu = server_after - server_before, rest_after - rest_before
            cpu_used = server_cpu + rest_cpu

            os.environ["ANCHOR_SERVICE_TOKEN"] = TOKEN
            from anchor.anchoring.client import Service, stamp_through, upgrade

            wait_anchored(data)  # the backlog anchored before timing one stamp's wait on its own
            effects, items, gas = gas_per_item(data)
            proof = Path(tmp) / "one.anchor.json"
            client_settings = Settings(data_dir=Path(tmp) / "client", rpc_url=rpc)
            stamped = time.perf_counter()
            stamp_through(identity(1, "wait"), None, [Service(url, TOKEN)], proof)
            while not upgrade(proof, client_settings).complete:
                time.sleep(0.05)
            wait = time.perf_counter() - stamped

            # gas per item at the batch size the service reaches under ~1,000 submissions/s
            before = last_effect(data)
            paced, paced_refused, _ = sustained(url, SUSTAIN_S, PACE_CONNECTIONS, pace_ms=PACE_MS)
            wait_anchored(data)
            paced_effects, paced_items, paced_gas = gas_per_item(data, before)

            # beside a bare signing route (benchmarks/bare_app.py), at 1, 16 and 64 connections, alternating
            peer_port = free_port()
            bare_env = {**env, "BENCH_DURABLE_DB": str(Path(tmp) / "durable-floor.sqlite")}
            bare_server = serve(peer_port, bare_env, "benchmarks.bare_app:app")
            peer_url = f"http://127.0.0.1:{peer_port}"
            compared = []
            calendar_rates: list[tuple[int, float, int]] = []
            durable_rates: list[tuple[int, float, int]] = []
            for connections in COMPARE_CONNECTIONS:
                ours = sustained(url, COMPARE_S, connections)
                bare = sustained(peer_url, COMPARE_S, connections, route="/v1/calendar-peer")
                durable = sustained(peer_url, COMPARE_S, connections, route="/v1/calendar-durable")
                durable_rates.append((connections, durable[0] / COMPARE_S, durable[1]))
                public = sustained(url, COMPARE_S, connections, route="/v1/calendar")
                compared.append((connections, ours[0] / COMPARE_S, bare[0] / COMPARE_S, ours[1] + bare[1]))
                calendar_rates.append((connections, public[0] / COMPARE_S, public[1]))
                wait_anchored(data)
        finally:
            for started in (server, bare_server):
                if started is not None:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(started.pid, 15)  # the groups we started: a server (and its flusher)
                    started.wait()

    p50, p95 = percentile(stamps, 0.5) * 1e3, percentile(stamps, 0.95) * 1e3
    l50, l95 = percentile(peer, 0.5) * 1e3, percentile(peer, 0.95) * 1e3
    rate = accepted / SUSTAIN_S
    print(
        f"stamp -> pending receipt, {CLIENTS} concurrent clients, {len(stamps)} stamps:"
        f" p50 {p50:.1f} ms, p95 {p95:.1f} ms (target p95 <= 50 ms: {'met' if p95 <= 50 else 'NOT met'})"
    )
    print(
        f"  peer, the local key (journal + flush + proof, one transaction each): p50 {l50:.1f} ms,"
        f" p95 {l95:.1f} ms; ratio p95 local/service {l95 / p95:.1f}x"
    )
    print(
        f"sustained: {accepted} submissions accepted in {SUSTAIN_S:.0f} s by {CLIENTS} clients = {rate:.0f}/s"
        f" ({refused} not 202; target >= 1,000/s: {'met' if rate >= 1000 else 'NOT met'})"
    )
    print("  latency under that load (wrk):\n" + latency)
    print(
        f"  the service's CPU (server, flusher, decoder) in those {SUSTAIN_S:.0f} s: {cpu_used:.1f} s ="
        f" {cpu_used / max(accepted, 1) * 1e3:.2f} ms per submission (the ceiling on one core:"
        f" {max(accepted, 1) / max(cpu_used, 1e-9):.0f}/s; {os.cpu_count()} cores here,"
        f" shared with wrk and anvil)"
    )
    print(
        f"    of which the server process {server_cpu / max(accepted, 1) * 1e3:.2f} ms, the flusher and decoder"
        f" {rest_cpu / max(accepted, 1) * 1e3:.2f} ms per submission"
    )
    print(f"anchored: {items} items in {effects} transactions, {gas:,.0f} gas per item")
    print(f"pending -> complete: {wait:.2f} s after the stamp (flush interval {FLUSH_INTERVAL_S:.1f} s)")
    print(
        f"paced, {PACE_CONNECTIONS} connections waiting {PACE_MS} ms before each request:"
        f" {paced / SUSTAIN_S:.0f} submissions/s accepted"
        f" ({paced_refused} not 202), anchored in {paced_effects} transactions, {paced_gas:,.1f} gas per item"
        f" (target <= 50: {'met' if paced_gas <= 50 else 'NOT met'})"
    )
    print(
        f"beside a bare signing route (token, parse, identity, digest, EIP-712 receipt by libsecp256k1;"
        f" no journal), {COMPARE_S:.0f} s each:"
    )
    print(f"{'connections':>11} {'ours /s':>8} {'bare /s':>8} {'ratio':>6} {'target':>7}")
    for connections, ours_rate, bare_rate, others in compared:
        target = 0.5 if connections == 1 else 0.8
        ratio = ours_rate / max(bare_rate, 1e-9)
        print(
            f"{connections:>11} {ours_rate:>8.0f} {bare_rate:>8.0f} {ratio:>5.2f}x {target:>6.1f}x"
            f" {'met' if ratio >= target else 'NOT met'}{f'  ({others} not 202)' if others else ''}"
        )
    for connections, public_rate, others in calendar_rates:
        bare_rate = next(b for c, _, b, _ in compared if c == connections)
        refused = f"  ({others} not 202)" if others else ""
        print(
            f"{connections:>11} {public_rate:>8.0f} {bare_rate:>8.0f} {public_rate / max(bare_rate, 1e-9):>5.2f}x"
            f"         POST /v1/calendar (no token; per-client limits lifted){refused}"
        )
    print("beside the durable floor (the bare route, and each receipt committed to SQLite as the journal commits):")
    print(f"{'connections':>11} {'ours /s':>8} {'floor /s':>8} {'ratio':>6} {'target':>7}")
    for connections, floor_rate, others in durable_rates:
        ours_rate = next(o for c, o, _, _ in compared if c == connections)
        ratio = ours_rate / max(floor_rate, 1e-9)
        refused = f"  ({others} not 202)" if others else ""
        print(
            f"{connections:>11} {ours_rate:>8.0f} {floor_rate:>8.0f} {ratio:>5.2f}x {0.8:>6.1f}x"
            f" {'met' if ratio >= 0.8 else 'NOT met'}{refused}"
        )
    at64 = next(o for c, o, _, _ in compared if c == 64)
    print(f"at 64 connections: {at64:.0f} receipts/s (target >= 2,000: {'met' if at64 >= 2000 else 'NOT met'})")
    (RESULTS / "calendar_bench.json").write_text(
        json.dumps(
            {
                "stamp_seconds": stamps,
                "local_key_seconds": peer,
                "sustained": {
                    "accepted": accepted,
                    "refused": refused,
                    "seconds": SUSTAIN_S,
                    "service_cpu_s": cpu_used,
                    "server_cpu_s": server_cpu,
                    "flusher_decoder_cpu_s": rest_cpu,
                },
                "gas": {"effects": effects, "items": items, "per_item": gas},
                "pending_to_complete_s": wait,
                "flush_interval_s": FLUSH_INTERVAL_S,
                "cores": os.cpu_count(),
                "paced": {
                    "accepted": paced,
                    "refused": paced_refused,
                    "effects": paced_effects,
                    "items": paced_items,
                    "gas_per_item": paced_gas,
                    "pace_ms": PACE_MS,
                },
                "beside_bare": [
                    {"connections": c, "ours_per_s": o, "bare_per_s": b, "not_202": n} for c, o, b, n in compared
                ],
                "public_calendar": [{"connections": c, "per_s": r, "not_202": n} for c, r, n in calendar_rates],
                "durable_floor": [{"connections": c, "per_s": r, "not_202": n} for c, r, n in durable_rates],
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
