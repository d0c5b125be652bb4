"""`anchor hash PATH` and `anchor verify PATH` without the command-line framework.

Why: typer, building the command and resolving the settings cost about 90 ms of every call, and `anchor
hash` is compared with `b3sum` end to end (issue 26: 0.8x its throughput on a 3 GiB file, where b3sum
takes 0.43 s). For exactly `anchor hash PATH`, with `--json` anywhere or not at all, and PATH an existing
file or directory, the body the typer command runs (`anchor.cli.hashing.print_hash`) runs here with
the command's defaults. Every other command line (an option, a missing path, `--help`, a typo) goes to
typer, which parses it and says what is wrong; tests/test_cli_fast.py holds the two to the same output.

Nothing here reads the settings for `hash`: it uses none (no data dir, no chain), so a broken
anchor.toml does not stop it. `anchor verify PATH` (issue 49: typer was about a third of its 170 ms) runs
`anchor.cli.verdict.verify_plain`, the settings and the Verifier the typer command uses with its
defaults; any option but `--json`, or a PATH that does not exist, goes to typer.
"""

from __future__ import annotations

from pathlib import Path


def run_fast(argv: list[str]) -> bool:
    """Run `argv` here and return True when it is one of the command lines above; False otherwise,
    having done nothing."""
    words = [word for word in argv if word != "--json"]
    if len(words) != 2 or words[0] not in ("hash", "verify") or words[1].startswith("-") or not words[1]:
        return False
    path = Path(words[1])
    if words[0] == "verify":
        if not path.exists() and not path.is_symlink():
            return False  # typer's command says what is missing
        from anchor.cli.verdict import verify_plain

        verify_plain(path, "--json" in argv)
        return True
    if path.is_symlink() or not (path.is_file() or path.is_dir()):
        return False  # typer's command says what it is (a link is refused, or recorded, there)
    from anchor.cli.hashing import print_hash, rules_for

    print_hash(path, rules_for(path, None, False), "refuse", "--json" in argv)
    return True
