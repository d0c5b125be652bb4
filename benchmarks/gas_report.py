"""Receipt gasUsed of real transactions on a fresh local anvil, against the issue's floors and peers.

Peers, as measured on anvil (cancun, optimizer 200) in issue 2: a struct registry 115,778 gas per
lineage record, one EAS attest 277,281; the floor of one batch root is 43,612.
"""

from __future__ import annotations

import os
import socket
import tempfile
from pathlib import Path

from anchor.chain.compiler import compile_registry
from anchor.chain.deployment import deploy
from anchor.chain.keys import load_signer
from anchor.chain.node import LocalChain
from anchor.chain.registry import Registry
from anchor.session import Settings, open_chain

STRUCT_REGISTRY = 115_778
EAS_ATTEST = 277_281
ROOT_FLOOR = 43_612


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
            signer = load_signer(handle.chain_id)
            record = deploy(handle.w3, handle.chain_id, signer, compile_registry(data / "build"), data)
            registry = Registry(handle.w3, handle.chain_id, record.address, record.code_hash)
            commit = os.urandom(20).ljust(32, b"\0")
            parent = os.urandom(20).ljust(32, b"\0")
            lineage = registry.anchor_lineage(signer, commit, parent, os.urandom(32), os.urandom(32), True).gas_used
            root = registry.anchor_root(signer, os.urandom(32)).gas_used
        finally:
            node.down()
    print(f"lineage record (with parent) {lineage:>8,} gas  target <= 60,000")
    print(f"  vs struct registry         {STRUCT_REGISTRY:>8,} gas  ratio {lineage / STRUCT_REGISTRY:.2f}x")
    print(f"  vs EAS attest              {EAS_ATTEST:>8,} gas  ratio {lineage / EAS_ATTEST:.2f}x")
    print(f"batch root                   {root:>8,} gas  target <= 48,000")
    print(f"  vs floor                   {ROOT_FLOOR:>8,} gas  ratio {root / ROOT_FLOOR:.3f}x")


if __name__ == "__main__":
    main()
