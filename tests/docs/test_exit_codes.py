"""Exit 1 means a bug in anchor and nothing else: every error anchor raises on purpose has a code of its
own, and every code is said in `anchor --help` and the README."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import subprocess
import sys

import anchor
import api
from anchor.errors import AnchorError, ExitCode, ResearcherFailed
from tests.conftest import ROOT


def _kinds() -> list[type[AnchorError]]:
    for package in (anchor, api):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not info.name.endswith("__main__"):  # running it would start the CLI
                importlib.import_module(info.name)

    def below(cls: type[AnchorError]) -> list[type[AnchorError]]:
        return [cls, *(k for sub in cls.__subclasses__() for k in below(sub))]

    return below(AnchorError)[1:]


def test_no_error_raised_on_purpose_exits_1_the_code_kept_for_bugs() -> None:
    kinds = _kinds()
    assert len(kinds) >= 30
    assert [k.__name__ for k in kinds if k.exit_code == ExitCode.INTERNAL and k is not ResearcherFailed] == []
    assert ResearcherFailed("its own words", detail={"exit_code": 17}).exit_code == ExitCode.JOURNAL
    assert ResearcherFailed("a bug in that researcher", detail={"exit_code": 1}).exit_code == ExitCode.INTERNAL


def test_nothing_raises_the_root_error_whose_code_is_the_bugs() -> None:
    made = []
    for path in sorted([*(ROOT / "anchor").rglob("*.py"), *(ROOT / "api").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "AnchorError":
                made.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert made == []


def test_every_exit_code_is_said_in_the_help_and_the_readme() -> None:
    helped = subprocess.run([sys.executable, "-m", "anchor", "--help"], capture_output=True, text=True, check=True)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    said = readme[readme.index("Exit codes (also in `anchor --help`)") :].split("\n\n")[0]
    for code in ExitCode:
        assert re.search(rf"^\s+{code.value}  ", helped.stdout, flags=re.M), code
        assert re.search(rf"(?<![\d.-]){code.value}:? ", said), code
