"""`anchor hash PATH` and `anchor verify PATH` without the command-line framework.

Why: typer, building the command and resolving the settings cost about 90 ms of every call, and `anchor
hash` is compared with `b3sum` end to end. For exactly `anchor hash PATH`, with `--json` anywhere or not
at all, and PATH an existing file or directory, the body the typer command runs
(`anchor.cli.hashing.print_hash`) runs here with the command's defaults. Every other command line (an
option, a missing path, `--help`, a typo) goes to typer, which parses it and says what is wrong;
tests/cli/test_cli_fast.py holds the two to the same output.

Nothing here reads the settings for `hash`: it uses none (no data dir, no chain), so a broken
anchor.toml does not stop it. `anchor verify PATH` (typer was about a third of its 170 ms) runs
`anchor.cli.verdict.verify_plain`, the settings and the Verifier the typer command uses with its
defaults; so does `anchor verify PATH --offline` with its `--trusted-block`s and `--trusted-blocks` (an
offline verdict needs no network, so typer would be most of its time); any other option, or a PATH that
does not exist, goes to typer.
"""

from __future__ import annotations

from pathlib import Path


def _offline_options(words: list[str]) -> tuple[list[str], list[str], Path | None] | None:
    """(the other words, each --trusted-block, the --trusted-blocks file) of a command line that has
    `--offline`; None when it has anything else typer alone parses (a repeated --trusted-blocks, an
    option without its value, any other option)."""
    rest, given, listed = [], [], None
    at = 0
    while at < len(words):
        word = words[at]
        name, eq, value = word.partition("=")
        if word == "--offline":
            pass
        elif name in ("--trusted-block", "--trusted-blocks"):
            if not eq:
                if at + 1 == len(words):
                    return None
                at, value = at + 1, words[at + 1]
            if name == "--trusted-block":
                given.append(value)
            elif listed is None:
                listed = Path(value)
            else:
                return None
        else:
            rest.append(word)
        at += 1
    return rest, given, listed


def run_fast(argv: list[str]) -> bool:
    """Run `argv` here and return True when it is one of the command lines above; False otherwise,
    having done nothing."""
    words = [word for word in argv if word != "--json"]
    offline: tuple[list[str], list[str], Path | None] | None = None
    if words[:1] == ["verify"] and "--offline" in words:
        offline = _offline_options(words)
        if offline is None:
            return False
        words = offline[0]
    if len(words) != 2 or words[0] not in ("hash", "verify") or words[1].startswith("-") or not words[1]:
        return False
    path = Path(words[1])
    if words[0] == "verify":
        if not path.exists() and not path.is_symlink():
            return False  # typer's command says what is missing
        from anchor.cli.verdict import verify_plain

        verify_plain(path, "--json" in argv, offline[1:] if offline is not None else None)
        return True
    if path.is_symlink() or not (path.is_file() or path.is_dir()):
        return False  # typer's command says what it is (a link is refused, or recorded, there)
    from anchor.cli.hashing import print_hash, rules_for

    print_hash(path, rules_for(path, None, False), "refuse", "--json" in argv)
    return True
