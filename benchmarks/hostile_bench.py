"""Hostile clients against the service, with FastAPI's default behaviour as the peer.

1. An unauthenticated 60 MiB JSON write: time until the 401 and the server's added memory (VmRSS and
   VmHWM of the serving process before and after), ours vs a bare FastAPI route whose token check is a
   dependency (FastAPI parses the body first). Targets: <= 50 ms, <= 10 MB added.
2. `/health` latency while 8 clients send this issue's hostile requests in a loop, vs `/health` on
   the same server at rest. Target: p99 <= 20 ms under attack.

3. `--bundle-page`: a legitimate 200,000-file bundle anchored through the API, then
   `/health` latency at rest and while 6 clients load its explorer page (pages of the listing in
   turn), and each page load's time. Target: /health p99 <= 50 ms while they do. Raw samples in
   benchmarks/results/hostile_bundle_page.json.

4. `--slow-connections`: `anchor serve` itself (its connection cap and deadlines, not a
   proxy's) while 20,000 connections are opened by two processes, half of them sending half their
   headers, half full headers and a promised body they never send; `/health` latency and failures
   meanwhile. Target: /health still answers.

5. `--proof-flood`: 90 clients, each from a loopback address of its own, send 13 MiB
   hostile proofs (200,000 Merkle siblings) to the public `/v1/verify/proof` in a loop, while an
   honest client checks a real anchored proof there. Targets: honest p99 <= 1 s; the server's
   resident memory <= 500 MB.

One uvicorn process per server (1 worker), so its /proc entry is the one serving. Raw samples are
written to benchmarks/results/hostile_bench.json.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the hostile corpus is shared with the test suite
from benchmarks.deployed import deployed_chain, free_port, service_env  # noqa: E402
from tests.hostile_archives import HOSTILE, directory_flood, header_bomb  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
TOKEN = "bench-token"
BIG = 60 << 20
ROUNDS = 15
ATTACK_S = 10.0


def serve(target: str, port: int, env: dict[str, str], factory: bool) -> subprocess.Popen[bytes]:
    argv = [
        sys.executable,
        "-m",
        "uvicorn",
        target,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        "1",
        "--log-level",
        "critical",
    ]
    if factory:
        argv.append("--factory")
    server = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return server
        time.sleep(0.1)
    raise RuntimeError(f"{target} did not come up")


def memory_kib(pid: int) -> tuple[int, int]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])


def exchange(port: int, head: bytes, body: bytes, body_sent: int | None = None) -> tuple[int, float]:
    """Send `head` and (the first `body_sent` bytes of) `body` from a thread; return (status, seconds
    from the first byte sent to the status line received)."""
    with socket.create_connection(("127.0.0.1", port), timeout=120) as conn:
        payload = body if body_sent is None else memoryview(body)[:body_sent]

        def send() -> None:
            with contextlib.suppress(OSError):
                conn.sendall(head)  # two sends, no 60 MB concatenation holding this process's GIL
                conn.sendall(payload)

        start = time.perf_counter()
        threading.Thread(target=send, daemon=True).start()
        data = b""
        while b"\r\n" not in data:
            try:
                chunk = conn.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
        elapsed = time.perf_counter() - start
    return int(data.split(b" ", 2)[1]) if data else 0, elapsed


def post_head(path: str, length: int | None, content_type: str, auth: bool = False, chunked: bool = False) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close", f"Content-Type: {content_type}"]
    lines.append("Transfer-Encoding: chunked" if chunked else f"Content-Length: {length}")
    if auth:
        lines.append(f"Authorization: Bearer {TOKEN}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def multipart(field: str, data: bytes) -> tuple[bytes, str]:
    boundary = "benchboundary"
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="x"\r\n\r\n'.encode()
        + data
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return body, f"multipart/form-data; boundary={boundary}"


def big_unauthenticated(port: int, pid: int, path: str, samples: list[dict[str, float]]) -> None:
    body = b"[" + b"0," * (BIG // 2 - 1) + b"0]"
    head = post_head(path, len(body), "application/json")
    for _ in range(ROUNDS):
        rss0, _ = memory_kib(pid)
        status, seconds = exchange(port, head, body)
        rss1, hwm = memory_kib(pid)
        samples.append(
            {"status": status, "seconds": seconds, "rss_before_kib": rss0, "rss_after_kib": rss1, "hwm_kib": hwm}
        )


def hostile_requests() -> list[tuple[bytes, bytes]]:
    deep = b"[" * 100_000 + b"]" * 100_000
    proof_body, proof_type = multipart("proof", deep)
    siblings = json.dumps(
        {"format": "anchor/proof", "version": 1, "manifest": {}, "batch": {"proof": ["0x" + "44" * 32] * 900_000}}
    ).encode()
    sib_body, sib_type = multipart("proof", siblings)
    dirs_body, dirs_type = multipart("archive", directory_flood(30_000))
    bomb_body, bomb_type = multipart("archive", header_bomb())
    lone = b'{"manifest": {}, "annotations": {"x": "\\ud800"}}'
    chunk = b"x" * (1 << 20)
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(70)) + b"0\r\n\r\n"
    return [
        (post_head("/v1/verify/proof", len(proof_body), proof_type), proof_body),
        (post_head("/v1/manifests", len(deep), "application/json"), deep),
        (post_head("/v1/manifests", len(deep), "application/json", auth=True), deep),
        (post_head("/v1/verify/proof", len(sib_body), sib_type), sib_body),
        (post_head("/v1/bundles", len(dirs_body), dirs_type, auth=True), dirs_body),
        (post_head("/v1/bundles", len(bomb_body), bomb_type, auth=True), bomb_body),
        (post_head("/v1/manifests", len(lone), "application/json", auth=True), lone),
        (post_head("/v1/verify/proof", None, "multipart/form-data; boundary=b", chunked=True), chunked),
    ]


def health_latencies(port: int, seconds: float) -> list[float]:
    head = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    out, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        out.append(exchange(port, head, b"")[1])
        time.sleep(0.01)
    return out


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def decoder_times() -> dict[str, float]:
    """Seconds to decode (or refuse) each hostile archive of the corpus and the big ones here, default
    limits, in this process: the time per input the test suite's fuzzing does not assert."""
    from anchor.errors import BadInput
    from anchor.ingest.archive import decode_archive
    from anchor.proof.file import parse_proof

    inputs = {name: make() for name, make in HOSTILE.items()}
    inputs["tar.bz2: 30,000 directories"] = directory_flood(30_000)
    inputs["tar.bz2: 1 GiB name header"] = header_bomb()
    times = {}
    for name, data in inputs.items():
        start = time.perf_counter()
        with contextlib.suppress(BadInput):
            decode_archive(data)
        times[name] = time.perf_counter() - start
    for name, raw in {
        "proof: [ x 100,000": b"[" * 100_000 + b"]" * 100_000,
        "proof: 900,000 siblings": json.dumps(
            {"format": "anchor/proof", "version": 1, "batch": {"proof": ["0x" + "44" * 32] * 900_000}}
        ).encode(),
    }.items():
        start = time.perf_counter()
        with contextlib.suppress(BadInput):
            parse_proof(raw, "bench")
        times[name] = time.perf_counter() - start
    return times


