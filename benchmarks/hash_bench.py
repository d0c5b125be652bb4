"""Hashing speed against the reference tools, on the same data, in one run.

Datasets: one 1 GiB file; a tree of 10,000 files totalling 1 GiB; 100,000 files of 1 KiB.
Peers: the official `b3sum` CLI (Debian package b3sum), `find | xargs b3sum` for trees, and a bare
Python loop (os.walk + read + blake3). Every tool reads from a warm page cache; each figure is the
median of --runs runs. Also prints peak RSS of hashing the 1 GiB file in a fresh interpreter.

Targets: 1 GiB file >= 0.9x b3sum's throughput; 10,000-file tree >= 1.2x
`find | xargs b3sum`; 100,000 small files within 1.2x of the bare loop's time; peak memory < 200 MiB.

`--end-to-end`: the `anchor hash` command itself, start-up included, against `b3sum` on a
3 GiB file and a 3 GiB folder of mixed sizes, each warm and cold. Cold means every file's pages are
dropped from the page cache first (posix_fadvise DONTNEED, checked with fincore when present): this
machine cannot drop caches globally. The two tools alternate run by run, so both see the same
disk and the same neighbours; medians, and every sample in benchmarks/results/hash_end_to_end.json.
Target: anchor >= 0.9x b3sum's throughput in all four cases.

`--typed`: `anchor hash PATH` as a user types it, start-up included, on the three data sets
above, each run alternating with its peer (`b3sum FILE`, `find PATH -type f -print0 | xargs -0 b3sum`).
Targets: 100,000 x 1 KiB <= 1.3x the peer's time; 10,000 files <= 1.2x; the 1 GiB file >= 0.9x b3sum's
throughput. Medians; every sample in benchmarks/results/hash_typed.json.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import blake3

from anchor.manifest.filetree import hash_tree

GIB = 1 << 30


def make_data(root: Path) -> dict[str, Path]:
    big, tree, small = root / "big.bin", root / "tree10k", root / "small100k"
    if not big.exists():
        with open(big, "wb") as handle:
            for _ in range(GIB // (64 << 20)):
                handle.write(os.urandom(64 << 20))
    if not tree.exists():
        part = tree.with_suffix(".partial")
        shutil.rmtree(part, ignore_errors=True)
        size = GIB // 10_000
        for i in range(10_000):
            directory = part / f"d{i % 100:02d}"
            directory.mkdir(parents=True, exist_ok=True)
            (directory / f"f{i:05d}.bin").write_bytes(os.urandom(size))
        part.rename(tree)
    if not small.exists():
        part = small.with_suffix(".partial")
        shutil.rmtree(part, ignore_errors=True)
        for i in range(100_000):
            directory = part / f"d{i % 1000:03d}"
            directory.mkdir(parents=True, exist_ok=True)
            (directory / f"f{i:06d}.txt").write_bytes(os.urandom(1024))
        part.rename(small)
    return {"big": big, "tree": tree, "small": small}


def median_time(run: Callable[[], object], runs: int) -> float:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def bare_loop(root: Path) -> int:
    count = 0
    if root.is_file():
        blake3.blake3(root.read_bytes()).hexdigest()
        return 1
    for directory, _, names in os.walk(root):
        for name in names:
            with open(os.path.join(directory, name), "rb") as handle:
                blake3.blake3(handle.read()).hexdigest()
            count += 1
    return count


def b3sum_file(path: Path) -> None:
    subprocess.run(["b3sum", str(path)], stdout=subprocess.DEVNULL, check=True)


def b3sum_tree(path: Path) -> None:
    subprocess.run(
        f"find '{path}' -type f -print0 | xargs -0 b3sum > /dev/null",
        shell=True,
        check=True,  # noqa: S602
    )


def warm(path: Path) -> None:
    subprocess.run(f"find '{path}' -type f -print0 | xargs -0 cat > /dev/null", shell=True, check=True)  # noqa: S602


def peak_rss_mib(path: Path) -> float:
    # ru_maxrss survives fork+exec on Linux (it would report this parent's peak): reset the
    # high-water mark in the child, then read VmHWM.
    probe = (
        "import sys\nfrom anchor.manifest.filetree import hash_tree\n"
        "open('/proc/self/clear_refs', 'w').write('5')\nhash_tree(sys.argv[1])\n"
        "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]\n"
        "print(int(hwm.split()[1]) / 1024)"
    )
    out = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, check=True)
    return float(out.stdout)


def make_3gib(root: Path) -> dict[str, Path]:
    """A 3 GiB file, and a 3 GiB folder: 2 x 1 GiB, 100 x 5 MiB, 5,000 x 100 KiB (~2.98 GiB)."""
    big, folder = root / "big3.bin", root / "mixed3"
    if not big.exists():
        with open(big, "wb") as handle:
            for _ in range(3 * GIB // (64 << 20)):
                handle.write(os.urandom(64 << 20))
    if not folder.exists():
        part = folder.with_suffix(".partial")
        shutil.rmtree(part, ignore_errors=True)
        (part / "large").mkdir(parents=True)
        for i in range(2):
            with open(part / "large" / f"part{i}.bin", "wb") as handle:
                for _ in range(GIB // (64 << 20)):
                    handle.write(os.urandom(64 << 20))
        for i in range(100):
            (part / "medium").mkdir(exist_ok=True)
            (part / "medium" / f"m{i:03d}.bin").write_bytes(os.urandom(5 << 20))
        for i in range(5000):
            directory = part / "small" / f"d{i % 50:02d}"
            directory.mkdir(parents=True, exist_ok=True)
            (directory / f"s{i:04d}.bin").write_bytes(os.urandom(100 << 10))
        part.rename(folder)
    return {"3 GiB file": big, "3 GiB folder": folder}


def evict(path: Path) -> None:
    """Drop every file's pages from the page cache (posix_fadvise DONTNEED on clean pages)."""
    files = [path] if path.is_file() else [Path(d) / n for d, _, names in os.walk(path) for n in names]
    for file in files:
        fd = os.open(file, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def end_to_end(data: Path, runs: int) -> None:
    import json

    anchor = Path(sys.executable).with_name("anchor")
    sets = make_3gib(data)
    samples: dict[str, dict[str, list[float]]] = {}
    print(f"`anchor hash` end to end vs b3sum, {os.cpu_count()} cores, median of {runs} alternating runs")
    for name, path in sets.items():
        size = sum(f.stat().st_size for f in ([path] if path.is_file() else path.rglob("*")) if f.is_file())
        ours_cmd = [str(anchor), "hash", str(path)]  # as a user types it (it needs no data dir)
        peer = (lambda p=path: b3sum_file(p)) if path.is_file() else (lambda p=path: b3sum_tree(p))
        for cache in ("warm", "cold"):
            key = f"{name}, {cache}"
            samples[key] = {"anchor": [], "b3sum": []}
            warm(path)
            for _ in range(runs):
                ours_run = partial(subprocess.run, ours_cmd, stdout=subprocess.DEVNULL, check=True)
                for tool, run in (("anchor", ours_run), ("b3sum", peer)):
                    if cache == "cold":
                        evict(path)
                    start = time.perf_counter()
                    run()
                    samples[key][tool].append(time.perf_counter() - start)
            ours, theirs = statistics.median(samples[key]["anchor"]), statistics.median(samples[key]["b3sum"])
            print(
                f"  {key:<22} anchor {ours:6.2f} s ({size / ours / 1e9:5.2f} GB/s)   b3sum {theirs:6.2f} s"
                f" ({size / theirs / 1e9:5.2f} GB/s)   ratio {theirs / ours:4.2f}x (target >= 0.90)"
            )
    results = Path(__file__).parent / "results"
    results.mkdir(exist_ok=True)
    (results / "hash_end_to_end.json").write_text(json.dumps(samples, indent=1))
    print(f"  raw samples: {results / 'hash_end_to_end.json'}")


def typed(data: dict[str, Path], runs: int) -> None:
    import json

    anchor = str(Path(sys.executable).with_name("anchor"))
    samples: dict[str, dict[str, list[float]]] = {}
    print(f"`anchor hash` as typed vs its peer, {os.cpu_count()} cores, median of {runs} alternating runs, warm")
    goals = {
        "big": ("1 GiB file, b3sum", 1 / 0.9),
        "tree": ("10,000 files, find | xargs b3sum", 1.2),
        "small": ("100,000 x 1 KiB, find | xargs b3sum", 1.3),
    }
    for name, (label, most) in goals.items():
        path = data[name]
        warm(path)
        peer = (lambda p=path: b3sum_file(p)) if path.is_file() else (lambda p=path: b3sum_tree(p))
        ours = partial(subprocess.run, [anchor, "hash", str(path)], stdout=subprocess.DEVNULL, check=True)
        samples[name] = {"anchor": [], "peer": []}
        for _ in range(runs):
            for tool, run in (("anchor", ours), ("peer", peer)):
                start = time.perf_counter()
                run()
                samples[name][tool].append(time.perf_counter() - start)
        a, b = statistics.median(samples[name]["anchor"]), statistics.median(samples[name]["peer"])
        print(f"  {label:<38} anchor {a:6.2f} s   peer {b:6.2f} s   time ratio {a / b:4.2f}x (goal <= {most:.2f})")
    results = Path(__file__).parent / "results"
    results.mkdir(exist_ok=True)
    (results / "hash_typed.json").write_text(json.dumps(samples, indent=1))
    print(f"  raw samples: {results / 'hash_typed.json'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=Path("/tmp/anchor-hash-bench"), help="kept between runs")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--end-to-end", action="store_true", help="the 3 GiB CLI comparison")
    parser.add_argument("--typed", action="store_true", help="`anchor hash` as typed on the three sets")
    args = parser.parse_args()
    if shutil.which("b3sum") is None:
        sys.exit("b3sum is missing: `make bench` installs it (apt-get install b3sum)")
    args.data.mkdir(parents=True, exist_ok=True)
    if args.end_to_end:
        end_to_end(args.data, args.runs)
        return
    data = make_data(args.data)
    if args.typed:
        typed(data, args.runs)
        return
    for path in data.values():
        warm(path)
    runs = args.runs
    print(f"cores {os.cpu_count()}, median of {runs} runs, warm page cache\n")

    t_ours = median_time(lambda: hash_tree(data["big"]), runs)
    t_b3 = median_time(lambda: b3sum_file(data["big"]), runs)
    t_bare = median_time(lambda: bare_loop(data["big"]), runs)
    rss = peak_rss_mib(data["big"])
    print("1 GiB file")
    print(f"  anchor        {t_ours:7.3f} s  {GIB / t_ours / 1e9:6.2f} GB/s")
    print(f"  b3sum         {t_b3:7.3f} s  {GIB / t_b3 / 1e9:6.2f} GB/s")
    print(f"  bare loop     {t_bare:7.3f} s  {GIB / t_bare / 1e9:6.2f} GB/s")
    print(f"  throughput ratio anchor/b3sum  {t_b3 / t_ours:5.2f}x   (target >= 0.90)")
    print(f"  peak RSS hashing it            {rss:6.1f} MiB (target < 200)\n")

    t_ours = median_time(lambda: hash_tree(data["tree"]), runs)
    t_b3 = median_time(lambda: b3sum_tree(data["tree"]), runs)
    t_bare = median_time(lambda: bare_loop(data["tree"]), runs)
    print("10,000 files, 1 GiB")
    print(f"  anchor                  {t_ours:7.3f} s  {GIB / t_ours / 1e9:6.2f} GB/s")
    print(f"  find | xargs b3sum      {t_b3:7.3f} s  {GIB / t_b3 / 1e9:6.2f} GB/s")
    print(f"  bare loop               {t_bare:7.3f} s  {GIB / t_bare / 1e9:6.2f} GB/s")
    print(f"  throughput ratio anchor/(find|xargs b3sum)  {t_b3 / t_ours:5.2f}x   (target >= 1.20)\n")

    t_ours = median_time(lambda: hash_tree(data["small"]), runs)
    t_bare = median_time(lambda: bare_loop(data["small"]), runs)
    t_b3 = median_time(lambda: b3sum_tree(data["small"]), runs)
    print("100,000 files of 1 KiB")
    print(f"  anchor                  {t_ours:7.3f} s  {t_ours / 100_000 * 1e6:6.2f} us/file")
    print(f"  bare loop               {t_bare:7.3f} s  {t_bare / 100_000 * 1e6:6.2f} us/file")
    print(f"  find | xargs b3sum      {t_b3:7.3f} s  {t_b3 / 100_000 * 1e6:6.2f} us/file")
    print(f"  time ratio anchor/bare loop  {t_ours / t_bare:5.2f}x   (target <= 1.20)")


if __name__ == "__main__":
    main()
