"""Shared fixtures: a real anvil (through our own LocalChain), a deployed registry, CLI runners.

Chain tests never skip: if anvil is missing, the fixture fails loudly.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from anchor.chain.node import LocalChain
from anchor.settings.session import Settings

ROOT = Path(__file__).resolve().parents[1]
ANCHOR_BIN = Path(sys.executable).with_name("anchor")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Chain:
    data_dir: Path
    port: int
    node: LocalChain
    journal_url: str | None = None
    """A postgresql:// URL: the journal lives there (the PostgreSQL backend); None: SQLite."""

    @property
    def settings(self) -> Settings:
        return Settings(data_dir=self.data_dir, local_port=self.port, journal_url=self.journal_url)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
        env.update(ANCHOR_DATA_DIR=str(self.data_dir), ANCHOR_LOCAL_PORT=str(self.port))
        if self.journal_url:
            env["ANCHOR_JOURNAL_URL"] = self.journal_url
        return env

    def cli(self, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            [str(ANCHOR_BIN), *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"anchor {' '.join(args)} -> {result.returncode}\n{result.stdout}\n{result.stderr}")
        return result


def _start(data_dir: Path) -> Chain:
    port = free_port()
    node = LocalChain(data_dir, port=port)
    node.up()
    return Chain(data_dir, port, node)


@contextmanager
def deployed(data_dir: Path) -> Iterator[Chain]:
    """An anvil of its own with the registry deployed through the CLI; stopped on exit."""
    chain = _start(data_dir)
    try:
        chain.cli("deploy", check=True)
        yield chain
    finally:
        chain.node.down()


@pytest.fixture(scope="session")
def deployed_chain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chain]:
    """One deployed chain shared by the read-mostly tests."""
    with deployed(tmp_path_factory.mktemp("anchor-data")) as chain:
        yield chain


@pytest.fixture(scope="session")
def postgres_server_url() -> Iterator[str]:
    """One real PostgreSQL server for the session (tests/postgres.py); each test takes a database."""
    from tests.postgres import postgres_server

    with postgres_server() as url:
        yield url


@pytest.fixture
def postgres_url(postgres_server_url: str, request: pytest.FixtureRequest) -> str:
    """A fresh database of its own on the session's server."""
    from tests.postgres import fresh_database

    return fresh_database(postgres_server_url, "t_" + uuid.uuid4().hex[:16])


JOURNAL_BACKENDS = ("sqlite", "postgresql")


def journal_url_for(backend: str, request: pytest.FixtureRequest) -> str | None:
    """None for the SQLite journal; a fresh database on the session's server for PostgreSQL."""
    if backend == "sqlite":
        return None
    from tests.postgres import fresh_database

    return fresh_database(request.getfixturevalue("postgres_server_url"), "j_" + uuid.uuid4().hex[:16])


@pytest.fixture(params=JOURNAL_BACKENDS)
def journal_url(request: pytest.FixtureRequest) -> str | None:
    """Each journal test runs on both backends: SQLite in the data dir, and a real PostgreSQL."""
    return journal_url_for(request.param, request)


@pytest.fixture
def backend_chain(fresh_chain: Chain, journal_url: str | None) -> Chain:
    """A fresh chain whose journal is on the backend under test."""
    return dataclasses.replace(fresh_chain, journal_url=journal_url)


@pytest.fixture
def fresh_chain(tmp_path: Path) -> Iterator[Chain]:
    """An anvil of its own, for tests that restart, replace code or need an empty registry."""
    chain = _start(tmp_path / "data")
    yield chain
    chain.node.down()


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    """A copy of the example bundle, made unique per test (the registry is write-once and shared)."""
    target = tmp_path / "bundle"
    shutil.copytree(ROOT / "examples" / "bundle", target)
    (target / "run-id.txt").write_text(uuid.uuid4().hex)
    return target
