"""A soak run of the anchoring service under mixed faults, then the exactly-once check.

For `--minutes` (10 by default; hours on a larger machine) one `anchor serve` app (uvicorn, one worker,
its flusher) on a SQLite journal takes steady submissions over HTTP while, on a schedule:
- its whole process group is SIGKILLed and restarted (`--kill-every`, default 45 s): the recovery time
  is from the restart to the first item confirmed after it (the first new anchor);
- its RPC endpoint, a fault proxy in front of anvil, answers 503 to everything for 4 s
  (`--rpc-fault-every`, default 40 s);
- its data dir, a tmpfs of its own (64 MiB and 16 KiB per expected submission), is filled to the last
  byte for 4 s (`--disk-full-every`, default 55 s; root only, as mounting is: without root the
  episodes are skipped and said to be).
Clients retry a submission until it is accepted (idempotent: the same manifest, the same key).
Every second it samples the service's resident memory and open descriptors (its whole process
group), the journal's size, its write-ahead log's, and what the data dir's filesystem holds (the
journal keeps a proof file per item, so that one grows with the items, by design). At the end the
load stops, faults are lifted, the backlog drains, and every accepted digest must be confirmed in
exactly one batch whose root is on chain exactly once, with no root the journal does not explain
(tests/journal_helpers.py).

Prints the counts, the resource curves' start, peak and end, and recovery p50/p95; writes the raw
samples (benchmarks/results/soak.json, or under `--out`) and the curves as a PNG (soak.png).
Exit 0 when nothing was lost or duplicated, 1 otherwise. No timing is asserted anywhere.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import signal
import socket
import sqlite3
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.deployed import deployed_chain, free_port, service_env  # noqa: E402
from tests.faults.rpc_proxy import FaultyProxy  # noqa: E402
from tests.journal_helpers import assert_exactly_once  # noqa: E402

TOKEN = "soak-token"  # noqa: S105 - a benchmark's own service token
TMPFS_BYTES = 64 * 1024 * 1024
"""The data dir's filesystem, plus PER_ITEM_BYTES for each submission the run expects: the journal
keeps a proof file per item (a page of the tmpfs each), so a fixed size fills up of itself in a long
run, and the disk-full episodes would no longer be the only ones."""
PER_ITEM_BYTES = 16 * 1024
EPISODE_S = 4.0


class Service:
    """The service under test, in a process group of its own; only that group is ever signalled."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env, self.port = env, free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.up = threading.Event()

    def start(self) -> float:
        """Start it; returns the monotonic time it was spawned."""
        argv = [
            sys.executable,
            "-m",
            "uvicorn",
            "api.app:create_app",
            "--factory",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--workers",
            "1",
            "--log-level",
            "critical",
        ]
        spawned = time.monotonic()
        self.process = subprocess.Popen(
            argv, cwd=ROOT, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                self.up.set()
                return spawned
            time.sleep(0.05)
        raise RuntimeError("the service did not come up")

    def kill(self) -> None:
        self.up.clear()
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.up.clear()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.kill()

    def group(self) -> list[int]:
        """The pids of its process group (server, flusher, decoder)."""
        if self.process is None:
            return []
        pids = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            with contextlib.suppress(OSError, ValueError, IndexError):
                if int(stat.read_text().rsplit(")", 1)[1].split()[2]) == self.process.pid:
                    pids.append(int(stat.parent.name))
        return pids


def _identity(i: int) -> dict[str, Any]:
    return {"kind": "filetree", "version": 1, "files_root": f"{i:064x}", "file_count": 1, "total_size": i}


def _submit(url: str, i: int) -> tuple[int, str | None]:
    request = urllib.request.Request(
        f"{url}/v1/manifests",
        json.dumps({"manifest": _identity(i)}).encode(),
        {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}", "Idempotency-Key": f"soak-{i}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - loopback
            return answer.status, str(json.loads(answer.read())["manifest_digest"])
    except urllib.error.HTTPError as exc:
        return exc.code, None
    except (OSError, ValueError, http.client.HTTPException):  # IncompleteRead: killed while it answered
        return 0, None  # killed, refused, cut off: the same manifest again


def _confirmed(journal: Path) -> int:
    with contextlib.closing(sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=5)) as db:
        return int(db.execute("SELECT count(*) FROM items WHERE state = 'confirmed'").fetchone()[0])


def _open_items(journal: Path) -> int:
    with contextlib.closing(sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=5)) as db:
        return int(db.execute("SELECT count(*) FROM items WHERE state != 'confirmed'").fetchone()[0])


