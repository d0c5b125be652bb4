"""docs/cli.md and README.md's `anchor --help` are what the CLI prints now (anchor/cli/reference.py,
`make docs-cli`): an option's help edited without regenerating them fails here."""

from __future__ import annotations

from pathlib import Path

from anchor.cli import reference

ROOT = Path(__file__).resolve().parents[2]


def test_the_command_reference_is_what_the_cli_prints() -> None:
    assert (ROOT / "docs" / "cli.md").read_text() == reference.reference(), "run `make docs-cli`"


def test_the_readme_shows_the_root_help_the_cli_prints() -> None:
    readme = (ROOT / "README.md").read_text()
    assert reference.readme_section() in readme, "run `make docs-cli`"
    assert reference.with_section(readme) == readme


def test_every_command_has_its_page_and_the_old_spellings_none() -> None:
    """Each command the CLI has is in the reference once; `anchor submit` (kept for a release) is not."""
    from anchor.cli.app import app

    paths = [path for path, _ in reference.pages(app)]
    assert len(paths) == len(set(paths)) >= 50
    assert {"anchor serve", "anchor index", "anchor render", "anchor verify"} <= set(paths)
    assert "anchor submit" not in paths and "anchor journal submit" in paths
