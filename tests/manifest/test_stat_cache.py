"""A re-stamp reads only what changed (the data dir's stat cache, git's rules) and a verify reads every
byte: a cache that lies can make a stamp anchor stale bytes, and the next verify names the file.

The cache's answers are observed by forging them: a cached digest that is not the file's shows whether
the file was read (the digest is its own) or trusted (the forged one)."""

from __future__ import annotations

import json
import os
import struct
import time
from pathlib import Path

import blake3
import pytest

from anchor.errors import ExitCode
from anchor.manifest.filetree import hash_tree
from anchor.manifest.statcache import StatCache, fingerprint
from tests.conftest import Chain

FORGED = bytes(range(32))


def _tree(root: Path, files: int = 600) -> Path:
    """A folder of `files` small files (over the count that forks hashing workers, so the workers'
    part of the cache is covered), written a clock tick before the cache marks its moment."""
    for n in range(files):
        (root / f"d{n % 7}").mkdir(parents=True, exist_ok=True)
        (root / f"d{n % 7}" / f"f{n}.txt").write_text(f"result {n}\n")
    time.sleep(0.05)  # the filesystem's clock moves in ticks of a few ms
    return root


def _digests(tree_root: Path, cache: StatCache | None) -> dict[str, str]:
    return {entry.path: entry.blake3 for entry in hash_tree(tree_root, None, "refuse", None, cache).files}


def _lie(cache_dir: Path, root: Path, shown: str, as_of: int | None = None, digest: bytes = FORGED) -> None:
    """Rewrite the cache of `root` so that it holds `digest` as the digest of `shown`, with the fstat
    the file has now (and, given, another hashing moment)."""
    cache = StatCache.for_root(cache_dir, root)
    for name, (seen, held) in cache.entries.items():
        if name != shown:
            cache.note(name, seen, held)
    cache.note(shown, fingerprint(os.lstat(root / shown)), digest)
    cache.started_ns = cache.as_of_ns if as_of is None else as_of
    cache.save()


def _fill(cache_dir: Path, root: Path) -> dict[str, str]:
    cache = StatCache.for_root(cache_dir, root)
    found = _digests(root, cache)
    cache.save()
    return found


def test_unchanged_files_come_from_the_cache_and_a_hash_without_it_reads_them(tmp_path: Path) -> None:
    root, cache_dir = _tree(tmp_path / "t"), tmp_path / "cache"
    honest = _fill(cache_dir, root)
    assert len(StatCache.load(next(cache_dir.glob("*.bin"))).entries) == 600  # the workers' parts merged
    _lie(cache_dir, root, "d3/f3.txt")
    assert _digests(root, StatCache.for_root(cache_dir, root))["d3/f3.txt"] == FORGED.hex()  # trusted, not read
    assert _digests(root, None) == honest  # what verify does: every byte read
    assert _digests(root, StatCache.for_root(cache_dir, root, rehash=True)) == honest  # --rehash


def test_an_edit_that_restores_the_mtime_is_read_again_because_the_ctime_moved(tmp_path: Path) -> None:
    root, cache_dir = _tree(tmp_path / "t", 5), tmp_path / "cache"
    _fill(cache_dir, root)
    target = root / "d1" / "f1.txt"
    before = os.lstat(target)
    target.write_text("result X\n")  # the same size
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.lstat(target).st_mtime_ns == before.st_mtime_ns and os.lstat(target).st_size == before.st_size
    assert _digests(root, StatCache.for_root(cache_dir, root)) == _digests(root, None)


@pytest.mark.parametrize("racy", [True, False])
def test_an_entry_not_older_than_the_caches_hashing_moment_is_read_again(tmp_path: Path, racy: bool) -> None:
    """git's racy-timestamp rule: a file written in the clock tick the hashing began may have changed
    after it was read with its mtime unchanged; the control (the moment one tick later) trusts it."""
    root, cache_dir = _tree(tmp_path / "t", 5), tmp_path / "cache"
    _fill(cache_dir, root)
    now = os.lstat(root / "d2" / "f2.txt")
    moment = max(now.st_mtime_ns, now.st_ctime_ns) + (0 if racy else 1)
    _lie(cache_dir, root, "d2/f2.txt", as_of=moment)
    found = _digests(root, StatCache.for_root(cache_dir, root))["d2/f2.txt"]
    assert (found != FORGED.hex()) is racy


