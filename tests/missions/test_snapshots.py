"""The content-addressed snapshot cache: a hit transfers nothing, a corrupt or truncated
entry fails closed and is fetched again, concurrent fetches download once, a size cap evicts the least
recently used entry that no mission holds; and the mission file itself, typed and refused by field."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from anchor.errors import BadInput, ExitCode, NotAnchored, Tampered
from anchor.missions.snapshots import SnapshotCache
from tests.cli import run_anchor


class Source:
    """A local HTTP server that serves blobs by name and counts every request it gets."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.blobs: dict[str, bytes] = {}
        self.requests: list[str] = []
        source = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                source.requests.append(self.path)
                body = source.blobs.get(self.path.lstrip("/"))
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                time.sleep(delay_s)  # a slow source: concurrent fetches overlap
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def add(self, name: str, body: bytes) -> str:
        self.blobs[name] = body
        return hashlib.sha256(body).hexdigest()


@pytest.fixture
def source() -> Iterator[Source]:
    served = Source(delay_s=0.3)
    served.thread.start()
    yield served
    served.server.shutdown()
    served.server.server_close()


def test_a_hit_transfers_nothing_and_the_entry_is_read_only(tmp_path: Path, source: Source) -> None:
    key = source.add("snap.tar", os.urandom(300_000))
    cache = SnapshotCache(tmp_path / "cache")
    first = cache.fetch(f"sha256:{key}", f"{source.url}/snap.tar")
    assert not first.hit and len(source.requests) == 1
    second = cache.fetch(key, f"{source.url}/snap.tar")
    assert second.hit and second.path == first.path and len(source.requests) == 1  # the server saw nothing new
    assert first.path.stat().st_mode & 0o777 == 0o444
    assert hashlib.sha256(first.path.read_bytes()).hexdigest() == key


@pytest.mark.parametrize("damage", ["flipped byte", "truncated"])
def test_a_damaged_entry_fails_closed_is_quarantined_and_fetched_again(
    tmp_path: Path, source: Source, damage: str
) -> None:
    body = os.urandom(100_000)
    key = source.add("snap.tar", body)
    cache = SnapshotCache(tmp_path / "cache")
    entry = cache.fetch(key, f"{source.url}/snap.tar").path

    def spoil() -> None:  # the operator (or a disk) changes the entry behind our back
        entry.chmod(0o644)
        broken = bytearray(body)
        broken[500] ^= 1
        entry.write_bytes(bytes(broken) if damage == "flipped byte" else body[:-1])

    spoil()
    with pytest.raises(NotAnchored, match="not in the cache") as info:
        cache.fetch(key, None)  # fails closed: never handed out, even with no source to refetch from
    assert Path(info.value.detail["quarantined"]).exists() and not entry.exists()
    refetched = cache.fetch(key, f"{source.url}/snap.tar")
    assert not refetched.hit and refetched.path.read_bytes() == body and len(source.requests) == 2
    spoil()
    again = cache.fetch(key, f"{source.url}/snap.tar")
    assert not again.hit and again.quarantined is not None and again.quarantined.exists()
    assert again.path.read_bytes() == body and len(source.requests) == 3
    assert len(list((tmp_path / "cache" / "quarantine").iterdir())) == 2  # both damaged copies kept aside


def test_bytes_that_do_not_hash_to_the_key_are_never_cached(tmp_path: Path, source: Source) -> None:
    source.add("snap.tar", b"what the source really has")
    wanted = hashlib.sha256(b"what the mission was written against").hexdigest()
    cache = SnapshotCache(tmp_path / "cache")
    with pytest.raises(Tampered, match="nothing was cached"):
        cache.fetch(wanted, f"{source.url}/snap.tar")
    assert list((tmp_path / "cache" / "sha256").iterdir()) == [] and list((tmp_path / "cache" / "tmp").iterdir()) == []
    with pytest.raises(BadInput, match="local path or an http"):
        cache.fetch(wanted, "ftp://example.invalid/snap.tar")


FETCH = """
import sys
from pathlib import Path
from anchor.missions.snapshots import SnapshotCache
done = SnapshotCache(Path(sys.argv[1])).fetch(sys.argv[2], sys.argv[3])
print("hit" if done.hit else "fetched")
"""