def main() -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    decoding = decoder_times()
    with tempfile.TemporaryDirectory() as tmp, deployed_chain(Path(tmp)) as settings:
        servers: list[subprocess.Popen[bytes]] = []
        try:
            env = service_env(settings, TOKEN, ANCHOR_API_MAX_REQUEST_BYTES=str(64 << 20), ANCHOR_API_FLUSH="0")
            ours_port, bare_port = free_port(), free_port()
            servers.append(serve("api.app:create_app", ours_port, env, factory=True))
            servers.append(serve("benchmarks.bare_app:app", bare_port, env, factory=False))
            ours_big: list[dict[str, float]] = []
            bare_big: list[dict[str, float]] = []
            big_unauthenticated(ours_port, servers[0].pid, "/v1/manifests", ours_big)
            big_unauthenticated(bare_port, servers[1].pid, "/v1/manifests", bare_big)
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as prober:
                quiet = prober.submit(health_latencies, ours_port, 3.0).result()
            attacks = hostile_requests()
            stop = threading.Event()
            counts = [0] * 8

            def attacker(k: int) -> None:
                while not stop.is_set():
                    head, body = attacks[(k + counts[k]) % len(attacks)]
                    exchange(ours_port, head, body)
                    counts[k] += 1

            threads = [threading.Thread(target=attacker, args=(k,), daemon=True) for k in range(8)]
            for thread in threads:
                thread.start()
            # the prober is a process of its own: the attackers' threads must not delay its measurements
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as prober:
                loaded = prober.submit(health_latencies, ours_port, ATTACK_S).result()
            stop.set()
            for thread in threads:
                thread.join(timeout=120)
            alive = servers[0].poll() is None
        finally:
            for server in servers:
                server.terminate()
                server.wait()
    (RESULTS / "hostile_bench.json").write_text(
        json.dumps(
            {
                "ours_unauthenticated_60mib": ours_big,
                "bare_unauthenticated_60mib": bare_big,
                "health_quiet_s": quiet,
                "health_under_attack_s": loaded,
                "attacks_sent": sum(counts),
                "decode_s": decoding,
            },
            indent=1,
        )
    )

    def summary(samples: list[dict[str, float]]) -> tuple[float, float, float]:
        ms = [s["seconds"] * 1000 for s in samples]
        added = max(s["hwm_kib"] for s in samples) - samples[0]["rss_before_kib"]
        return statistics.median(ms), p(ms, 0.95), added / 1024

    o_med, o_p95, o_mem = summary(ours_big)
    b_med, b_p95, b_mem = summary(bare_big)
    print(f"unauthenticated 60 MiB JSON write, {ROUNDS} rounds, uvicorn 1 worker, {os.cpu_count()} cores")
    print(
        f"  ours      401 in median {o_med:8.1f} ms, p95 {o_p95:8.1f} ms; peak memory added {o_mem:7.1f} MB"
        f"   (target <= 50 ms, <= 10 MB); statuses {sorted({s['status'] for s in ours_big})}"
    )
    print(f"  bare app  401 in median {b_med:8.1f} ms, p95 {b_p95:8.1f} ms; peak memory added {b_mem:7.1f} MB")
    print(f"  ratio bare/ours time {b_med / o_med:8.1f}x")
    print(f"/health while 8 clients send hostile requests ({sum(counts)} sent in {ATTACK_S:g} s)")
    print(
        f"  at rest       p50 {p(quiet, 0.5) * 1000:6.2f} ms  p99 {p(quiet, 0.99) * 1000:6.2f} ms"
        f"  ({len(quiet)} samples)"
    )
    print(
        f"  under attack  p50 {p(loaded, 0.5) * 1000:6.2f} ms  p99 {p(loaded, 0.99) * 1000:6.2f} ms"
        f"  ({len(loaded)} samples; target p99 <= 20 ms); server still up: {alive}"
    )
    slowest = sorted(decoding.items(), key=lambda kv: -kv[1])[:3]
    print(
        f"decoding {len(decoding)} hostile inputs (default limits): max {slowest[0][1] * 1000:.0f} ms per input;"
        f" slowest: " + ", ".join(f"{name} {seconds * 1000:.0f} ms" for name, seconds in slowest)
    )
    print(f"raw samples: {RESULTS / 'hostile_bench.json'}")


