"""The checklist's step numbers are defined once (anchor.readback.checklist.STEPS) and said the same
everywhere: docs/manifest.md lists exactly those steps, the browser's scripts call each step they run by
its number and name, and no other module of the package or the service numbers steps of its own."""

from __future__ import annotations

import re

from anchor.readback.checklist import STEPS
from tests.conftest import ROOT

REFERENCE = re.compile(r"\bsteps? (\d+)\b( \((\w+)\))?", re.IGNORECASE)
"""`step N (name)`: how a script or a document refers to a step of the checklist."""
BROWSER = ("verify.js", "sealed-check.js", "proof-check.js")


def documented() -> list[tuple[int, str, str]]:
    """The numbered list under docs/manifest.md's "The checklist": (number, name, what it checks)."""
    text = (ROOT / "docs" / "manifest.md").read_text(encoding="utf-8")
    section = text.split("### The checklist", 1)[1].split("\n### ", 1)[0]
    return [(int(n), name, rest) for n, name, rest in re.findall(r"^(\d+)\. \*\*(\w+)\*\*: (.*)$", section, re.M)]


def test_the_manual_lists_the_checklist_of_the_code_in_its_order() -> None:
    expected = [(s.number, s.name, f"{s.checks} (" + ", ".join(f"`{e.code}`" for e in s.errors) + ")") for s in STEPS]
    assert documented() == expected


def test_the_steps_are_numbered_one_to_n_in_order() -> None:
    assert [s.number for s in STEPS] == list(range(1, len(STEPS) + 1))
    assert len({s.name for s in STEPS}) == len(STEPS)


def references(text: str) -> list[tuple[int, str | None]]:
    return [(int(m.group(1)), m.group(3)) for m in REFERENCE.finditer(text)]


def test_every_step_the_browser_names_is_the_checklists_by_number_and_name() -> None:
    """Each `step N` in the browser's scripts is followed by the checklist's name for N; verify.js names
    each step it runs (the browser checks no receipts, statements, requirement, pin or policy)."""
    names = {s.number: s.name for s in STEPS}
    named: set[int] = set()
    for script in BROWSER:
        for number, name in references((ROOT / "api" / "static" / script).read_text(encoding="utf-8")):
            assert name == names.get(number), (
                f"{script}: step {number} ({name}), the checklist's is {names.get(number)}"
            )
            named.add(number)
    runs = {"consistent", "data", "chain", "registry", "code", "anchor", "anchored", "retraction", "milestones"}
    assert {names[n] for n in named} == runs


def test_the_manual_names_each_step_it_refers_to_by_the_checklists_number() -> None:
    names = {s.number: s.name for s in STEPS}
    text = (ROOT / "docs" / "manifest.md").read_text(encoding="utf-8")
    outside = text.replace(text.split("### The checklist", 1)[1].split("\n### ", 1)[0], "")
    said = references(outside)
    assert said and all(name == names[number] for number, name in said), said


OTHER_PROCEDURES = {
    "anchor/mlflow/changes.py": "a training step of an MLflow metric, not a check",
    "anchor/cli/chain_cmds.py": "a step of docs/quickstart-base-sepolia.md",
    "anchor/missions/runner.py": "a step of the mission runner's own module docstring",
}
"""Where `step N` means something else than the proof checklist's step N, and what."""


def test_no_other_module_numbers_steps_of_the_verification() -> None:
    """`grep -rni "step [0-9]" anchor/ api/` finds the checklist's module, references to its steps by number
    and name (the browser's scripts), and the numbered steps of other procedures (OTHER_PROCEDURES):
    no second numbering of a proof's verification."""
    scripts = sorted((ROOT / "api" / "static").glob("*.js"))
    found = set()
    for path in sorted([*(ROOT / "anchor").rglob("*.py"), *(ROOT / "api").rglob("*.py"), *scripts]):
        name = path.relative_to(ROOT).as_posix()
        if name == "anchor/readback/checklist.py":
            continue
        if any(named is None for _, named in references(path.read_text(encoding="utf-8"))):
            found.add(name)
    assert found == set(OTHER_PROCEDURES)