def _sample(service: Service, data: Path) -> dict[str, float]:
    rss = fds = 0
    for pid in service.group():
        with contextlib.suppress(OSError):
            status = Path(f"/proc/{pid}/status").read_text()
            rss += int(next(line for line in status.splitlines() if line.startswith("VmRSS:")).split()[1]) * 1024
            fds += len(os.listdir(f"/proc/{pid}/fd"))
    size = lambda p: p.stat().st_size if p.exists() else 0  # noqa: E731
    disk = os.statvfs(data)
    return {
        "rss_mb": rss / 2**20,
        "fds": fds,
        "wal_kb": size(data / "journal.sqlite-wal") / 1024,
        "journal_kb": size(data / "journal.sqlite") / 1024,
        "disk_mb": (disk.f_blocks - disk.f_bfree) * disk.f_frsize / 2**20,
    }


def _fill(mount: Path) -> Path:
    """Fill the tmpfs to its last byte with a ballast file; returns it (deleted to end the episode)."""
    ballast = mount / "ballast"
    fd = os.open(ballast, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (1 << 20, 1 << 12, 1):  # MiB steps, then the last pages, then the last bytes
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size):
                    pass
    finally:
        os.close(fd)
    return ballast


@contextlib.contextmanager
def _tmpfs(path: Path, wanted: bool, items: int) -> Iterator[tuple[Path, bool]]:
    """`path`, a tmpfs of its own sized for `items` submissions when `wanted` (root only), unmounted on
    the way out."""
    path.mkdir()
    if not wanted:
        yield path, False
        return
    size = TMPFS_BYTES + items * PER_ITEM_BYTES
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)], check=True)
    try:
        yield path, True
    finally:
        subprocess.run(["umount", str(path)], check=False)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def run(minutes: float, out: Path, rate: float, kill_every: float, rpc_every: float, disk_every: float) -> int:
    out.mkdir(parents=True, exist_ok=True)
    root = os.geteuid() == 0
    with (
        tempfile.TemporaryDirectory() as tmp,
        deployed_chain(Path(tmp) / "chain") as chain,
        _tmpfs(Path(tmp) / "service", root and disk_every > 0, int(rate * minutes * 60)) as (data, mounted),
    ):
        proxy = FaultyProxy(f"http://127.0.0.1:{chain.local_port}")
        (data / "deployments").mkdir()
        for record in (chain.data_dir / "deployments").iterdir():
            (data / "deployments" / record.name).write_bytes(record.read_bytes())
        env = service_env(
            chain,
            TOKEN,
            ANCHOR_DATA_DIR=str(data),
            ANCHOR_RPC_URL=proxy.url,
            ANCHOR_CONFIRMATIONS="0",
            ANCHOR_RPC_RETRIES="2",
            ANCHOR_RPC_BACKOFF_S="0.2",
        )
        service = Service(env)
        journal = data / "journal.sqlite"
        accepted: dict[int, str] = {}
        answers: dict[int, int] = {}
        lock = threading.Lock()
        stop = threading.Event()
        samples: list[dict[str, float]] = []
        events: list[dict[str, Any]] = []
        recoveries: list[float] = []
        started = time.monotonic()

        def load() -> None:
            """Submission i until accepted, then i + 1, at `rate` a second (one client: arrivals spread)."""
            i, pause = 0, 1.0 / rate
            while not stop.is_set():
                status, digest = _submit(service.url, i)
                with lock:
                    answers[status] = answers.get(status, 0) + 1
                    if status == 202 and digest is not None:
                        accepted[i] = digest
                if status == 202:
                    i += 1
                    time.sleep(pause)
                else:
                    time.sleep(0.2)  # a fault: back off a little, then the same submission again

        def sampler() -> None:
            while not stop.wait(1.0):
                samples.append({"t": round(time.monotonic() - started, 2), **_sample(service, data)})

        def recovery(spawned: float, before: int) -> None:
            while not stop.is_set() and time.monotonic() - spawned < 120:
                with contextlib.suppress(sqlite3.Error):
                    if _confirmed(journal) > before:
                        recoveries.append(time.monotonic() - spawned)
                        return
                time.sleep(0.05)

        service.start()
        threads = [threading.Thread(target=load, daemon=True), threading.Thread(target=sampler, daemon=True)]
        for thread in threads:
            thread.start()
        end = started + minutes * 60
        due = {
            "kill": started + kill_every,
            "rpc": started + rpc_every,
            "disk": started + disk_every if mounted else float("inf"),
        }
        try:
            while time.monotonic() < end:
                now = time.monotonic()
                kind = min(due, key=lambda k: due[k])
                if due[kind] > now:
                    time.sleep(min(0.2, due[kind] - now))
                    continue
                t = round(now - started, 2)
                if kind == "kill":
                    service.kill()
                    before = 0
                    with contextlib.suppress(sqlite3.Error):
                        before = _confirmed(journal)
                    spawned = service.start()
                    threading.Thread(target=recovery, args=(spawned, before), daemon=True).start()
                    events.append({"t": t, "kind": "kill"})
                    due["kill"] = now + kill_every
                elif kind == "rpc":
                    proxy.mode = "503"
                    time.sleep(EPISODE_S)
                    proxy.mode = "ok"
                    events.append({"t": t, "kind": "rpc_503", "seconds": EPISODE_S})
                    due["rpc"] = now + rpc_every
                else:
                    ballast = _fill(data)
                    time.sleep(EPISODE_S)
                    ballast.unlink()
                    events.append({"t": t, "kind": "disk_full", "seconds": EPISODE_S})
                    due["disk"] = now + disk_every
            stop.set()
            for thread in threads:
                thread.join(timeout=30)
            proxy.mode = "ok"
            drained_at = time.monotonic()
            while time.monotonic() - drained_at < 300:  # the backlog: every accepted item to its anchor
                with contextlib.suppress(sqlite3.Error):
                    if _open_items(journal) == 0:
                        break
                time.sleep(0.5)
            drain_s = time.monotonic() - drained_at
        finally:
            stop.set()
            service.stop()
        lost_or_duplicated = ""
        try:
            counts = assert_exactly_once(f"http://127.0.0.1:{chain.local_port}", data, len(accepted))
        except AssertionError as exc:
            counts, lost_or_duplicated = {}, str(exc)[:500]
        proxy.stop()

    summary = {
        "minutes": minutes,
        "submitted_per_s": rate,
        "accepted": len(accepted),
        "answers": answers,
        "anchored": counts.get("items"),
        "roots": counts.get("roots"),
        "failure": lost_or_duplicated or None,
        "kills": sum(e["kind"] == "kill" for e in events),
        "rpc_faults": sum(e["kind"] == "rpc_503" for e in events),
        "disk_full": sum(e["kind"] == "disk_full" for e in events),
        "disk_full_skipped": not mounted,
        "recovery_s": {
            "samples": [round(r, 3) for r in recoveries],
            "p50": _percentile(recoveries, 0.5),
            "p95": _percentile(recoveries, 0.95),
        },
        "drain_s": round(drain_s, 2),
    }
    (out / "soak.json").write_text(json.dumps({"summary": summary, "samples": samples, "events": events}, indent=1))
    plot(samples, events, out / "soak.png")
    _report(summary, samples, out)
    return 0 if not lost_or_duplicated else 1


