"""docs/configuration.md's table of variables is the settings model's, generated: one description of
each setting, in the model."""

from __future__ import annotations

import pytest

from anchor.settings import docs
from anchor.settings.model import Environment


def test_the_docs_table_is_the_one_generated_from_the_model() -> None:
    text = docs.DOC.read_text(encoding="utf-8")
    assert docs.rendered(text) == text, "docs/configuration.md: run `python -m anchor.settings.docs`"


def test_the_docs_table_check_fails_when_a_settings_description_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    text = docs.DOC.read_text(encoding="utf-8")
    monkeypatch.setattr(Environment.rpc_retries, "meaning", "retries, said differently")
    assert docs.rendered(text) != text and "retries, said differently" in docs.rendered(text)


def test_every_setting_has_one_row_with_its_variable_type_and_default() -> None:
    rows = [line for line in docs.table().splitlines() if line.startswith("| `ANCHOR_")]
    variables = [row.split("`")[1] for row in rows]
    assert variables[: len(Environment.variables())] == list(Environment.variables())
    assert len(set(Environment.variables())) == len(Environment.variables()) >= 50
    assert all(row.count(" | ") >= 4 for row in rows[: len(Environment.variables())])
