"""The layers stay layered: the pure core (manifest, batch) needs no chain, no web framework and no
database, and the CLI starts without web3 (issue 13). Each check runs in a fresh interpreter, so what
another test imported cannot hide a violation."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import anchor.batch
import anchor.manifest

HEAVY = ("web3", "eth_account", "fastapi", "starlette", "sqlite3", "psycopg", "requests", "solcx")


def _imported_by(modules: list[str]) -> list[str]:
    probe = (
        "import importlib, json, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return list(json.loads(out.stdout))


def test_the_pure_core_imports_no_chain_web_or_database_library() -> None:
    core = [f"anchor.manifest.{m.name}" for m in pkgutil.iter_modules(anchor.manifest.__path__)]
    core += [f"anchor.batch.{m.name}" for m in pkgutil.iter_modules(anchor.batch.__path__)]
    assert len(core) >= 10
    assert _imported_by(core) == []


def test_the_cli_start_up_path_imports_no_chain_or_web_library() -> None:
    assert [m for m in _imported_by(["anchor.cli.app"]) if m != "sqlite3"] == []