def test_concurrent_fetches_of_one_key_download_once(tmp_path: Path, source: Source) -> None:
    key = source.add("big.tar", os.urandom(2_000_000))
    fetchers = [
        subprocess.Popen(
            [sys.executable, "-c", FETCH, str(tmp_path / "cache"), key, f"{source.url}/big.tar"],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    outcomes = sorted(f.communicate(timeout=120)[0].strip() for f in fetchers)
    assert [f.returncode for f in fetchers] == [0, 0, 0]
    assert outcomes == ["fetched", "hit", "hit"] and source.requests == ["/big.tar"]


def test_the_size_cap_evicts_the_least_recently_used_entry_no_mission_holds(tmp_path: Path) -> None:
    cache = SnapshotCache(tmp_path / "cache", max_bytes=2500)
    keys = []
    for n in range(2):
        blob = tmp_path / f"s{n}"
        blob.write_bytes(bytes([n]) * 1000)
        keys.append(cache.add(blob).key)
        time.sleep(0.01)
    cache.fetch(keys[0], None)  # used again: keys[1] is now the least recently used
    third = tmp_path / "s2"
    third.write_bytes(b"\x02" * 1000)
    with cache.held(keys[1], None):  # ... but a running mission holds it: keys[0] goes instead
        os.utime(cache.path_of(keys[1]), (1, 1))  # the least recently used again (held's check touched it)
        keys.append(cache.add(third).key)
        cached = {k for k, _, _ in cache.entries()}
        assert cached == {keys[1], keys[2]}
    fourth = tmp_path / "s3"
    fourth.write_bytes(b"\x03" * 1000)
    cache.add(fourth)  # released: now the least recently used one goes
    assert keys[1] not in {k for k, _, _ in cache.entries()}


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    return run_anchor(args, {**env, "ANCHOR_DATA_DIR": str(tmp_path / "data")})


def test_the_snapshot_commands_add_fetch_and_refuse_by_name(tmp_path: Path) -> None:
    blob = tmp_path / "snapshot.parquet"
    blob.write_bytes(b"columns" * 100)
    added = _cli(tmp_path, "--json", "snapshot", "add", str(blob))
    assert added.returncode == 0, added.stderr
    key = json.loads(added.stdout)["snapshot"]
    assert key == "sha256:" + hashlib.sha256(blob.read_bytes()).hexdigest()
    hit = _cli(tmp_path, "snapshot", "fetch", key)
    assert hit.returncode == 0 and "hit: verified, nothing transferred" in hit.stdout
    missing = _cli(tmp_path, "snapshot", "fetch", "sha256:" + "ab" * 32)
    assert missing.returncode == ExitCode.NOT_ANCHORED and "hint: --from" in missing.stderr
    bad = _cli(tmp_path, "--json", "snapshot", "fetch", "sha256:xyz")
    assert bad.returncode == ExitCode.BAD_INPUT and json.loads(bad.stdout)["error"]["detail"]["field"] == "snapshot"
    gone = _cli(tmp_path, "snapshot", "add", str(tmp_path / "nope"))
    assert gone.returncode == ExitCode.BAD_INPUT and "Traceback" not in gone.stderr


MISSION = """
hypothesis = "Momentum over 20 days predicts next-week returns for large caps."
command = "python3 run.py {run_dir}"
evaluator_policy_sha256 = "4444444444444444444444444444444444444444444444444444444444444444"
[covers]
symbol = "SPY"
horizon = "5d"
[budget]
minutes = 90
attempts = 200
[[stop_rules]]
metric = "sharpe"
mode = "max"
target = 1.5
"""


def test_a_mission_is_checked_and_a_wrong_one_refused_naming_the_field(tmp_path: Path) -> None:
    mission = tmp_path / "mission.toml"
    mission.write_text(MISSION)
    checked = _cli(tmp_path, "--json", "mission", "check", str(mission))
    assert checked.returncode == 0, checked.stderr
    data = json.loads(checked.stdout)
    assert data["file_sha256"] == hashlib.sha256(mission.read_bytes()).hexdigest() and data["digest"].startswith("0x")
    assert data["mission"]["stop_rules"] == [{"metric": "sharpe", "mode": "max", "target": "1.5"}]
    for broken, field in (
        (MISSION + "budget_dollars = 5\n", "budget_dollars"),
        (MISSION.replace("minutes = 90", 'minutes = "soon"'), "budget.minutes"),
        (MISSION.replace('symbol = "SPY"', 'Symbol = "SPY"'), "covers"),
    ):
        mission.write_text(broken)
        refused = _cli(tmp_path, "--json", "mission", "check", str(mission))
        assert refused.returncode == ExitCode.BAD_INPUT, broken
        assert field in json.dumps(json.loads(refused.stdout)["error"]), refused.stdout