@pytest.mark.parametrize("garble", ["cut", "flipped"])
def test_a_garbled_cache_is_an_empty_one(tmp_path: Path, garble: str) -> None:
    root, cache_dir = _tree(tmp_path / "t", 5), tmp_path / "cache"
    honest = _fill(cache_dir, root)
    (file,) = cache_dir.glob("*.bin")
    data = file.read_bytes()
    if garble == "cut":
        file.write_bytes(data[:-7])  # cut inside the closing check
    else:  # one bit of the first entry's size: every length still adds up
        at = len(b"anchor stat cache 2\n") + 16
        file.write_bytes(data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :])
    assert StatCache.load(file).entries == {}
    assert _digests(root, StatCache.for_root(cache_dir, root)) == honest


def test_a_cache_that_lies_makes_a_stale_stamp_which_verify_names_and_rehash_mends(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """The attack on the cache itself: a file edited and its mtime put back, and the data dir's cache
    edited to match (what a filesystem that keeps ctime would also do). The stamp trusts the cache;
    `anchor verify` hashes every byte and names the file; `anchor stamp --rehash` anchors the truth,
    keeping the superseded proof byte for byte."""
    fresh_chain.cli("deploy", check=True)
    root = _tree(tmp_path / "results", 20)
    fresh_chain.cli("stamp", str(root), check=True)
    cache_dir = Path(fresh_chain.env()["ANCHOR_DATA_DIR"]) / "stat-cache"
    assert list(cache_dir.glob("*.bin"))
    target = root / "d4" / "f4.txt"
    before = os.lstat(target)
    target.write_text("result Y\n")
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    old = blake3.blake3(b"result 4\n").digest()  # the bytes before the edit
    _lie(cache_dir, root, "d4/f4.txt", as_of=os.lstat(target).st_ctime_ns + 1, digest=old)
    first = (tmp_path / "results.anchor.json").read_bytes()
    stale = json.loads(fresh_chain.cli("--json", "stamp", str(root), check=True).stdout)
    assert (
        stale["status"] == "already_anchored" and (tmp_path / "results.anchor.json").read_bytes() == first
    )  # the old bytes
    said = fresh_chain.cli("verify", str(root))
    assert said.returncode == ExitCode.TAMPERED and "d4/f4.txt" in said.stdout + said.stderr, said.stderr
    mended = json.loads(fresh_chain.cli("--json", "stamp", "--rehash", str(root), check=True).stdout)
    assert fresh_chain.cli("verify", str(root)).returncode == ExitCode.OK
    assert Path(mended["superseded_proof"]).read_bytes() == first


def test_a_workers_part_cut_short_is_left_out_of_the_cache_not_a_crash(tmp_path: Path) -> None:
    """A worker killed while it wrote its part (or a part cut inside a name of several bytes) is not a
    traceback at `save`: what it held is read again by the next stamp, and the rest is kept."""
    root, cache_dir = _tree(tmp_path / "t", 5), tmp_path / "cache"
    cache = StatCache.for_root(cache_dir, root)
    cache.note("kept.txt", (1, 2, 3, 4, 5), FORGED)
    whole = cache.file.with_name(f"{cache.file.name}.1.part")
    name = "é.txt".encode()
    whole.write_bytes(struct.pack("<QQ", 1, len(name)) + struct.pack("<QqqQQ32s", 1, 2, 3, 4, 5, FORGED) + name)
    cut = cache.file.with_name(f"{cache.file.name}.2.part")
    cut.write_bytes(whole.read_bytes()[:-1])  # inside the é
    cache.save()
    assert set(StatCache.load(cache.file).entries) == {"kept.txt", "é.txt"}
