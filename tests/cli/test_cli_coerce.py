"""Plain option values (text, whole numbers, numbers, flags, paths, lists of them) are converted by
anchor.cli.coerce without pydantic (130 ms of every call), to the same values and with the
same refusals as typer's own coercion; anything else still goes through typer's."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

PROBE = r"""
import datetime, enum, json, sys
from pathlib import Path
from typing import Annotated, Literal, Optional
import typer
from typer.testing import CliRunner
from anchor.cli import coerce

if sys.argv[1] == "ours":
    coerce.install()
app = typer.Typer()

class Links(str, enum.Enum):
    refuse = "refuse"
    follow_inside = "follow-inside"

@app.command("r")
def ranged_only(
    ranged: Annotated[int, typer.Option(min=1, max=5)] = 2,
    share: Annotated[float, typer.Option(min=0.01)] = 0.5,
) -> None:
    print(ranged, share)

@app.command("d")
def dated(when: Optional[datetime.datetime] = None) -> None:
    print(when)

@app.command("p")
def main(
    files: Annotated[Optional[list[Path]], typer.Argument()] = None,
    n: int = 3,
    x: float = 0.5,
    name: str = "a",
    where: Optional[Path] = None,
    tag: Annotated[Optional[list[str]], typer.Option("--tag")] = None,
    flag: bool = False,
    maybe: Optional[int] = None,
    links: Links = Links.refuse,
    mode: Annotated[Literal["fast", "slow"], typer.Option()] = "fast",
    kinds: Annotated[Optional[list[Links]], typer.Option("--kind")] = None,
) -> None:
    print(json.dumps({"files": [type(f).__name__ + ":" + str(f) for f in files or []], "n": n, "x": x, "name": name,
                      "where": None if where is None else type(where).__name__ + ":" + str(where), "tag": tag,
                      "flag": flag, "maybe": maybe, "links": repr(links), "mode": mode,
                      "kinds": [repr(k) for k in kinds or []]}))

result = CliRunner().invoke(app, sys.argv[2:])
print(json.dumps({"code": result.exit_code, "out": result.output,
                  "adapters": "typer._adapters" in sys.modules, "pydantic": "pydantic" in sys.modules}))
"""

CASES = [
    [],
    ["r", "--ranged", "0"],
    ["r", "--ranged", "6"],
    ["r", "--ranged", "5", "--share", "0.01"],
    ["r", "--share", "0.001"],
    ["a.txt", "b/c", "--n", "7", "--x", "2", "--name", "zed", "--where", "w", "--tag", "t1", "--tag", "t2", "--flag",
     "--maybe", "-4"],
    ["--n", " 12 "],
    ["--n", "x"],
    ["--n", "1.5"],
    ["--x", "nan?"],
    ["--maybe", ""],
    ["--links", "follow-inside", "--mode", "slow", "--kind", "refuse", "--kind", "follow-inside"],
    ["--links", "FOLLOW-INSIDE"],
    ["--links", "bogus"],
    ["--mode", "medium"],
]  # fmt: skip


def _run(which: str, argv: list[str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, which, *(argv if argv[:1] in (["r"], ["d"]) else ["p", *argv])],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(c) or "defaults" for c in CASES])
def test_plain_values_convert_and_fail_as_typers_own_coercion_does(argv: list[str]) -> None:
    ours, typers = _run("ours", argv), _run("typer", argv)
    said = str(typers["out"]).replace("Value error, ", "")  # pydantic's wording of a choice's ValueError
    assert (ours["code"], _words(ours["out"])) == (typers["code"], _words(said))


def _words(text: object) -> str:
    """What a message says, without the box rich draws around it (its line breaks depend on the length)."""
    return " ".join(re.sub("[│╭╮╰╯─]", " ", str(text)).split())


def test_plain_values_load_no_pydantic_and_a_date_still_goes_to_typer() -> None:
    for argv in (["--n", "4", "--where", "p", "--links", "refuse"], ["r", "--ranged", "9"]):
        plain = _run("ours", argv)
        assert plain["adapters"] is False and plain["pydantic"] is False, argv
    dated = _run("ours", ["d", "--when", "2026-12-02"])
    assert dated["code"] == 0 and "2026-12-02 00:00:00" in str(dated["out"]) and dated["adapters"] is True


def test_every_option_of_the_cli_is_converted_without_pydantic() -> None:
    """A new option of a kind coerce does not convert would bring typer's pydantic coercion back to
    every call of its command."""
    from anchor.cli.app import app
    from anchor.cli.helptext import command

    def params(cmd: object, path: str) -> list[tuple[str, object]]:
        found = [(f"{path} {p.name}", p) for p in getattr(cmd, "params", [])]
        return found + [x for name, sub in getattr(cmd, "commands", {}).items() for x in params(sub, f"{path} {name}")]

    every = params(command(app), "anchor")
    assert len(every) > 100
    typers = [name for name, p in every if type(p.get_runtime_param()).__name__ != "PlainRuntimeParam"]  # type: ignore[attr-defined]
    assert typers == []
