"""Characters Python calls digits that are no number `int()` reads (`²`): each check that a value is a
number took `str.isdigit()`'s word, then `int()` raised ValueError, HTTP 500, exit 1 or a raw
exception from the library, from one character in a query string, an option or a planted setting.
Every such check now asks for ASCII digits: a typed refusal naming the field at every door."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import anchor
from anchor.errors import ExitCode
from tests.cli import run_anchor

SUPERSCRIPT_TWO = "\u00b2"


@pytest.mark.parametrize(("option", "field"), [("--min-finality", "--min-finality"), ("--require", "--require")])
def test_a_superscript_digit_in_an_option_is_exit_2_naming_it(tmp_path: Path, option: str, field: str) -> None:
    (tmp_path / "f.txt").write_text("x\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")} | {"ANCHOR_DATA_DIR": str(tmp_path)}
    result = run_anchor(["verify", str(tmp_path / "f.txt"), option, SUPERSCRIPT_TWO], env)
    assert result.returncode == ExitCode.BAD_INPUT and field in result.stderr, result.stderr


def test_a_superscript_digit_is_a_typed_refusal_from_the_library_and_the_api(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from anchor.settings.session import Settings
    from api.app import create_app
    from api.config import ApiConfig

    (tmp_path / "f.txt").write_text("x\n")
    with pytest.raises(anchor.BadInput):
        anchor.verify(tmp_path / "f.txt", require=SUPERSCRIPT_TWO, settings=Settings.load(tmp_path / "data"))
    with TestClient(create_app(Settings.load(tmp_path / "data"), ApiConfig())) as client:
        answer = client.get("/v1/verify/0x" + "00" * 32, params={"min_finality": SUPERSCRIPT_TWO})
    assert answer.status_code == 422 and answer.json()["detail"] == {"field": "min_finality"}


def test_a_superscript_digit_in_a_setting_is_exit_2_naming_the_variable(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env |= {"ANCHOR_DATA_DIR": str(tmp_path), "ANCHOR_LOCAL_PORT": SUPERSCRIPT_TWO}
    result = run_anchor(["info"], env)
    assert result.returncode == ExitCode.BAD_INPUT and "ANCHOR_LOCAL_PORT" in result.stderr, result.stderr
