"""The public face: `anchor.__all__` and the `__all__` of the documented submodules (docs/python.md) are
the API, each name one object wherever it is reached, and no public signature hands a caller a type it
cannot name (an internal class) or one that says nothing (`Any`)."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import subprocess
import sys
import types
import typing
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, get_args, get_origin

import pytest

from tests.conftest import ROOT

if TYPE_CHECKING:
    from anchor.manifest.filetree import FileTreeManifest

DOCUMENTED = ("anchor", "anchor.errors", "anchor.proof", "anchor.mlflow")
"""The modules whose `__all__` is public (docs/python.md, "What is public")."""


def _public() -> dict[str, object]:
    found = {}
    for name in DOCUMENTED:
        module = importlib.import_module(name)
        for attribute in module.__all__:
            found[f"{name}.{attribute}"] = getattr(module, attribute)
    return found


def _imports_of(module: types.ModuleType) -> dict[str, object]:
    """The names a module imports only for its annotations (`if TYPE_CHECKING:`), imported here, so that
    its signatures resolve as a type checker reads them."""
    names: dict[str, object] = {}
    tree = ast.parse(inspect.getsource(module))
    hidden = [n for n in tree.body if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test)]
    for node in [statement for block in hidden for statement in block.body]:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            source = importlib.import_module(node.module)
            for alias in node.names:
                if hasattr(source, alias.name):
                    names[alias.asname or alias.name] = getattr(source, alias.name)
                else:  # a submodule
                    names[alias.asname or alias.name] = importlib.import_module(f"{node.module}.{alias.name}")
    return names


def _hints(owner: object, where: object) -> dict[str, object]:
    module = sys.modules[getattr(where, "__module__", "")]
    space = {**_imports_of(module), **vars(module)}
    return typing.get_type_hints(owner, globalns=space)


def _named(hint: object) -> Iterator[object]:
    """Every type a hint names, through unions, generics and Literal's values (not types)."""
    origin = get_origin(hint)
    if origin is typing.Literal:
        return
    if origin is not None:
        if origin not in (typing.Union, types.UnionType):
            yield origin
        for argument in get_args(hint):
            if argument is not Ellipsis:
                yield from _named(argument)
        return
    yield hint


def _signatures(name: str, obj: object) -> Iterator[tuple[str, object]]:
    """(where, hint) of every parameter, return, field and method of a public name."""
    if isinstance(obj, types.ModuleType):
        return
    if inspect.isfunction(obj):
        for part, hint in _hints(obj, obj).items():
            yield f"{name}({part})", hint
        return
    if not isinstance(obj, type):
        return
    if typing.is_typeddict(obj) or dataclasses.is_dataclass(obj):
        for part, hint in _hints(obj, obj).items():
            if not part.startswith("_"):
                yield f"{name}.{part}", hint
    for klass in obj.__mro__:
        if not klass.__module__.startswith("anchor"):
            continue
        owner = name if klass is obj else f"{klass.__module__}.{klass.__qualname__}"  # said once, where defined
        for attribute, member in vars(klass).items():
            if attribute.startswith("_") and attribute != "__init__":
                continue
            if attribute == "__init__" and dataclasses.is_dataclass(klass):
                continue  # its fields, above
            function = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
            if inspect.isfunction(function):
                for part, hint in _hints(function, klass).items():
                    yield f"{owner}.{attribute}({part})", hint


def _faults() -> list[str]:
    public = _public()
    known = {id(obj) for obj in public.values()}
    faults: dict[str, None] = {}  # in order, each once
    for name, obj in public.items():
        for where, hint in _signatures(name, obj):
            for named in _named(hint):
                ours = isinstance(named, type) and named.__module__.split(".")[0] in ("anchor", "api")
                if named is Any:
                    faults[f"{where}: Any"] = None
                elif ours and id(named) not in known:
                    faults[f"{where}: {named.__module__}.{named.__qualname__} is not public"] = None  # type: ignore[union-attr]
    return list(faults)


def test_no_public_signature_names_an_internal_type_or_any() -> None:
    faults = _faults()
    assert not faults, "\n".join(faults)


def test_every_public_name_is_one_object_wherever_it_is_reached() -> None:
    """`anchor.Retracted` was what `retract` returned while `anchor.errors.Retracted` was the error: one
    name, two objects. Every name exported twice is now the same object."""
    import anchor
    import anchor.errors
    import anchor.proof

    assert anchor.Retracted is anchor.errors.Retracted
    for name in anchor.__all__:
        for module in (anchor.errors, anchor.proof):
            if name in module.__all__:
                assert getattr(anchor, name) is getattr(module, name), name
    for name in anchor.errors.__all__:
        error = getattr(anchor.errors, name)
        assert error.__module__ == "anchor.errors" and error.__name__ == name, name
    assert {n for n in anchor.__all__ if isinstance(getattr(anchor, n), type)} >= {"Retracted", "Tampered"}
    answer = subprocess.run(
        [sys.executable, "-c", "import anchor, anchor.errors; assert anchor.Retracted is anchor.errors.Retracted"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert answer.returncode == 0, answer.stderr


def test_the_walk_finds_an_internal_type_and_any_in_a_signature(monkeypatch: pytest.MonkeyPatch) -> None:
    """The walk itself can fail: a public function that returns an internal type, or takes Any, is named."""
    import anchor

    def leaky(path: str, hint: Any) -> FileTreeManifest:
        raise NotImplementedError

    monkeypatch.setattr(anchor, "__all__", [*anchor.__all__, "leaky"])
    monkeypatch.setattr(anchor, "leaky", leaky, raising=False)
    faults = [f for f in _faults() if f.startswith("anchor.leaky")]
    internal = "anchor.leaky(return): anchor.manifest.filetree.FileTreeManifest is not public"
    assert faults == ["anchor.leaky(hint): Any", internal], faults
