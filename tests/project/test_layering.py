"""The layers stay layered: the pure core (manifest, batch) needs no chain, no web framework and no
database, and the CLI starts without web3. Each check runs in a fresh interpreter, so what
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
    # ground
    "errors": set(),
    "layout": {"record"},  # where each thing is under the data dir (anchor/layout.py): paths only
    "record": set(),  # records and Value (anchor/record.py): every layer declares its values with them
    "files": {"errors", "record"},
    "settings": {"errors", "layout", "record"},
    # formats: the pure core, hostile decoders, the proof file
    "manifest": {"errors", "files", "record"},  # files.read_document: a mission file or bundle spec a user names
    "batch": {"errors", "manifest", "record"},  # manifest.keccak: the EVM's hash, one implementation
    "ingest": {"errors", "manifest", "record"},
    "proof": {"errors", "files", "ingest", "manifest", "record"},
    # the chain, then the journal that drives effects onto it (a store: no settings, no proof files)
    "chain": {"layout", "errors", "files", "record", "settings", "manifest"},  # manifest: keccak256, the core's hash
    # settings: anchor.settings.model only, for the tests' fault hook (ANCHOR_FAULT); the store reads no setting
    "journal": {"layout", "errors", "files", "manifest", "batch", "ingest", "chain", "settings", "record"},
    # sealed proofs: a proof's anchors sealed from the chain, and checked with no socket
    "sealing": {"errors", "manifest", "proof", "chain", "settings", "record"},
    # read-back: never writes, never the journal
    "readback": {"layout", "errors", "ingest", "manifest", "batch", "proof", "chain", "record", "settings", "sealing"},
    # the fence: untrusted code run on this host (attempts, proposers, evaluators, mission commands) under
    # an unprivileged uid, a sandbox and kernel-enforced bounds; the harness's git, hardened against what
    # that code leaves. Below every application that runs untrusted code, above nothing but the ground
    "fence": {"errors", "files", "settings", "record"},
    # application
    "anchoring": {
        "layout",
        "errors",
        "files",
        "manifest",
        "batch",
        "proof",
        "chain",
        "journal",
        "readback",
        "settings",
        "record",
    },
    # sealing: a research claim's proofs and lineage receipts sealed for an offline check (anchor.research.claim)
    "research": {
        "layout",
        "errors",
        "files",
        "manifest",
        "proof",
        "chain",
        "journal",
        "readback",
        "anchoring",
        "settings",
        "fence",
        "sealing",
        "record",
    },
    "attest": {
        "layout",
        "errors",
        "files",
        "ingest",
        "manifest",
        "proof",
        "readback",
        "anchoring",
        "settings",
        "record",
    },
    "missions": {
        "layout",
        "errors",
        "files",
        "manifest",
        "proof",
        "settings",
        "anchoring",
        "research",
        "fence",
        "journal",
        "readback",
        "chain",
        "record",
    },  # readback: a resume pin's proof; chain: the deployment a pod checks
    # read-back for someone with only the chain: the registry's events, and published claims compared
    "index": {
        "layout",
        "errors",
        "manifest",
        "chain",
        "research",
        "settings",
        "readback",
        "record",
    },  # readback: the quorum vote
    # the library's face: one Verifier (the Stamper is anchoring's, below research and missions,
    # which take one), and `import anchor`'s lazy names over both
    "library": {"errors", "settings", "manifest", "proof", "readback", "chain", "anchoring", "sealing", "record"},
    # the public face re-exports, lazily, each public type where it is defined (one object everywhere):
    # the proof file's records, a verdict's parts, what seal wrote, where a data dir keeps what
    "__init__": {"errors", "settings", "anchoring", "library", "proof", "readback", "sealing", "layout", "record"},
    # the MLflow bridge: a run read into a manifest, anchored by the one Stamper, verified by the one
    # Verifier; MLflow itself imported only here
    # chain: rpc.failure_words (why a server gave no answer) and a promotion's lineage record read back;
    # research: a search's ledger logged as runs (anchor.mlflow.research); files: a promotion record kept
    "mlflow": {
        "errors",
        "layout",
        "settings",
        "manifest",
        "proof",
        "anchoring",
        "library",
        "readback",
        "chain",
        "research",
        "files",
        "record",
    },
    # interfaces
    "cli": {
        "errors",
        "layout",
        "files",
        "settings",
        "manifest",
        "proof",
        "chain",
        "journal",
        "readback",
        "anchoring",
        "research",
        "attest",
        "missions",
        "index",
        "library",
        "sealing",
        "mlflow",
        "api",
        "record",
    },  # api: `anchor serve` only (below)
    "__main__": {"cli", "record"},
}
GROUND_MODULES = {"__init__", "__main__", "errors", "files", "layout", "record"}


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
    # the package never imports the service, but for `anchor serve`, which starts it (its settings and
    # config handed over as objects, not through the environment)
    assert [part for part, used in found.items() if "api" in used] == ["cli"]
    assert _importers_of("api") == ["anchor/cli/deploy_cmds.py"]
    assert _importers_of("anchor.settings", under="anchor/journal/") == ["anchor/journal/faults.py"]
    assert _importers_of("anchor.settings.model", under="anchor/journal/") == ["anchor/journal/faults.py"]


def test_read_back_imports_nothing_above_it() -> None:
    """Every proof form is decoded and verified in the read-back layer: the in-toto statements and sealed
    forms are its adapters, and the checklist calls nothing above it (the statements' verification once
    lived in anchor.attest, beside their writing, and the library picked the form by calling up into it).
    Whoever picks a form, the library included, does so by read-back's own decoder."""
    found = _anchor_imports()
    above = {"anchoring", "research", "attest", "missions", "index", "library", "mlflow", "cli", "api", "journal"}
    assert found["readback"] & above == set()
    assert found["readback"] <= ALLOWED["readback"]
    assert "attest" not in found["library"] and "attest" not in ALLOWED["library"]


