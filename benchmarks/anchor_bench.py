"""End-to-end anchoring on the embedded chain: items per second and gas per item by batch size,
beside the peer of anchoring each item with its own direct `anchor()` call, in one run.

`CLI submit+flush`: `anchor journal submit` of 64 files, then `anchor journal flush --batch-size 1`,
each a process as a user runs it (>= 0.8x the direct peer).

End to end = submit to the journal (256 per durable transaction) -> batch -> sign, broadcast,
mine, confirm -> one proof file per item. Targets: >= 1,000 items/s at batch 256;
<= 200 gas per item at batch 256 (floor ~170) and <= 15 at batch 4096.
"""

from __future__ import annotations

import argparse
import os
import socket
import tempfile
import time
from pathlib import Path

from anchor.anchoring.service import AnchorService
from anchor.chain.compiler import compile_registry
from anchor.chain.deployment import deploy
from anchor.chain.keys import load_signer
from anchor.chain.node import LocalChain
from anchor.chain.open import open_chain
from anchor.chain.registry import Registry
from anchor.journal.submit import Submission
from anchor.settings.session import Settings

CHUNK = 256


def submissions(n: int) -> list[Submission]:
    return [
        Submission(
            {"kind": "filetree", "version": 1, "files_root": os.urandom(32).hex(), "file_count": 1, "total_size": 1}, {}
        )
        for _ in range(n)
    ]


def batched(settings: Settings, batch: int, n: int) -> tuple[float, float]:
    service = AnchorService.open(settings)
    subs = submissions(n)
    gas_before = _gas(service)
    start = time.perf_counter()
    for i in range(0, n, CHUNK):
        service.submit(subs[i : i + CHUNK])
    service.flush(max_items=batch)
    elapsed = time.perf_counter() - start
    gas = _gas(service) - gas_before
    service.close()
    return n / elapsed, gas / n


def _gas(service: AnchorService) -> int:
    return int(service.journal.db.execute("SELECT coalesce(sum(gas_used), 0) FROM effects").fetchone()[0])


def direct(registry: Registry, settings: Settings, n: int) -> tuple[float, float]:
    """The peer: one `anchor()` lineage transaction per item, sent and awaited one by one."""
    signer = load_signer(31337)
    gas = 0
    start = time.perf_counter()
    for _ in range(n):
        commit = os.urandom(20).ljust(32, b"\0")
        gas += registry.anchor_lineage(
            signer, commit, os.urandom(20).ljust(32, b"\0"), os.urandom(32), os.urandom(32), True
        ).gas_used
    return n / (time.perf_counter() - start), gas / n


def from_cli(settings: Settings, n: int, workdir: Path) -> float:
    """`anchor journal submit` of n files, then `anchor journal flush --batch-size 1`, as a user types them
    (two processes, their start-up included): items/s end to end."""
    import subprocess
    import sys

    files = []
    for i in range(n):
        files.append(workdir / f"item-{i}.txt")
        files[-1].write_bytes(os.urandom(64))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env.update(ANCHOR_DATA_DIR=str(settings.data_dir), ANCHOR_LOCAL_PORT=str(settings.local_port))
    anchor = [sys.executable, "-m", "anchor"]
    start = time.perf_counter()
    subprocess.run([*anchor, "journal", "submit", *map(str, files)], env=env, check=True, capture_output=True)
    subprocess.run([*anchor, "journal", "flush", "--batch-size", "1"], env=env, check=True, capture_output=True)
    return n / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=8192, help="items per run at batch 256 and 4096")
    parser.add_argument("--direct-items", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        settings = Settings(data_dir=Path(tmp), local_port=port)
        node = LocalChain(settings.data_dir, port)
        node.up()
        try:
            handle = open_chain(settings, start_local=False)
            record = deploy(
                handle.w3, 31337, load_signer(31337), compile_registry(settings.data_dir / "build"), settings.data_dir
            )
            registry = Registry(handle.rpc, 31337, record.address, record.code_hash)
            peer_rate, peer_gas = direct(registry, settings, args.direct_items)
            print(f"{'':24}{'items/s':>10}{'gas/item':>10}{'vs direct: speed':>18}{'gas':>8}")
            print(f"{'direct anchor() per item':24}{peer_rate:10.0f}{peer_gas:10.0f}{1:17.2f}x{1:7.3f}x")
            cli_n = 64
            with tempfile.TemporaryDirectory() as files:
                rate = from_cli(settings, cli_n, Path(files))
            label = f"CLI submit+flush, 1 ({cli_n})"
            print(f"{label:24}{rate:10.0f}{'':>10}{rate / peer_rate:17.2f}x   (target >= 0.8x)")
            for batch in (1, 16, 256, 4096):
                n = {1: 64, 16: 1024}.get(batch, args.items)
                rate, gas = batched(settings, batch, n)
                label = f"batch {batch} ({n} items)"
                print(f"{label:24}{rate:10.0f}{gas:10.1f}{rate / peer_rate:17.2f}x{gas / peer_gas:7.3f}x")
        finally:
            node.down()
    print("\ntargets: batch 256 >= 1000 items/s and <= 200 gas/item; batch 4096 <= 15 gas/item")


if __name__ == "__main__":
    main()
