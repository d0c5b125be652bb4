"""How `--help` reads: sentences reflowed, option values named as cosign and forge name them.

typer 0.29 shows every option's Python type (`<bool>` after a flag, `<list[str]>`, `<path>`), writes a
required argument as `{path}` in the usage line and keeps the hard line breaks of a docstring's later
paragraphs. The command tree is tidied once, before it runs; a `\\b` paragraph (the exit-code table)
keeps its lines."""

from __future__ import annotations

import re
from typing import Any

import typer
from typer.core import TyperArgument

_HARD_BREAK = re.compile(r"(?<!\n)\n(?!\n)")
_LABELS = {"int": "INTEGER", "float": "NUMBER", "str": "TEXT", "path": "PATH", "datetime": "DATE"}


def reflow(text: str | None) -> str | None:
    """One line per paragraph, except a paragraph that starts with `\\b` (kept as written)."""
    if not text:
        return text
    paragraphs = text.split("\n\n")
    return "\n\n".join(p if p.lstrip(" ").startswith("\b") else _HARD_BREAK.sub(" ", p) for p in paragraphs)


def _value_name(param: Any, ctx: Any) -> str | None:
    if getattr(param, "is_flag", False) or getattr(param, "count", False):
        return None  # a flag takes no value: nothing to name
    shown = param.display_type(ctx).strip("<>")
    inner = re.fullmatch(r"list\[(.+)\]", shown)
    label = inner.group(1) if inner else shown
    if "|" in label:
        return label  # a choice: its values, as they are typed
    return _LABELS.get(label, label.upper())


def _name_values(param: Any) -> None:
    def shown(ctx: Any) -> str | None:
        return _value_name(param, ctx)

    # set on this instance only: typer's classes are left as they are
    setattr(param, "display_type_rich", shown)  # noqa: B010 - a method, replaced per instance
    if isinstance(param, TyperArgument):
        name = param.metavar or (param.name or "value").upper()
        param.metavar = name
        usage = (name if param.required else f"[{name}]") + ("..." if param.nargs != 1 else "")
        setattr(param, "display_type_rich", lambda ctx: None)  # noqa: B010 - the name column says PATH
        setattr(param, "_usage_display_name", lambda: usage)  # noqa: B010


def tidy(command: Any) -> Any:
    """Reflow every help text and name every value in `command` and its subcommands; returns it."""
    command.help = reflow(command.help)
    for param in command.params:
        param.help = reflow(getattr(param, "help", None))
        _name_values(param)
    made = command.get_help_option

    def help_option(ctx: Any) -> Any:  # made on demand by click, so named when it is made
        option = made(ctx)
        if option is not None:
            _name_values(option)
        return option

    command.get_help_option = help_option
    for sub in getattr(command, "commands", {}).values():
        tidy(sub)
    return command


def command(app: typer.Typer, argv: list[str] | None = None) -> Any:
    """The click command behind `app`, tidied: what `anchor` runs.

    Given `argv`, only the subcommand it names is built under the root: typer reads every command's
    signature and type hints to build it, and building all of them took about 100 ms of every call
    (a read's whole budget is 250 ms). Anything else (no subcommand, `--help`, a typo that
    needs the list of names to suggest one) builds the whole tree."""
    word = _first_word(argv or [])
    if word is not None:
        app = _only(app, word) or app
    return tidy(typer.main.get_command(app))


def _first_word(argv: list[str]) -> str | None:
    """The subcommand `argv` names: its first word that is neither a root option nor its value."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in GLOBAL_OPTIONS:
            i += 2
        elif word.startswith("-"):
            i += 1
        else:
            return word
    return None


def _only(app: typer.Typer, word: str) -> typer.Typer | None:
    """A copy of `app` holding only the command or group named `word` (its callback and root options
    kept); None when no command has that name."""
    import copy

    from typer.main import get_command_name

    for info in app.registered_commands:
        name = info.name or (get_command_name(info.callback.__name__) if info.callback else None)
        if name == word:
            pruned = copy.copy(app)
            pruned.registered_commands, pruned.registered_groups = [info], []
            return pruned
    for group in app.registered_groups:
        if group.name == word:
            pruned = copy.copy(app)
            pruned.registered_commands, pruned.registered_groups = [], [group]
            return pruned
    return None


GLOBAL_OPTIONS = ("--rpc-url", "--data-dir")
"""The root's options that take a value and that people type after the subcommand as often as before."""


def hoist_global_options(root: Any, argv: list[str]) -> list[str]:
    """`argv` with `--rpc-url X` and `--data-dir X` given after the subcommand moved in front of it, as
    the parser wants them (`anchor verify PATH --rpc-url URL` said "No such option"). An option the
    subcommand has itself (`serve --rpc-url`) stays where it is; so does everything after `--`."""
    command, depth = root, 0
    while depth < len(argv):
        word = argv[depth]
        if command is root and word in GLOBAL_OPTIONS:  # the root's own, before the subcommand: its value too
            depth += 2
            continue
        if command is root and word.startswith("-"):  # --json, --data-dir=X, --version, ...
            depth += 1
            continue
        sub = getattr(command, "commands", {}).get(word)
        if sub is None:
            break
        command, depth = sub, depth + 1
    if command is root:
        return argv
    own = {o for p in command.params for o in getattr(p, "opts", ())}
    moved: list[str] = []
    kept: list[str] = []
    i = 0
    while i < len(argv):
        word = argv[i]
        name = word.split("=", 1)[0]
        if word == "--":
            kept += argv[i:]
            break
        if i >= depth and name in GLOBAL_OPTIONS and name not in own:
            if "=" in word:
                moved.append(word)
            elif i + 1 < len(argv):
                moved += [word, argv[i + 1]]
                i += 1
            else:
                kept.append(word)  # no value: let the parser say so
            i += 1
            continue
        kept.append(word)
        i += 1
    return [*moved, *kept]
