"""The chain-only explorer and the browser check, against the bare tools underneath them, in one run.

- Browser verification: one file of --mib MiB (random bytes) stamped on the embedded chain, then
  checked on the `/verify` page in headless Chromium, timed inside the page (performance.now around
  the same function the Verify button runs: hashing, the file tree, the manifest, the batch path and
  the four JSON-RPC reads). Peers on the same file and page cache: `b3sum` (BLAKE3, every core) and
  `anchor verify FILE --proof P` (the CLI: hash, proof, live read).
- Index: --records lineage records and as many batch roots on a fresh anvil, then a first
  `Follower.sync()` into an empty index (decode, store, reorg bookkeeping; windows of 2,000 blocks),
  against the peer every indexer pays for: the same `eth_getLogs` windows with nothing done to the logs.
  Then an idle sync (nothing new: one block-hash check), the steady-state cost per second of serving.

Medians of --runs; every sample in benchmarks/results/chain_only.json. No targets in the issue; the
figures say what a visitor waits and what following a registry costs beside reading its logs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from anchor.chain.keys import load_signer  # noqa: E402
from anchor.chain.logs import scan_logs  # noqa: E402
from anchor.chain.open import open_chain, open_registry  # noqa: E402
from anchor.index.follow import WINDOW, Follower  # noqa: E402
from anchor.index.store import IndexStore  # noqa: E402
from tests.api_server import serving_api  # noqa: E402
from tests.cdp import chromium_page  # noqa: E402
from tests.conftest import ANCHOR_BIN, deployed  # noqa: E402
from tests.explorer.test_explorer_pages import CHROMIUM_FLAGS, chromium  # noqa: E402


def _median(samples: list[float]) -> float:
    return statistics.median(samples)


def browser(base: Path, mib: int, runs: int) -> dict[str, Any]:
    data = base / "browser"
    with deployed(data) as chain:
        target = base / "big.bin"
        with open(target, "wb") as handle:
            for _ in range(mib):
                handle.write(os.urandom(1 << 20))
        proof = base / "big.anchor.json"
        chain.cli("stamp", str(target), "--out", str(proof), check=True)
        samples: dict[str, list[float]] = {"browser": [], "b3sum": [], "anchor verify": []}
        b3sum = shutil.which("b3sum")
        with serving_api(chain.env()) as url, chromium_page(chromium(), CHROMIUM_FLAGS) as page:
            page.goto(url + "/verify", ready="!!document.getElementById('check')")
            page.set_files("#files", [target])
            page.set_files("#proof", [proof])
            for run in range(runs):
                elapsed = page.evaluate(
                    "(async () => { const files = document.getElementById('files').files;"
                    " const proof = await document.getElementById('proof').files[0].text();"
                    " const t = performance.now(); const v = await window.anchorVerify(files, proof, () => {});"
                    " if (v.status !== 'verified') throw new Error(JSON.stringify(v));"
                    " return performance.now() - t; })()"
                )
                samples["browser"].append(float(elapsed) / 1000)
                if b3sum:
                    start = time.perf_counter()
                    subprocess.run([b3sum, str(target)], check=True, capture_output=True)
                    samples["b3sum"].append(time.perf_counter() - start)
                start = time.perf_counter()
                chain.cli("verify", str(target), "--proof", str(proof), check=True)
                samples["anchor verify"].append(time.perf_counter() - start)
                print(f"  run {run + 1}: " + ", ".join(f"{k} {v[-1]:.3f} s" for k, v in samples.items() if v))
    medians = {k: _median(v) for k, v in samples.items() if v}
    mb = mib * (1 << 20) / 1e6
    print(f"browser verification of {mib} MiB (median of {runs}):")
    for name, seconds in medians.items():
        ratio = f" (the browser takes {medians['browser'] / seconds:.2f}x as long)" if name != "browser" else ""
        print(f"  {name:<14} {seconds:7.3f} s  {mb / seconds:8.1f} MB/s{ratio}")
    return {"mib": mib, "samples": samples, "medians": medians}


def index(base: Path, records: int, runs: int) -> dict[str, Any]:
    with deployed(base / "index") as chain:
        handle = open_chain(chain.settings)
        registry, signer = open_registry(chain.settings, handle), load_signer(handle.chain_id)
        parent = bytes(32)
        for i in range(records):
            commit = os.urandom(20).ljust(32, b"\0")
            registry.anchor_lineage(signer, commit, parent, os.urandom(32), os.urandom(32), i % 3 == 0)
            registry.anchor_root(signer, os.urandom(32))
            parent = commit
        head = handle.rpc.block_number()
        topics = [[registry.abi.events["LineageAnchored"].topic, registry.abi.events["RootAnchored"].topic]]
        samples: dict[str, list[float]] = {"first sync": [], "bare eth_getLogs": [], "idle sync": []}
        for run in range(runs):
            path = base / f"index-{run}.sqlite"
            follower = Follower(
                handle.rpc,
                IndexStore(path, handle.chain_id, registry.address),
                registry.address,
                from_block=registry.from_block,
            )
            start = time.perf_counter()
            report = follower.sync()
            samples["first sync"].append(time.perf_counter() - start)
            assert report.added == 2 * records, report
            start = time.perf_counter()
            logs = scan_logs(handle.rpc, registry.address, topics, registry.from_block, head, window=WINDOW)
            samples["bare eth_getLogs"].append(time.perf_counter() - start)
            assert len(logs) == 2 * records
            start = time.perf_counter()
            follower.sync()
            samples["idle sync"].append(time.perf_counter() - start)
            follower.store.close()
    medians = {k: _median(v) for k, v in samples.items()}
    print(f"index of {2 * records} events over {head} blocks (median of {runs}):")
    print(f"  first sync       {medians['first sync']:.3f} s  ({2 * records / medians['first sync']:.0f} events/s)")
    print(
        f"  bare eth_getLogs {medians['bare eth_getLogs']:.3f} s  "
        f"(the sync takes {medians['first sync'] / medians['bare eth_getLogs']:.2f}x the logs alone)"
    )
    print(f"  idle sync        {medians['idle sync'] * 1000:.1f} ms (each second while serving)")
    return {"records": records, "blocks": head, "samples": samples, "medians": medians}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--records", type=int, default=500)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    assert ANCHOR_BIN.exists(), "make install first"
    with tempfile.TemporaryDirectory() as tmp:
        out = {"browser": browser(Path(tmp), args.mib, args.runs), "index": index(Path(tmp), args.records, args.runs)}
    results = ROOT / "benchmarks" / "results"
    results.mkdir(exist_ok=True)
    (results / "chain_only.json").write_text(json.dumps(out, indent=1))
    print(f"raw samples: {results / 'chain_only.json'}")


if __name__ == "__main__":
    main()