def _importers_of(module: str, under: str = "anchor/") -> list[str]:
    """The files under `under` that import `module` or a module inside it."""
    import ast
    from pathlib import Path

    root = Path(anchor.manifest.__file__).parents[2]
    hits = []
    for path in sorted((root / under).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else ([a.name for a in node.names] if isinstance(node, ast.Import) else [])
            )
            if any(n == module or n.startswith(module + ".") for n in names):
                hits.append(path.relative_to(root).as_posix())
                break
    return hits


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


def test_the_package_root_holds_only_packages_and_the_ground_modules() -> None:
    """A new capability gets a package named for its layer, not a loose module beside `errors`."""
    from pathlib import Path

    root = Path(anchor.manifest.__file__).parents[1]
    loose = {p.stem for p in root.glob("*.py")} - GROUND_MODULES
    assert loose == set(), f"loose modules at the package root: {sorted(loose)}"


def test_the_layer_table_is_acyclic() -> None:
    """If A may import B, B may not import A, directly or through others: layers, not a web."""
    done: set[str] = set()

    def visit(part: str, path: tuple[str, ...]) -> None:
        assert part not in path, f"a cycle in ALLOWED: {' -> '.join((*path, part))}"
        if part in done:
            return
        for below in ALLOWED.get(part, set()):
            visit(below, (*path, part))
        done.add(part)

    for part in ALLOWED:
        visit(part, ())


def _module_graph() -> dict[str, set[str]]:
    """Module -> the modules of the package it imports at run time (lazy imports included; imports
    under `if TYPE_CHECKING:` excluded, they never run)."""
    import ast
    from pathlib import Path

    root = Path(anchor.manifest.__file__).parents[1]
    modules: dict[str, Path] = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def runtime_nodes(node: ast.AST) -> list[ast.AST]:
        found: list[ast.AST] = []
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            found += [child, *runtime_nodes(child)]
        return found

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        for node in runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:  # `from pkg import submodule` depends on the submodule only
                    sub = f"{node.module}.{alias.name}"
                    deps.add(sub if sub in modules else node.module)
            elif isinstance(node, ast.Import):
                deps.update(alias.name for alias in node.names)
        graph[name] = {d for d in deps if d in modules and d != name}
    return graph


def test_no_module_of_the_package_imports_itself_through_others() -> None:
    """No import cycle between modules, lazy imports included: a cycle is two modules that are
    really one, or a layer that reaches up (the manifest kinds and their decoder once did)."""
    graph = _module_graph()
    assert len(graph) >= 60
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for dep in sorted(graph[module]):
            if state.get(dep) == 1:
                cycles.append([*path[path.index(dep) :], dep] if dep in path else [module, dep])
            elif dep not in state:
                visit(dep, [*path, dep])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert cycles == []


def test_no_name_is_joined_onto_the_data_dir_outside_its_layout() -> None:
    """eleven layout names were joined onto the data dir in about fifteen modules. Every path
    under it is now anchor.layout.DataDir's: a `data_dir / "..."` or `proofs_dir / ...` anywhere else in
    the package or the service fails here, naming the file and line."""
    import re
    from pathlib import Path

    root = Path(anchor.manifest.__file__).parents[2]
    joined = re.compile(r"\b(data_dir|proofs_dir)\s*/")
    found = [
        f"{path.relative_to(root)}:{number}: {line.strip()}"
        for package in ("anchor", "api")
        for path in sorted((root / package).rglob("*.py"))
        if path.name != "layout.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if joined.search(line)
    ]
    assert found == []


def test_only_the_quorum_reads_one_endpoint() -> None:
    """Every chain read of a verdict, and of the proofs it leans on (timing record, resume pin, ledger
    checkpoint, a service's anchor), goes through `agreed_on_chain`: a timing record read from the first
    `--rpc-url` alone let a lying endpoint listed first make a verified bundle "not anchored"."""
    import re
    from pathlib import Path

    root = Path(anchor.manifest.__file__).parents[2]
    calls = [
        (str(path.relative_to(root)), line.strip())
        for folder in ("anchor", "api")
        for path in (root / folder).rglob("*.py")
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.search(r"\b_on_one_endpoint\(", line) and not line.lstrip().startswith("def ")
    ]
    assert len(calls) == 1 and calls[0][0] == "anchor/readback/checklist.py" and "lambda one:" in calls[0][1], calls
