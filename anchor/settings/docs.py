"""docs/configuration.md's table of `ANCHOR_*` variables, made from the settings model.

Why generated: a variable's meaning, type and default are written once, beside its field in
anchor.settings.model; the table is what `python -m anchor.settings.docs` makes of them, and
tests/settings/test_docs_table.py fails when the committed table differs (edit the model, then run it).
"""

from __future__ import annotations

import sys
from pathlib import Path

from anchor.settings.model import GIVEN_TO_CHILDREN, Environment

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
BEGIN = "<!-- the settings table: generated from anchor/settings/model.py by `python -m anchor.settings.docs` -->"
END = "<!-- end of the generated settings table -->"
_CHILD_MEANINGS = {
    "ANCHOR_EDITABLE": "the contract's editable paths, space-separated: the only files the proposer may change",
    "ANCHOR_ATTEMPT": "the proposal's number: this researcher's entries in the ledger (the baseline is one, so"
    " the first proposal after it gets `1`) plus the proposals rejected since this `research run` started",
}


KINDS = {
    "text": "text",
    "stripped": "text",
    "url": "URL",
    "url_base": "URL",
    "port": "port",
    "path": "path",
    "listed": "list (comma-separated)",
    "secret": "secret",
    "secret_stripped": "secret",
    "integer": "integer ≥ 0",
    "seconds": "seconds ≥ 0",
    "seconds_nonzero": "seconds > 0",
    "unless_zero": "`0` or `1`",
    "when_one": "`1` or unset",
}
"""How each reader of anchor.settings.model names its type in the table."""


def table() -> str:
    """The generated block: every setting's row, then the variables the harness gives a proposer."""
    rows = ["| variable | type | read by | meaning | default |", "|---|---|---|---|---|"]
    for field in Environment._fields():
        meaning = field.meaning + (
            " (a secret: never shown, logged or given to a child process)"
            if field.secret and "secret" not in field.meaning
            else ""
        )
        kind = KINDS[field.parse.__name__] + (", a secret" if field.secret and field.parse.__name__ == "listed" else "")
        rows.append(f"| `{field.variable}` | {kind} | {field.read_by} | {meaning} | {field.shown} |")
    rows += [
        "",
        "Given by the harness to an external proposer (`anchor research run --propose CMD`), not read by us:",
        "",
        "| variable | meaning |",
        "|---|---|",
    ]
    rows += [f"| `{name}` | {_CHILD_MEANINGS[name]} |" for name in GIVEN_TO_CHILDREN]
    return "\n".join([BEGIN, *rows, END])


def rendered(text: str) -> str:
    """`text` (docs/configuration.md) with its generated block replaced by `table()`."""
    head, found, rest = text.partition(BEGIN)
    if not found or END not in rest:
        raise ValueError(f"{DOC}: no generated block ({BEGIN} … {END})")
    return head + table() + rest.partition(END)[2]


def main() -> int:
    text = DOC.read_text(encoding="utf-8")
    new = rendered(text)
    if "--check" in sys.argv[1:]:
        return 0 if new == text else 1
    DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
