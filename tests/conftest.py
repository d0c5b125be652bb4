"""Shared fixtures: a real anvil (through our own LocalChain), a deployed registry, CLI runners;
the test tiers, the seed and the grouping of tests across parallel workers.

Chain tests never skip: if anvil is missing, the fixture fails loudly.

Tiers (docs in README "Tests"): a test is marked `chain`, `postgres`, `browser`, `sandbox` or `soak` from the
fixtures it uses (a fixture says what it touches with `@touches(...)`), or by an explicit mark where it
starts one itself; `make check` runs everything else, `make test` runs everything. In `make check` a
test that starts the local chain without being marked fails at once instead of silently making the
fast tier slow.

Randomness: every random choice a test makes comes from `ANCHOR_TEST_SEED` (set it to replay a run;
unset, one is drawn, printed in the header, and shown with every failure), through `test_rng()`.
"""

from __future__ import annotations

import dataclasses
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from anchor.chain.node import LocalChain
from anchor.settings.session import Settings
from tests.cli import ANCHOR_BIN, run_anchor

ROOT = Path(__file__).resolve().parents[1]
__all__ = ["ANCHOR_BIN", "ROOT", "Chain", "deployed", "free_port", "test_rng", "touches"]

TIERS = ("chain", "postgres", "browser", "sandbox", "soak")
"""What a test touches beyond this process and its temporary files; `make check` runs none of them."""

F = TypeVar("F", bound=Callable[..., object])


def touches(*tiers: str) -> Callable[[F], F]:
    """Say what a fixture starts (an anvil, a PostgreSQL server, Chromium): every test that uses it,
    directly or through another fixture, is marked with those tiers at collection."""
    unknown = set(tiers) - set(TIERS)
    assert not unknown, f"unknown tier(s) {unknown}"

    def mark(fixture: F) -> F:
        fixture.anchor_touches = frozenset(tiers)  # type: ignore[attr-defined]
        return fixture

    return mark


# -- the seed -------------------------------------------------------------------------------------


def _seed_from_environment() -> str:
    return os.environ.get("ANCHOR_TEST_SEED") or secrets.token_hex(4)


# The venv's interpreter first on PATH, as `. .venv/bin/activate` does (README): what the tests run as
# `python3` (attempts, evaluators, the demo's JSON one-liners: several hundred) skips the pyenv shim,
# 130 ms a start against 40 ms here.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"

SEED = _seed_from_environment()
os.environ["ANCHOR_TEST_SEED"] = SEED  # parallel workers start after this and inherit the same seed


def test_rng(*scope: object) -> random.Random:
    """A random generator for one test's choices: the same seed and scope give the same choices."""
    return random.Random(f"{SEED}:" + ":".join(map(str, scope)))  # noqa: S311 - test choices, not crypto


test_rng.__test__ = False  # type: ignore[attr-defined]  # a helper, not a test


def pytest_report_header() -> str:
    return f"ANCHOR_TEST_SEED={SEED} (set it to replay this run's random choices)"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed:
        report.sections.append(("seed", f"ANCHOR_TEST_SEED={SEED} replays this test's random choices"))


# -- tiers and workers ----------------------------------------------------------------------------

GROUPS = {
    # one demo run feeds these three modules (the `demo_run` fixture): one worker runs them all
    "tests/project/test_demo.py": "demo",
    "tests/explorer/test_chain_only.py": "demo",
    "tests/explorer/test_explorer_pages.py": "demo",
    "tests/explorer/test_home_page.py": "demo",
    "tests/explorer/test_trial_numbering.py": "demo",
}
"""Modules whose tests must share a worker with other modules."""

SHARED = {
    "tests/api/test_api_routes.py",
    "tests/hostile/test_hostile_clients.py",
    "tests/mlflow/test_mlflow.py",
    "tests/mlflow/test_promotion_lineage.py",
    "tests/mlflow/test_promotion_page.py",
    "tests/mlflow/test_research_runs.py",
}
"""Modules whose tests share a module fixture (one deployed chain, one server): one worker each, so the
fixture is set up once. Collection refuses a module fixture in a module that is in none of these sets."""

SPLIT = {"tests/faults/test_crash_seams.py", "tests/hostile/test_fuzzed_proofs.py"}
"""Modules with a module fixture whose tests may still run on different workers (each test is long,
and a worker that takes one sets up the module's chain for itself)."""


