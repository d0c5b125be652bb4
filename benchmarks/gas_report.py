"""Receipt gasUsed of real transactions on a fresh local anvil: the registry's anchors and retractions,
against the design's targets and the peers.

Peers, as measured on anvil (cancun, optimizer 200) at design: the seed plan's struct registry 115,778
gas per lineage record, one EAS attest 277,281; the floor of one batch root is 43,612 (EAS `revoke`,
the peer of a retraction, is not measured here). Targets
(30 and 44): direct lineage record <= 50,000; by signature <= 58,000; batch root <= 46,500;
a retraction <= 30,000.
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
TARGETS = {"lineage": 50_000, "signed": 58_000, "root": 46_500, "retract": 30_000, "retract_lineage": 30_000}


def _commit() -> bytes:
    return os.urandom(20).ljust(32, b"\0")


def measure(handle, data: Path) -> dict[str, int | None]:  # type: ignore[no-untyped-def]
    signer = load_signer(handle.chain_id)
    record = deploy(handle.w3, handle.chain_id, signer, compile_registry(data / "build"), data)
    registry = Registry(handle.rpc, handle.chain_id, record.address, record.code_hash, record.block_number)
    out: dict[str, int | None] = {"deploy": int(handle.w3.eth.get_transaction_receipt(record.tx_hash)["gasUsed"])}
    commit = _commit()
    out["lineage"] = registry.anchor_lineage(signer, commit, _commit(), os.urandom(32), os.urandom(32), True).gas_used
    root = os.urandom(32)
    out["root"] = registry.anchor_root(signer, root).gas_used
    researcher = Signer(Account.from_key(os.urandom(32)), "bench")
    fields = LineageFields(
        researcher.address, _commit(), _commit(), os.urandom(32), os.urandom(32), True, int(time.time()) + 3600
    )
    out["signed"] = registry.anchor_signed(
        signer, researcher.sign_lineage(handle.chain_id, registry.address, fields)
    ).gas_used
    reason = os.urandom(32)
    out["retract"] = registry.retract_root(signer, root, reason).gas_used
    out["retract_lineage"] = registry.retract_lineage(signer, commit, reason).gas_used
    signed = researcher.sign_retraction(handle.chain_id, registry.address, fields.commit, reason)
    out["retract_signed"] = registry.retract_signed(signer, signed).gas_used
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
            got = measure(open_chain(Settings(data_dir=data, local_port=port), start_local=False), data)
        finally:
            node.down()
    print("receipt gasUsed, anvil (cancun, optimizer 200)")
    print(f"{'':34} {'gas':>9} {'target':>9}  peers")
    rows = [
        ("lineage record (direct)", "lineage", f"struct registry {STRUCT_REGISTRY:,}, EAS attest {EAS_ATTEST:,}"),
        ("lineage record (by signature)", "signed", "EAS delegated attest: not measured here"),
        ("batch root", "root", f"floor {ROOT_FLOOR:,}"),
        ("root retraction", "retract", "rewrites the record's own slot: no new slot"),
        ("lineage retraction (direct)", "retract_lineage", ""),
        ("lineage retraction (by signature)", "retract_signed", ""),
        ("deployment (through the CREATE2 proxy)", "deploy", ""),
    ]
    for label, key, peers in rows:
        target = f"{TARGETS[key]:>9,}" if key in TARGETS else f"{'':>9}"
        value = got[key]
        print(f"{label:34} {value if value is None else f'{value:>9,}'} {target}  {peers}")
    lineage = got["lineage"] or 0
    print(
        f"direct lineage vs struct registry {lineage / STRUCT_REGISTRY:.2f}x, vs EAS attest {lineage / EAS_ATTEST:.2f}x"
    )
    for key, target in TARGETS.items():
        value = got[key]
        print(f"{key:16} {value:,} <= {target:,}: {'yes' if value is not None and value <= target else 'NO'}")


if __name__ == "__main__":
    main()
