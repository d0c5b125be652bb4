"""docs/architecture.md draws the package as the code has it: every part under anchor/ (and the service,
api/) in its layer, and for each the parts it imports. The imports column is drawn from the code, every
`import` counted (lazy ones and `if TYPE_CHECKING:` ones too, as the layering table counts them); the
layers are the document's claim, and held here: an import may point sideways or down, never up.

Redraw the table after a change of imports with `python -m tests.docs.test_architecture`: it rewrites the
imports column, and a new part comes in with no layer, which this test refuses until it is given one.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys

from tests.conftest import ROOT

DOC = ROOT / "docs" / "architecture.md"
BEGIN = "<!-- the table below is drawn from the code: python -m tests.docs.test_architecture -->"
END = "<!-- end of the drawn table -->"
UNPLACED = "(no layer yet)"
Row = tuple[str, str, list[str]]


def parts() -> set[str]:
    """Every part of the package: its packages, the modules at its root (the ground, `import anchor`'s
    face, `python -m anchor`), and the service beside it."""
    found = {p.parent.name for p in (ROOT / "anchor").glob("*/__init__.py")}
    found |= {p.stem for p in (ROOT / "anchor").glob("*.py")}
    return found | {"api"}


def imports() -> dict[str, set[str]]:
    """Part -> the other parts its modules import."""
    known = parts()
    found: dict[str, set[str]] = {part: set() for part in known}
    files = [(p, p.relative_to(ROOT / "anchor").parts[0].removesuffix(".py")) for p in (ROOT / "anchor").rglob("*.py")]
    files += [(p, "api") for p in (ROOT / "api").rglob("*.py")]
    for path, part in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module == "anchor":  # `from anchor import errors` is the module; `__version__` the face
                    names += [f"anchor.{a.name}" if a.name in known else "anchor.__init__" for a in node.names]
                else:
                    names.append(node.module)
            elif isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
            for name in names:
                words = name.split(".")
                used = "__init__" if words == ["anchor"] else words[1] if words[0] == "anchor" else words[0]
                if (words[0] == "anchor" or used == "api") and used in known and used != part:
                    found[part].add(used)
    return found


def drawn(text: str) -> list[Row]:
    """The document's table: (layer, part, imports) top to bottom."""
    table = text[text.index(BEGIN) + len(BEGIN) : text.index(END)]
    rows = []
    for line in table.strip().splitlines()[2:]:
        layer, part, used = (cell.strip() for cell in line.strip("|").split("|"))
        rows.append((layer, part.strip("`"), re.findall(r"`([\w]+)`", used)))
    return rows


def draw(rows: list[Row]) -> str:
    lines = ["| layer | part | imports |", "|---|---|---|"]
    lines += [
        f"| {layer} | `{part}` | {', '.join(f'`{u}`' for u in used) or '(nothing of anchor)'} |"
        for layer, part, used in rows
    ]
    return "\n".join(lines)


def redrawn(text: str) -> str:
    """The document with its imports column drawn again from the code: the parts kept in their layers
    and order, a part gone dropped, a new one appended with no layer."""
    found = imports()
    kept = [(layer, part, sorted(found[part])) for layer, part, _ in drawn(text) if part in found]
    kept += [(UNPLACED, part, sorted(found[part])) for part in sorted(set(found) - {p for _, p, _ in kept})]
    head, rest = text.split(BEGIN, 1)
    return head + BEGIN + "\n\n" + draw(kept) + "\n\n" + END + rest.split(END, 1)[1]


def _allowed() -> dict[str, set[str]]:
    """The layering table of the layering test, wherever the tests keep it."""
    [path] = [p for p in (ROOT / "tests").rglob("test_layering.py")]
    spec = importlib.util.spec_from_file_location("layering_table", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.ALLOWED)


def test_the_architecture_draws_every_part_and_exactly_the_imports_the_code_has() -> None:
    text = DOC.read_text(encoding="utf-8")
    rows = drawn(text)
    hint = "run `python -m tests.docs.test_architecture` to draw the table again from the code"
    assert sorted(part for _, part, _ in rows) == sorted(parts()), f"a part missing or gone: {hint}"
    found = imports()
    wrong = {
        part: {
            "drawn, not imported": sorted(set(used) - found[part]),
            "imported, not drawn": sorted(found[part] - set(used)),
        }
        for _, part, used in rows
        if set(used) != found[part]
    }
    assert wrong == {}, f"{wrong}: {hint}"
    assert len(rows) >= 25 and sum(len(used) for _, _, used in rows) >= 100


def test_every_drawn_import_points_sideways_or_down_to_a_part_the_layering_table_allows() -> None:
    rows = drawn(DOC.read_text(encoding="utf-8"))
    assert UNPLACED not in {layer for layer, _, _ in rows}, "a new part: give it its layer in docs/architecture.md"
    layers = list(dict.fromkeys(layer for layer, _, _ in rows))
    assert [layer for layer, _, _ in rows] == sorted((r[0] for r in rows), key=layers.index), "a layer's rows apart"
    depth = {part: layers.index(layer) for layer, part, _ in rows}
    upward = [f"{part} ({layer}) -> {u}" for layer, part, used in rows for u in used if depth[u] < depth[part]]
    assert upward == []
    # the layering table counts `import anchor.x` and `from anchor.x import ...`; `from anchor import x`
    # (the face's own names, `__version__`) it does not see, so edges of the face are held by layer only
    allowed = _allowed()
    beyond = {
        part: sorted(set(used) - allowed[part] - {"__init__"})
        for _, part, used in rows
        if part in allowed and part != "__init__" and set(used) - allowed[part] - {"__init__"}
    }
    assert beyond == {}
    assert {part for _, part, _ in rows} - set(allowed) == {"api"}  # the service: outside the package's table


if __name__ == "__main__":
    DOC.write_text(redrawn(DOC.read_text(encoding="utf-8")), encoding="utf-8")
    sys.exit(0)