LONG_FIRST = (
    "tests/faults/test_soak.py",
    "tests/explorer/test_chain_only.py",
    "tests/project/test_demo.py",
    "tests/explorer/test_explorer_pages.py",
    "tests/faults/test_replicas.py",
    "tests/project/test_wheel.py",
    "tests/missions/test_mission_run.py",
    "tests/api/test_api_fuzz.py",
)
"""Modules handed out first (the longest work: a worker that gets it last ends the run late)."""


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def scope_of(nodeid: str) -> str:
    """Which tests must run on the same worker: a group's name, a module, or the test alone (any worker)."""
    module = _module(nodeid)
    if module in GROUPS:
        return GROUPS[module]
    return module if module in SHARED else nodeid


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """`--dist loadgroup`, grouped by `scope_of`. (xdist's own loadgroup reads `xdist_group` marks by
    rewriting a test's `_nodeid`, which pytest 9 no longer reads: every test would go anywhere.)"""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByScope(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    return ByScope(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        found: set[str] = set()
        for name in getattr(item, "fixturenames", ()):
            for fixturedef in item._fixtureinfo.name2fixturedefs.get(name, ()):  # type: ignore[attr-defined]
                found |= getattr(fixturedef.func, "anchor_touches", frozenset())
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "postgresql" in callspec.params.values():
            found.add("postgres")  # the PostgreSQL half of a journal-backend parametrisation
        for tier in sorted(found):
            item.add_marker(getattr(pytest.mark, tier))
        module = _module(item.nodeid)
        if _uses_module_fixture(item) and module not in SHARED | SPLIT | set(GROUPS):
            raise pytest.UsageError(f"{module} has a module fixture: add it to SHARED, SPLIT or GROUPS in conftest")
    first = {module: rank for rank, module in enumerate(LONG_FIRST)}
    items.sort(key=lambda item: first.get(_module(item.nodeid), len(first)))  # stable: modules stay whole


def _uses_module_fixture(item: pytest.Item) -> bool:
    definitions = item._fixtureinfo.name2fixturedefs.values()  # type: ignore[attr-defined]
    return any(fixturedef.scope == "module" for fixturedefs in definitions for fixturedef in fixturedefs)


@pytest.fixture(autouse=True)
def _unmarked_tests_start_no_chain(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast tier stays fast: a test not marked `chain` that starts the local chain fails, naming
    the mark it lacks (only in process; a child `anchor` that starts one is caught by the time it takes)."""
    if request.node.get_closest_marker("chain"):
        return

    def refused(self: LocalChain, timeout: float = 30.0) -> object:
        raise AssertionError(f"{request.node.nodeid} starts the local chain: mark it chain or use a chain fixture")

    monkeypatch.setattr(LocalChain, "up", refused)


@pytest.fixture(autouse=True)
def _a_per_user_data_dir_of_its_own(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where no `.anchor/` is found, anchor uses the per-user data dir ($XDG_DATA_HOME/anchor): each
    test gets one of its own (made only if used), never the user's ~/.local/share/anchor, which
    another test, or a person, may be using."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("xdg-data")))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def anvil(chain_id: int, block_time: int | None, *extra: str) -> Iterator[str]:
    """An anvil of the test's own on a free port (a public chain's id, its block time; None: it mines
    no block at all; `extra`: more of anvil's options); stopped by the process group started here,
    never by name."""
    from anchor.chain.node import rpc_call
    from anchor.chain.toolchain import tool

    port = free_port()
    mining = ["--block-time", str(block_time)] if block_time else ["--no-mining"]
    node = subprocess.Popen(
        [str(tool("anvil")), "--port", str(port), "--chain-id", str(chain_id), *mining, *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(400):
            try:
                rpc_call(url, "eth_chainId", timeout=0.5)
                break
            except Exception:  # noqa: BLE001 - not up yet
                time.sleep(0.05)
        yield url
    finally:
        os.killpg(node.pid, signal.SIGTERM)
        node.wait()


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
        """`anchor ARGS` against this chain, in this process (tests/cli.py says why that is the same)."""
        return run_anchor(args, self.env(), check=check)


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
@touches("chain")
def deployed_chain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chain]:
    """One deployed chain shared by the read-mostly tests."""
    with deployed(tmp_path_factory.mktemp("anchor-data")) as chain:
        yield chain


@pytest.fixture(scope="session")
@touches("postgres")
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
@touches("chain")
def backend_chain(fresh_chain: Chain, journal_url: str | None) -> Chain:
    """A fresh chain whose journal is on the backend under test."""
    return dataclasses.replace(fresh_chain, journal_url=journal_url)


@pytest.fixture
@touches("chain")
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


EVAL_IMAGE = "ghcr.io/anchor/eval@sha256:" + "ab" * 32


def result_bundle_spec(where: Path, output: str = "bundle") -> Path:
    """A bundle.toml in `where` for the result bundle `where/<output>` (mission and policy files beside
    it, two milestones): what `anchor bundle SPEC --anchor` anchors with its timing record."""
    (where / "mission.md").write_text("mission")
    (where / "policy.toml").write_text("policy")
    spec = where / "bundle.toml"
    spec.write_text(
        f'mission = "mission.md"\ndata_snapshot_sha256 = "{"cd" * 32}"\nimage = "{EVAL_IMAGE}"\n'
        f'evaluator_policy = "policy.toml"\noutput = "{output}"\noutput_name = "demo"\n'
        "[milestones]\nsubmitted = 2026-11-30T03:00:00Z\ncompleted = 2026-11-30T03:04:00Z\n"
    )
    return spec


# -- the demo, once ----------------------------------------------------------------------------------


def demo_env(data: Path) -> dict[str, str]:
    """The environment `make demo` gives examples/demo.sh, for a data dir of the test's own."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANCHOR_", "GIT_"))}
    env.update(ANCHOR_DATA_DIR=str(data), ANCHOR_LOCAL_PORT=str(free_port()))
    return env


def run_demo(env: dict[str, str]) -> str:
    """examples/demo.sh exactly as `make demo` runs it; its stdout, or a failure showing its end."""
    result = subprocess.run(
        ["bash", str(ROOT / "examples" / "demo.sh")], env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


@dataclass(frozen=True)
class DemoRun:
    """One run of the demo on a fresh data dir (its chain stopped, its state saved, as the demo leaves it)."""

    data: Path
    env: dict[str, str]
    stdout: str

    def copy(self, target: Path) -> dict[str, str]:
        """A copy of the demo's data dir at `target` (its chain's state included) with a port of its own:
        for a test that changes or deletes what it is given. Returns the copy's environment."""
        shutil.copytree(self.data, target, symlinks=True)
        return demo_env(target)


@pytest.fixture(scope="session")
@touches("chain")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoRun]:
    """The demo, run once per worker and shared by the tests that read what it made (test_demo,
    test_explorer_pages, test_chain_only; one xdist group). Each leaves its chain stopped."""
    data = tmp_path_factory.mktemp("demo") / "demo"
    env = demo_env(data)
    yield DemoRun(data, env, run_demo(env))
    LocalChain(data).down()  # in case a reader left it running


@pytest.fixture(scope="session")
@touches("chain")
def fresh_compile(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], object]:
    """The registry sources compiled once per worker with the pinned solc, into a directory of the
    session's own (never the user's build cache): the tests that compare a fresh compile with the
    committed build, forge's output and the bytecode rules share it. Touches the chain's toolchain."""
    from anchor.chain.compiler import compile_registry

    build = tmp_path_factory.mktemp("fresh-compile")

    def compiled(version: str) -> object:
        return compile_registry(build, version)  # the first call compiles every version; later ones read it

    return compiled


STRANGER_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d"  # anvil's second account


def lookalike_registry(rpc_url: str, key: str = STRANGER_KEY) -> tuple[str, dict[str, object]]:
    """A byte-identical copy of the registry at another address than the canonical one (plain CREATE by
    `key`, as anyone can): (its address, the deploying receipt)."""
    from eth_account import Account

    from anchor.chain.compiler import shipped_registry
    from anchor.chain.connection import reach, web3_for

    rpc, chain_id = reach(rpc_url)
    w3, compiled, account = web3_for(rpc), shipped_registry(), Account.from_key(key)
    tx = (
        w3.eth.contract(abi=compiled.abi, bytecode=compiled.bytecode)
        .constructor()
        .build_transaction(
            {"from": account.address, "nonce": w3.eth.get_transaction_count(account.address), "chainId": chain_id}
        )
    )
    sent = w3.eth.send_raw_transaction(account.sign_transaction(tx).raw_transaction)
    receipt = dict(w3.eth.wait_for_transaction_receipt(sent))
    return str(receipt["contractAddress"]), receipt
