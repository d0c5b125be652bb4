"""Reads from the command line against their peers, in one run: `anchor verify FILE`, `anchor verify`
of 1,000 single-file proofs in one call, `anchor lookup` and `anchor journal status`, beside a bare
interpreter (`python -c pass`) and `b3sum` on the same file.

A chain of its own (anvil on a free port, a data dir in a temporary folder), the registry deployed, 1,000
files submitted and flushed in one batch (`journal submit` + `journal flush`), then each command run
RUNS times end to end as a user runs it. Prints medians and ratios; raw samples in
benchmarks/results/verify_bench.json.
Targets: verify FILE median <= 250 ms and <= 8x the bare interpreter; 1,000 proofs in one call <= 10 s
and <= 1.5x the once-per-root floor, for 1,000 proofs of one batch and for 1,000 proofs each of its own
batch (`journal flush --batch-size 1`) (benchmarks/floor_verify_per_root.py: one receipt per transaction,
one verifyInclusion per root, every path walked locally), printed beside the per-proof floor
(benchmarks/floor_verify.py, one eth_call per proof, 999 more than the chain needs for one batch) and,
for 1,000 batches, beside the same floor asking its reads in JSON-RPC batches of 32 as Anchor does
(benchmarks/floor_verify_batched.py: the ratio to it is what batching does not explain);
verify FILE <= 2x the lean floor of one proof (benchmarks/floor_verify_lean.py: the same two reads on a
raw kept-alive socket under `python -S`); lookup and journal status <= 300 ms;
`verify FILE --offline` of the same proof, sealed, no slower than online and <= 8x the bare interpreter
(benchmarks/offline_bench.py pairs them run by run).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import blake3

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
ANCHOR = str(Path(sys.executable).with_name("anchor"))
RUNS = 15
FILES = 1_000


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def timed(argv: list[str], env: dict[str, str], cwd: Path, runs: int = RUNS) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        samples.append(time.perf_counter() - start)
    return samples


def main() -> None:
    # as an installed package is: compiled (pip compiles a wheel's modules; `make install` does this too),
    # not recompiled on every call where PYTHONDONTWRITEBYTECODE is set and a module changed since
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "anchor"), str(ROOT / "api")], check=True)
    with tempfile.TemporaryDirectory(prefix="verify-bench-") as tmp:
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
        env.update(ANCHOR_DATA_DIR=str(work / ".anchor"), ANCHOR_LOCAL_PORT=str(free_port()))
        run = lambda *a: subprocess.run([ANCHOR, *a], env=env, cwd=work, capture_output=True, text=True, check=True)  # noqa: E731
        run("chain", "up")
        try:
            files = work / "results"
            files.mkdir()
            for n in range(FILES):
                (files / f"r{n:04d}.txt").write_text(f"result {n}: {n * 0.001:.3f}\n")
            paths = sorted(str(p.relative_to(work)) for p in files.glob("r*.txt"))
            run("journal", "submit", *paths)
            run("journal", "flush", "--batch-size", str(FILES))
            separate = work / "batches"  # the same count of proofs, each of its own batch: a root each
            separate.mkdir()
            for n in range(FILES):
                (separate / f"b{n:04d}.txt").write_text(f"result {n} alone: {n * 0.002:.3f}\n")
            alone = sorted(str(p.relative_to(work)) for p in separate.glob("b*.txt"))
            run("journal", "submit", *alone)
            run("journal", "flush", "--batch-size", "1")
            (work / "alone.txt").write_text("\n".join(alone) + "\n")
            (work / "paths.txt").write_text("\n".join(paths) + "\n")
            one = paths[0]
            (work / "one.txt").write_text(one + "\n")
            status = json.loads(run("--json", "chain", "status").stdout)
            rpc = status["chain"]["rpc_url"]
            registry = json.loads((work / f"{one}.anchor.json").read_text())["anchor"]["registry"]
            block = json.loads(run("seal", one, "--json").stdout)["sealed"][0]["blocks"][0]
            trusted = f"{block['block']}:{block['hash']}"

            def floor(script: str, listing: str, runs: int = RUNS) -> list[float]:
                """A floor script of benchmarks/ on the proofs listed in `listing`, timed as ours are."""
                argv = [sys.executable, str(ROOT / "benchmarks" / script), rpc, registry, listing]
                return timed(argv, env, work, runs)

            samples = {
                "python -c pass": timed([sys.executable, "-c", "pass"], env, work),
                "b3sum FILE": timed([shutil.which("b3sum") or "b3sum", one], env, work),
                "anchor verify FILE": timed([ANCHOR, "verify", one], env, work),
                "anchor verify FILE --offline": timed(
                    [ANCHOR, "verify", one, "--offline", "--trusted-block", trusted], env, work
                ),
                "anchor lookup FILE": timed([ANCHOR, "lookup", one], env, work),
                "anchor journal status": timed([ANCHOR, "journal", "status"], env, work),
                f"anchor verify --from ({FILES} proofs)": timed(
                    [ANCHOR, "verify", "--from", "paths.txt"], env, work, 3
                ),
                f"floor verifier ({FILES} proofs)": floor("floor_verify.py", "paths.txt", 3),
                f"once-per-root floor ({FILES} proofs)": floor("floor_verify_per_root.py", "paths.txt", 3),
                f"anchor verify --from ({FILES} batches)": timed(
                    [ANCHOR, "verify", "--from", "alone.txt"], env, work, 5
                ),
                f"once-per-root floor ({FILES} batches)": floor("floor_verify_per_root.py", "alone.txt", 5),
                f"batched floor ({FILES} batches)": floor("floor_verify_batched.py", "alone.txt", 5),
                "floor verifier (1 proof)": floor("floor_verify.py", "one.txt"),
                "lean floor (1 proof)": timed(
                    [sys.executable, "-S", str(ROOT / "benchmarks" / "floor_verify_lean.py"), rpc, registry, "one.txt"]
                    + [str(Path(blake3.__file__).parent.parent)],
                    env,
                    work,
                ),
            }
        finally:
            run("chain", "down")
    med = {name: statistics.median(values) for name, values in samples.items()}
    bare = med["python -c pass"]
    for name, value in med.items():
        print(f"{name:36s} median {value * 1000:8.1f} ms   {value / bare:5.1f}x bare interpreter")
    verify = med["anchor verify FILE"]
    many = med[f"anchor verify --from ({FILES} proofs)"]
    print(
        f"verify FILE: {verify * 1000:.0f} ms (target <= 250 ms, <= 8x bare: {verify / bare:.1f}x);"
        f" {verify / med['b3sum FILE']:.0f}x b3sum on the same file"
    )
    offline = med["anchor verify FILE --offline"]
    print(
        f"verify FILE --offline (sealed): {offline * 1000:.0f} ms, {offline / verify:.2f}x online,"
        f" {offline / bare:.1f}x bare (goal: <= online, <= 8x bare)"
    )
    floor, floor_one = med[f"floor verifier ({FILES} proofs)"], med["floor verifier (1 proof)"]
    per_root = med[f"once-per-root floor ({FILES} proofs)"]
    print(
        f"{FILES} proofs in one call: {many:.2f} s, {many / FILES * 1000:.1f} ms a proof; the once-per-root"
        f" floor {per_root:.2f} s: {many / per_root:.2f}x (goal <= 1.5x); the per-proof floor {floor:.2f} s:"
        f" {many / floor:.2f}x"
    )
    ours_name, floor_name = f"anchor verify --from ({FILES} batches)", f"once-per-root floor ({FILES} batches)"
    batches, batches_floor = med[ours_name], med[floor_name]
    ratios = sorted(a / b for a, b in zip(samples[ours_name], samples[floor_name], strict=True))
    print(
        f"{FILES} proofs of {FILES} batches in one call: {batches:.2f} s; the once-per-root floor's per-root work"
        f" {batches_floor:.2f} s: {batches / batches_floor:.2f}x (per run {ratios[0]:.2f}-{ratios[-1]:.2f};"
        " goal <= 1.5x)"
    )
    batched = med[f"batched floor ({FILES} batches)"]
    print(
        f"  the same reads asked in batches of 32, as ours are (benchmarks/floor_verify_batched.py): {batched:.2f} s;"
        f" ours {batches / batched:.2f}x that"
    )
    lean = med["lean floor (1 proof)"]
    print(
        f"verify FILE: {verify / lean:.2f}x the lean raw-socket floor ({lean * 1000:.0f} ms under python -S, the"
        f" same two reads; goal <= 2x); {verify / floor_one:.2f}x the floor verifier of one proof"
        f" ({floor_one * 1000:.0f} ms, http.client and site); {verify / bare:.1f}x bare"
    )
    print(
        f"lookup {med['anchor lookup FILE'] * 1000:.0f} ms, journal status"
        f" {med['anchor journal status'] * 1000:.0f} ms (target <= 300 ms)"
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "verify_bench.json").write_text(json.dumps({"samples_s": samples, "median_s": med}, indent=1) + "\n")


if __name__ == "__main__":
    main()