def _report(summary: dict[str, Any], samples: list[dict[str, float]], out: Path) -> None:
    s = summary
    print(
        f"soak: {s['minutes']:g} min at {s['submitted_per_s']:g} submissions/s; {s['kills']} SIGKILLs,"
        f" {s['rpc_faults']} RPC 503 episodes, {s['disk_full']} disk-full episodes"
        + (" (skipped: not root)" if s["disk_full_skipped"] else "")
    )
    print(
        f"accepted {s['accepted']}, anchored {s['anchored']} in {s['roots']} roots:"
        + (" 0 lost, 0 duplicated" if not s["failure"] else f" FAILED: {s['failure']}")
    )
    print(f"answers by status: {json.dumps(s['answers'], sort_keys=True)}; backlog drained in {s['drain_s']} s")
    rec = s["recovery_s"]
    print(
        f"recovery (restart to first new anchor): p50 {rec['p50']:.2f} s, p95 {rec['p95']:.2f} s,"
        f" {len(rec['samples'])} of {s['kills']} kills measured"
    )
    for key, unit in (("rss_mb", "MB"), ("fds", ""), ("wal_kb", "KB"), ("journal_kb", "KB"), ("disk_mb", "MB")):
        values = [x[key] for x in samples if x[key]]
        if values:
            print(
                f"{key:>10}: start {values[0]:.1f}{unit}, peak {max(values):.1f}{unit}, end {values[-1]:.1f}{unit}"
                f" (median {statistics.median(values):.1f}{unit})"
            )
    print(f"raw samples: {out / 'soak.json'}; curves: {out / 'soak.png'}")


# ---------------------------------------------------------------------- a PNG without a plotting library

