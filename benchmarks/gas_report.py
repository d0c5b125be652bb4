"""Receipt gasUsed of real transactions on a fresh local anvil: registries v1, v2 and v3 side by side,
against the issues' targets and the peers.

Peers, as measured on anvil (cancun, optimizer 200) in issue 2: the seed plan's struct registry 115,778
gas per lineage record, one EAS attest 277,281; the floor of one batch root is 43,612. Targets (issue 9,
registry v2): direct lineage record <= 50,000; by signature <= 58,000; batch root <= 46,000; issue 30,
registry v3 (roots keyed by submitter): batch root <= 46,500.
"""

from __future__ import annotations

import os
import socket
import tempfile
import time
from pathlib import Path

from eth_account import Account

from anchor.chain.compiler import compile_registry
from anchor.chain.deployment import deploy
from anchor.chain.keys import Signer, load_signer
from anchor.chain.node import LocalChain
from anchor.chain.open import open_chain
from anchor.chain.registry import Registry
from anchor.chain.signed import LineageFields
from anchor.settings.session import Settings

STRUCT_REGISTRY = 115_778
EAS_ATTEST = 277_281
ROOT_FLOOR = 43_612
TARGETS = {"lineage": 50_000, "signed": 58_000, "root": 46_500}


def _commit() -> bytes:
    return os.urandom(20).ljust(32, b"\0")


def measure(version: str, handle, data: Path) -> dict[str, int | None]:  # type: ignore[no-untyped-def]
    signer = load_signer(handle.chain_id)
    record = deploy(handle.w3, handle.chain_id, signer, compile_registry(data / "build", version), data)
    registry = Registry(handle.rpc, handle.chain_id, record.address, record.code_hash, record.block_number)
    out: dict[str, int | None] = {"deploy": None}
    receipt = handle.w3.eth.get_transaction_receipt(record.tx_hash)
    out["deploy"] = int(receipt["gasUsed"])
    sent = registry.anchor_lineage(signer, _commit(), _commit(), os.urandom(32), os.urandom(32), True)
    out["lineage"] = sent.gas_used
    out["root"] = registry.anchor_root(signer, os.urandom(32)).gas_used
    out["signed"] = None
    if registry.researcher_bound:
        researcher = Signer(Account.from_key(os.urandom(32)), "bench")
        fields = LineageFields(researcher.address, _commit(), _commit(), os.urandom(32), os.urandom(32), True,
                               int(time.time()) + 3600)  # fmt: skip
        signed = researcher.sign_lineage(handle.chain_id, registry.address, fields)
        out["signed"] = registry.anchor_signed(signer, signed).gas_used
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        data = Path(tmp)
        node = LocalChain(data, port)
        node.up()
        try:
            handle = open_chain(Settings(data_dir=data, local_port=port), start_local=False)
            v1 = measure("1.0.0", handle, data)
            v2 = measure("2.0.0", handle, data)
            v3 = measure("3.0.0", handle, data)
        finally:
            node.down()

    def cell(value: int | None) -> str:
        return f"{value:>9,}" if value is not None else f"{'-':>9}"

    print("receipt gasUsed, anvil (cancun, optimizer 200)")
    print(f"{'':32} {'v1':>9} {'v2':>9} {'v3':>9} {'target':>9}  peers")
    rows = [
        ("lineage record (direct)", "lineage", f"struct registry {STRUCT_REGISTRY:,}, EAS attest {EAS_ATTEST:,}"),
        ("lineage record (by signature)", "signed", "EAS delegated attest: not measured here"),
        ("batch root", "root", f"floor {ROOT_FLOOR:,}"),
        ("deployment", "deploy", ""),
    ]
    for label, key, peers in rows:
        target = f"{TARGETS[key]:>9,}" if key in TARGETS else f"{'':>9}"
        print(f"{label:32} {cell(v1[key])} {cell(v2[key])} {cell(v3[key])} {target}  {peers}")
    lineage = v3["lineage"] or 0
    print(f"v3 direct vs struct registry {lineage / STRUCT_REGISTRY:.2f}x, vs EAS attest {lineage / EAS_ATTEST:.2f}x")
    print(f"v3 batch root vs v2 {(v3['root'] or 0) - (v2['root'] or 0):+,} gas (the submitter's own mapping level)")
    for key, target in TARGETS.items():
        value = v3[key]
        print(f"v3 {key:8} {value:,} <= {target:,}: {'yes' if value is not None and value <= target else 'NO'}")


if __name__ == "__main__":
    main()
