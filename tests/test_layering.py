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


# Which part of the package may import which (docs/architecture.md). Every `import anchor.X` and
# `from anchor.X import ...` counts, inside functions too: a lazy import is still a dependency.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "files": {"errors"},
    "config": {"errors"},
    "manifest": {"errors"},
    "batch": {"errors"},
    "ingest": {"errors", "manifest"},
    "proof_file": {"errors", "files", "ingest", "manifest"},
    "session": {"errors", "config", "chain"},
    "chain": {"errors", "files", "session"},
    "explorer": {"chain"},
    "verify": {"errors", "manifest", "batch", "proof_file", "chain", "session"},
    "journal": {"errors", "files", "manifest", "batch", "ingest", "proof_file", "chain", "session"},
    "prove": {"errors", "manifest", "proof_file", "verify"},
    "anchoring": {"errors", "manifest", "proof_file", "journal", "session"},
    "lookup": {"errors", "manifest", "proof_file", "chain", "explorer", "verify", "session"},
    "research": {"errors", "manifest", "proof_file", "chain", "journal", "verify", "anchoring", "session"},
    "cli": {"errors", "files", "config", "manifest", "proof_file", "session", "chain", "explorer", "verify",
            "journal", "prove", "anchoring", "lookup", "research"},
    "__main__": {"cli"},
}  # fmt: skip


def _anchor_imports() -> dict[str, set[str]]:
    import ast
    from pathlib import Path

    root = Path(anchor.manifest.__file__).parents[1]
    found: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        part = path.relative_to(root).parts[0].removesuffix(".py")
        names: list[str] = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.append(node.module)
            elif isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
        found.setdefault(part, set()).update(
            n.split(".")[1] for n in names if n.startswith("anchor.") and n.split(".")[1] != part
        )
        if any(n == "api" or n.startswith("api.") for n in names):
            found[part].add("api")
    return found


def test_each_layer_imports_only_the_layers_below_it() -> None:
    found = _anchor_imports()
    assert set(found) <= set(ALLOWED) | {"__init__"}, (
        f"a new top-level part: place it in ALLOWED: {set(found) - set(ALLOWED)}"
    )
    wrong = {
        part: sorted(used - ALLOWED.get(part, set())) for part, used in found.items() if used - ALLOWED.get(part, set())
    }
    assert wrong == {}, f"imports across the layering (docs/architecture.md): {wrong}"
    assert not any("api" in used for used in found.values())  # the package never imports the service


def test_every_error_class_is_declared_in_the_one_error_module() -> None:
    """One hierarchy, one place (anchor/errors.py), mapped to exit codes and HTTP statuses there."""
    import importlib

    import api
    from anchor.errors import AnchorError

    for package in (anchor, api):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not info.name.endswith("__main__"):  # running it would start the CLI
                importlib.import_module(info.name)

    def subclasses(cls: type) -> list[type]:
        return [cls, *(s for sub in cls.__subclasses__() for s in subclasses(sub))]

    ours = [cls for cls in subclasses(AnchorError) if cls.__module__.split(".")[0] in ("anchor", "api")]
    declared = {cls.__qualname__: cls.__module__ for cls in ours}
    assert len(declared) >= 20
    assert {name: module for name, module in declared.items() if module != "anchor.errors"} == {}