GLYPHS = {  # 3x5, rows top to bottom, bits left to right
    "0": "111101101101111",
    "1": "010110010010111",
    "2": "111001111100111",
    "3": "111001111001111",
    "4": "101101111001001",
    "5": "111100111001111",
    "6": "111100111101111",
    "7": "111001010010010",
    "8": "111101111101111",
    "9": "111101111001111",
    ".": "000000000000010",
    " ": "000000000000000",
    "A": "010101111101101",
    "B": "110101110101110",
    "D": "110101101101110",
    "F": "111100110100100",
    "J": "001001001101111",
    "K": "101101110101101",
    "L": "100100100100111",
    "M": "101111111101101",
    "N": "110101101101101",
    "O": "111101101101111",
    "R": "110101110101101",
    "S": "111100111001111",
    "U": "101101101101111",
    "W": "101101111111101",
    "X": "101101010101101",
    "/": "001001010100100",
    "P": "110101110100100",
    "E": "111100110100111",
    "T": "111010010010010",
    "I": "111010010010111",
    "C": "111100100100111",
    "H": "101101111101101",
    "G": "111100101101111",
    ":": "000010000010000",
}
PANELS = (
    ("rss_mb", "RSS MB"),
    ("fds", "FDS"),
    ("wal_kb", "WAL KB"),
    ("journal_kb", "JOURNAL KB"),
    ("disk_mb", "DATA DIR MB"),
)
COLORS = {"kill": (200, 30, 30), "rpc_503": (230, 140, 0), "disk_full": (30, 80, 200)}


def plot(samples: list[dict[str, float]], events: list[dict[str, Any]], path: Path) -> None:
    """Five panels (memory, descriptors, WAL, journal, the data dir's filesystem) over time; a vertical
    line per fault: red a SIGKILL, orange an RPC 503 episode, blue a full disk. Each panel is labelled
    with its peak."""
    width, panel, margin = 960, 150, 8
    height = panel * len(PANELS)
    pixels = bytearray(b"\xff" * (width * height * 3))

    def put(x: int, y: int, rgb: tuple[int, int, int]) -> None:
        if 0 <= x < width and 0 <= y < height:
            i = (y * width + x) * 3
            pixels[i : i + 3] = bytes(rgb)

    def text(x: int, y: int, words: str, scale: int = 2) -> None:
        for n, char in enumerate(words.upper()):
            bits = GLYPHS.get(char, GLYPHS[" "])
            for row in range(5):
                for col in range(3):
                    if bits[row * 3 + col] == "1":
                        for dy in range(scale):
                            for dx in range(scale):
                                put(x + n * 4 * scale + col * scale + dx, y + row * scale + dy, (0, 0, 0))

    span = max((s["t"] for s in samples), default=1.0) or 1.0
    for p, (key, label) in enumerate(PANELS):
        top, bottom = p * panel + margin + 14, (p + 1) * panel - margin
        for x in range(width):
            put(x, (p + 1) * panel - 1, (200, 200, 200))
        for event in events:
            ex = int(event["t"] / span * (width - 1))
            for y in range(top, bottom):
                put(ex, y, COLORS.get(event["kind"], (0, 0, 0)))
        values = [s[key] for s in samples]
        peak = max(values, default=0.0) or 1.0
        text(margin, p * panel + margin, f"{label} PEAK {peak:.1f}")
        last = None
        for s in samples:
            x = int(s["t"] / span * (width - 1))
            y = bottom - int(s[key] / peak * (bottom - top))
            if last is not None:  # a line from the last point (Bresenham)
                x0, y0 = last
                dx, dy = abs(x - x0), -abs(y - y0)
                sx, sy, err = (1 if x0 < x else -1), (1 if y0 < y else -1), dx + dy
                while True:
                    put(x0, y0, (0, 0, 0))
                    put(x0, y0 + 1, (0, 0, 0))
                    if (x0, y0) == (x, y):
                        break
                    e2 = 2 * err
                    if e2 >= dy:
                        err, x0 = err + dy, x0 + sx
                    if e2 <= dx:
                        err, y0 = err + dx, y0 + sy
            last = (x, y)
    text(width - 12 * 8, height - margin - 12, f"{span:.0f} S")  # the time axis: 0 at the left, this at the right
    raw = b"".join(b"\x00" + bytes(pixels[y * width * 3 : (y + 1) * width * 3]) for y in range(height))

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    )


def _terminated(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # so the service, the mount and the chain are stopped on the way out


def main() -> None:
    signal.signal(signal.SIGTERM, _terminated)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=40.0, help="submissions a second (one client)")
    parser.add_argument("--kill-every", type=float, default=45.0, help="seconds between SIGKILLs")
    parser.add_argument("--rpc-fault-every", type=float, default=40.0, help="seconds between RPC 503 episodes")
    parser.add_argument("--disk-full-every", type=float, default=55.0, help="seconds between disk-full episodes")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args()
    sys.exit(run(args.minutes, args.out, args.rate, args.kill_every, args.rpc_fault_every, args.disk_full_every))


if __name__ == "__main__":
    main()
