"""A chain of the benchmark's own: anvil on a free port, the registry deployed, stopped on exit; and
the environment a service started on it needs. Shared by the benchmarks that start `anchor serve`'s
app (calendar_bench, hostile_bench)."""

from __future__ import annotations

import hashlib
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from anchor.chain.compiler import compile_registry
from anchor.chain.deployment import deploy
from anchor.chain.keys import load_signer
from anchor.chain.node import LocalChain
from anchor.chain.open import open_chain
from anchor.settings.session import Settings


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def deployed_chain(data: Path) -> Iterator[Settings]:
    """Settings of a data dir whose local chain runs on a port of its own, the registry deployed."""
    settings = Settings(data_dir=data, local_port=free_port())
    node = LocalChain(data, settings.local_port)
    node.up()
    try:
        handle = open_chain(settings, start_local=False)
        deploy(handle.w3, handle.chain_id, load_signer(handle.chain_id), compile_registry(data / "build"), data)
        yield settings
    finally:
        node.down()


def service_env(settings: Settings, token: str, **extra: str) -> dict[str, str]:
    """This process's environment, pointed at `settings`' data dir and chain, accepting `token`."""
    return {**os.environ, "ANCHOR_DATA_DIR": str(settings.data_dir), "ANCHOR_LOCAL_PORT": str(settings.local_port),
            "ANCHOR_API_TOKENS": "sha256:" + hashlib.sha256(token.encode()).hexdigest(), **extra}  # fmt: skip
