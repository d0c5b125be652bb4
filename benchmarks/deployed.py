"""A chain of the benchmark's own: anvil on a free port, the registry deployed, stopped on exit; and
the environment a service started on it needs. Shared by the benchmarks that start `anchor serve`'s
app (calendar_bench, hostile_bench), and, started as a user starts it (`anchor chain up`), by those that
time the command line (verify_bench, offline_bench, restamp_bench)."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from anchor.chain.compiler import compile_registry
from anchor.chain.deployment import deploy
from anchor.chain.keys import load_signer
from anchor.chain.node import LocalChain
from anchor.chain.open import open_chain
from anchor.settings.session import Settings

ANCHOR = str(Path(sys.executable).with_name("anchor"))


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
    return {
        **os.environ,
        "ANCHOR_DATA_DIR": str(settings.data_dir),
        "ANCHOR_LOCAL_PORT": str(settings.local_port),
        "ANCHOR_API_TOKENS": "sha256:" + hashlib.sha256(token.encode()).hexdigest(),
        **extra,
    }


@contextmanager
def cli_chain(work: Path) -> Iterator[tuple[dict[str, str], Callable[..., subprocess.CompletedProcess[str]]]]:
    """A local chain started by `anchor chain up` (a data dir in `work`, a free port), stopped on exit:
    the environment of `anchor` commands run on it, and a function that runs one in `work` (checked,
    its output captured)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env.update(ANCHOR_DATA_DIR=str(work / ".anchor"), ANCHOR_LOCAL_PORT=str(free_port()))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([ANCHOR, *args], env=env, cwd=work, capture_output=True, text=True, check=True)

    run("chain", "up")
    try:
        yield env, run
    finally:
        run("chain", "down")
