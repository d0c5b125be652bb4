"""`anchor hash`, the body: PATH's manifest digest printed, for people or as JSON.

Apart from the command (`data_cmds.hash_`) so that the digest is printed one way, whoever asks."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from anchor.cli.output import count, emit_as, progress_bar

if TYPE_CHECKING:
    from anchor.manifest.exclude import Rules


def rules_for(path: Path, exclude: list[str] | None, no_defaults: bool) -> Rules:
    """.git/, PATH's .anchorignore and --exclude (anchor.manifest.exclude); recorded if they matter."""
    from anchor.manifest.exclude import Rules

    return Rules.for_root(path, exclude or (), defaults=not no_defaults)


def print_hash(path: Path, rules: Rules, symlinks: str, as_json: bool) -> None:
    """Hash PATH under `rules` and `symlinks` (refuse, record, follow-inside) and print its digest."""
    from anchor.manifest.filetree import hash_tree

    with progress_bar(as_json) as progress:
        tree = hash_tree(path, rules, symlinks, progress)
    summary = tree.summary()
    if as_json:  # the file list only when it is printed: 100,000 files' dicts cost 0.14 s
        emit_as(
            True,
            {"manifest_digest": "0x" + tree.digest.hex(), "manifest": tree.identity(), "files": tree.files_json()},
            [],
        )
        return
    emit_as(
        False,
        {},
        [
            f"0x{tree.digest.hex()}  {path}"
            f"  ({count(summary['file_count'], 'file')}, {count(summary['total_size'], 'byte')}"
            + (f", {count(len(tree.links), 'link')} {LINKS_DONE[symlinks]}" if tree.links else "")
            + ")",
            *left_out_lines(tree.left_out),
        ],
    )


def left_out_lines(left_out: tuple[str, ...]) -> list[str]:
    """Say what the rules left out (.git/, proof files, .anchorignore, --exclude): a digest that differs
    from a colleague's `b3sum`-style expectation is explained before it is questioned."""
    if not left_out:
        return []
    shown = ", ".join(left_out[:5]) + (f" and {len(left_out) - 5} more" if len(left_out) > 5 else "")
    return [f"  left out (recorded in the manifest): {shown}"]


LINKS_DONE = {"record": "recorded", "follow-inside": "followed (inside the tree)"}
"""What `hash` says it did with links (it said "1 link follow insideed")."""