BUNDLE_FILES = 200_000
PAGE_CLIENTS = 6


def bundle_listing(count: int) -> tuple[dict[str, object], list[dict[str, object]]]:
    """A legitimate listing of `count` files (random contents' digests) and its identity."""
    from anchor.manifest.filetree import FileTreeManifest

    rows = [
        {
            "path": f"shards/{n // 1000:03d}/part-{n:06d}.bin",
            "size": 4096 + n,
            "blake3": hashlib.blake2s(n.to_bytes(4, "big")).hexdigest(),
        }
        for n in range(count)
    ]
    tree = FileTreeManifest.from_files_json(rows)
    return tree.identity(), tree.files_json()


def page_loads(port: int, digest: str, first_page: int, stop_at: float) -> list[float]:
    """(In a client thread.) Load the bundle's pages in turn until `stop_at`; each load's seconds."""
    import http.client

    out, page_number = [], first_page
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    while time.monotonic() < stop_at:
        start = time.perf_counter()
        conn.request("GET", f"/explorer/bundle/{digest}?page={page_number}")
        answer = conn.getresponse()
        answer.read()
        out.append(time.perf_counter() - start)
        if answer.status != 200:
            raise RuntimeError(f"page {page_number}: HTTP {answer.status}")
        page_number = page_number % (BUNDLE_FILES // 500) + 1
    return out


def bundle_page() -> None:
    import http.client

    RESULTS.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, deployed_chain(Path(tmp)) as settings:
        server = None
        try:
            env = service_env(settings, TOKEN, ANCHOR_API_MAX_REQUEST_BYTES=str(64 << 20), ANCHOR_CONFIRMATIONS="0")
            port = free_port()
            server = serve("api.app:create_app", port, env, factory=True)
            identity, files = bundle_listing(BUNDLE_FILES)
            body = json.dumps({"manifest": identity, "files": files}).encode()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            conn.request(
                "POST", "/v1/manifests", body, {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
            )
            answer = conn.getresponse()
            submitted = json.loads(answer.read())
            if answer.status != 202:
                raise RuntimeError(f"the bundle was refused: {submitted}")
            digest = submitted["manifest_digest"]
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                conn.request("GET", f"/v1/verify/{digest}")
                answer = conn.getresponse()
                if answer.status == 200 and json.loads(answer.read()).get("verified"):
                    break
                answer.read()
                time.sleep(0.5)
            else:
                raise RuntimeError("the bundle was not anchored within 10 minutes")
            start = time.perf_counter()
            conn.request("GET", f"/explorer/bundle/{digest}")
            answer = conn.getresponse()
            first_page = answer.read()
            first_view = time.perf_counter() - start
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as prober:
                quiet = prober.submit(health_latencies, port, 3.0).result()
                stop_at = time.monotonic() + ATTACK_S + 1.0
                loads: list[list[float]] = [[] for _ in range(PAGE_CLIENTS)]

                def client(k: int) -> None:
                    loads[k] = page_loads(port, digest, 1 + 37 * k, stop_at)

                threads = [threading.Thread(target=client, args=(k,)) for k in range(PAGE_CLIENTS)]
                for thread in threads:
                    thread.start()
                loaded = prober.submit(health_latencies, port, ATTACK_S).result()
                for thread in threads:
                    thread.join(timeout=300)
            rss = memory_kib(server.pid)
        finally:
            if server is not None:
                server.terminate()
                server.wait()
    every = [s for part in loads for s in part]
    (RESULTS / "hostile_bundle_page.json").write_text(
        json.dumps(
            {
                "files": BUNDLE_FILES,
                "first_view_s": first_view,
                "first_page_bytes": len(first_page),
                "page_load_s": every,
                "health_quiet_s": quiet,
                "health_loaded_s": loaded,
                "server_kib": rss,
            },
            indent=1,
        )
    )
    print(f"explorer page of a {BUNDLE_FILES:,}-file bundle, uvicorn 1 worker, {os.cpu_count()} cores")
    print(f"  first view (listing built, verdict read): {first_view:.2f} s, {len(first_page) / 1024:.0f} KiB")
    print(
        f"  {PAGE_CLIENTS} clients loading pages for {ATTACK_S:g} s: {len(every)} loads, p50"
        f" {p(every, 0.5) * 1000:.1f} ms, p99 {p(every, 0.99) * 1000:.1f} ms"
    )
    print(f"  /health at rest  p50 {p(quiet, 0.5) * 1000:6.2f} ms  p99 {p(quiet, 0.99) * 1000:6.2f} ms")
    print(
        f"  /health loaded   p50 {p(loaded, 0.5) * 1000:6.2f} ms  p99 {p(loaded, 0.99) * 1000:6.2f} ms"
        f" (target p99 <= 50 ms: {'met' if p(loaded, 0.99) <= 0.05 else 'NOT met'})"
    )
    print(f"  server RSS after: {rss[0] / 1024:.0f} MB (peak {rss[1] / 1024:.0f} MB)")


SLOW_CONNECTIONS = 20_000


def hold_slow(port: int, count: int, seconds: float) -> tuple[int, int]:
    """(In a process of its own.) Open `count` connections, alternately half a request's headers and
    full headers with a body promised and never sent, and keep them `seconds`: (opened, refused)."""
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (resource.getrlimit(resource.RLIMIT_NOFILE)[1],) * 2)
    held, refused = [], 0
    head = b"POST /v1/verify/proof HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
    for n in range(count):
        try:
            conn = socket.create_connection(("127.0.0.1", port), timeout=5)
            conn.sendall(head if n % 2 else head + b"Content-Length: 100000\r\n\r\n--b\r\n")
            held.append(conn)
        except OSError:
            refused += 1
    time.sleep(seconds)
    for conn in held:
        conn.close()
    return len(held), refused


def health_answers(port: int, seconds: float) -> tuple[list[float], int]:
    """(latencies of the /health calls that answered 200, how many did not), for `seconds`."""
    import http.client

    out, failed, deadline = [], 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        start = time.perf_counter()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", "/health")
            ok = conn.getresponse().status == 200
            conn.close()
        except OSError:
            ok = False
        if ok:
            out.append(time.perf_counter() - start)
        else:
            failed += 1
        time.sleep(0.05)
    return out, failed


def slow_connections() -> None:
    from tests.api_server import wait_for_health

    with tempfile.TemporaryDirectory() as tmp, deployed_chain(Path(tmp)) as settings:
        port = free_port()
        env = service_env(settings, TOKEN, ANCHOR_API_FLUSH="0")
        server = subprocess.Popen(
            [str(Path(sys.executable).with_name("anchor")), "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            wait_for_health(f"http://127.0.0.1:{port}")
            quiet, _ = health_answers(port, 3.0)
            hold_s = 40.0
            with ProcessPoolExecutor(3, mp_context=multiprocessing.get_context("spawn")) as pool:
                holders = [pool.submit(hold_slow, port, SLOW_CONNECTIONS // 2, hold_s) for _ in range(2)]
                time.sleep(5.0)  # the flood is being opened
                loaded, failed = pool.submit(health_answers, port, 30.0).result()
                opened = [h.result() for h in holders]
            alive = server.poll() is None
        finally:
            os.killpg(server.pid, 15)  # the group we started
            server.wait(timeout=120)
    (RESULTS / "hostile_slow_connections.json").write_text(
        json.dumps(
            {
                "connections": SLOW_CONNECTIONS,
                "opened_refused": opened,
                "health_quiet_s": quiet,
                "health_loaded_s": loaded,
                "health_failed": failed,
            },
            indent=1,
        )
    )
    print(f"anchor serve (1 worker, connection cap and deadlines at their defaults), {os.cpu_count()} cores")
    print(
        f"  {SLOW_CONNECTIONS:,} slow connections tried by 2 processes: opened {sum(o for o, _ in opened):,},"
        f" refused or reset at once {sum(r for _, r in opened):,}"
    )
    print(f"  /health at rest  p50 {p(quiet, 0.5) * 1000:6.2f} ms  p99 {p(quiet, 0.99) * 1000:6.2f} ms")
    print(
        f"  /health during   {len(loaded)} answered, {failed} failed; p50 {p(loaded, 0.5) * 1000:6.2f} ms,"
        f" p99 {p(loaded, 0.99) * 1000:6.2f} ms (target: it answers); server still up: {alive}"
    )


FLOOD_CLIENTS = 90


def flood_post(port: int, source: str, head: bytes, body: bytes, stop: threading.Event, seen: list[int]) -> None:
    """(A hostile client.) POST the same body from `source` until told to stop; counts the statuses."""
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=120, source_address=(source, 0)) as conn:
                conn.sendall(head)
                conn.sendall(body)
                status = conn.recv(64).split(b" ", 2)[1]
                seen.append(int(status))
        except (OSError, IndexError, ValueError):
            seen.append(0)


def proof_flood() -> None:
    import http.client

    with tempfile.TemporaryDirectory() as tmp, deployed_chain(Path(tmp)) as settings:
        port = free_port()
        env = service_env(settings, TOKEN, ANCHOR_CONFIRMATIONS="0")
        server = serve("api.app:create_app", port, env, factory=True)
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            identity = {
                "kind": "filetree",
                "version": 1,
                "files_root": os.urandom(32).hex(),
                "file_count": 1,
                "total_size": 1,
            }
            conn.request(
                "POST",
                "/v1/manifests",
                json.dumps({"manifest": identity}),
                {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"},
            )
            digest = json.loads(conn.getresponse().read())["manifest_digest"]
            deadline = time.monotonic() + 120
            while True:
                conn.request("GET", f"/v1/proofs/{digest}")
                answer = conn.getresponse()
                honest_proof = answer.read()
                if answer.status == 200:
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError("the honest proof was not anchored")
                time.sleep(0.2)
            siblings = {
                "format": "anchor/proof",
                "version": 1,
                "manifest": {},
                "batch": {"proof": ["0x" + "44" * 32] * 200_000},
            }
            hostile, hostile_type = multipart("proof", json.dumps(siblings).encode())
            head = post_head("/v1/verify/proof", len(hostile), hostile_type)
            honest, honest_type = multipart("proof", honest_proof)

            def honest_check() -> float:
                one = http.client.HTTPConnection("127.0.0.1", port, timeout=120, source_address=("127.0.0.250", 0))
                start = time.perf_counter()
                one.request("POST", "/v1/verify/proof", honest, {"Content-Type": honest_type})
                answer = one.getresponse()
                body = json.loads(answer.read())
                one.close()
                if answer.status != 200 or not body.get("verified"):
                    raise RuntimeError(f"the honest proof did not verify: {answer.status} {body}")
                return time.perf_counter() - start

            quiet = [honest_check() for _ in range(20)]
            stop, seen = threading.Event(), []  # type: ignore[var-annotated]
            flood = [
                threading.Thread(
                    target=flood_post, args=(port, f"127.0.1.{k + 1}", head, hostile, stop, seen), daemon=True
                )
                for k in range(FLOOD_CLIENTS)
            ]
            peak = [0]

            def sample_memory() -> None:
                while not stop.is_set():
                    peak[0] = max(peak[0], memory_kib(server.pid)[0])
                    time.sleep(0.1)

            sampler = threading.Thread(target=sample_memory, daemon=True)
            for thread in [*flood, sampler]:
                thread.start()
            time.sleep(2.0)  # the flood is under way
            loaded, until = [], time.monotonic() + ATTACK_S
            while time.monotonic() < until:
                loaded.append(honest_check())
            stop.set()
            for thread in flood:
                thread.join(timeout=120)
            alive = server.poll() is None
        finally:
            server.terminate()
            server.wait()
    statuses = {code: seen.count(code) for code in sorted(set(seen))}
    (RESULTS / "hostile_proof_flood.json").write_text(
        json.dumps(
            {
                "clients": FLOOD_CLIENTS,
                "hostile_bytes": len(hostile),
                "statuses": statuses,
                "honest_quiet_s": quiet,
                "honest_loaded_s": loaded,
                "server_peak_rss_kib": peak[0],
            },
            indent=1,
        )
    )
    print(
        f"{FLOOD_CLIENTS} clients sending {len(hostile) / 2**20:.1f} MiB hostile proofs to /v1/verify/proof,"
        f" uvicorn 1 worker, {os.cpu_count()} cores; their answers: {statuses}"
    )
    print(f"  honest proof at rest      p50 {p(quiet, 0.5) * 1000:7.1f} ms  p99 {p(quiet, 0.99) * 1000:7.1f} ms")
    print(
        f"  honest proof under flood  p50 {p(loaded, 0.5) * 1000:7.1f} ms  p99 {p(loaded, 0.99) * 1000:7.1f} ms"
        f" ({len(loaded)} checks; target p99 <= 1 s: {'met' if p(loaded, 0.99) <= 1 else 'NOT met'})"
    )
    held = "met" if peak[0] <= 500 * 1024 else "NOT met"
    print(f"  server peak RSS {peak[0] / 1024:.0f} MB (target <= 500 MB: {held}); still up: {alive}")


if __name__ == "__main__":
    if "--proof-flood" in sys.argv[1:]:
        proof_flood()
    elif "--bundle-page" in sys.argv[1:]:
        bundle_page()
    elif "--slow-connections" in sys.argv[1:]:
        slow_connections()
    else:
        main()
