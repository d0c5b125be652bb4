"""How the `anchor` commands are built on click: a command class that also takes the root's chain
options after the subcommand, a group that imports a command's module only when that command is named,
and the one path type every command uses.

Why click, and why this much: click declares each option once (a decorator every command that shares
it applies), coerces plain values with no validation library in the way, writes `--help` as forge and
cosign do, and imports in a few milliseconds. Everything here is click's own extension points
(subclasses, a `ParamType`), nothing patched: a click release that keeps its public API keeps this."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import click

from anchor.cli.options import ROOT_OPTIONS


class AnchorCommand(click.Command):
    """A command that also takes the root's `--data-dir` and `--rpc-url` after its own name, where
    people type them as often as before it (`anchor verify PATH --rpc-url URL`), unless it has an
    option of that name itself (`serve --rpc-url`); and that says the progress of what it waits for on
    stderr, unless it is a read (`reads=True`: `verify`, `hash`, `lookup`, which start and wait for
    nothing)."""

    def __init__(self, *args: Any, reads: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.reads = reads
        own = {name for param in self.params for name in getattr(param, "opts", ())}
        for make in ROOT_OPTIONS:
            shared = make(expose_value=False, callback=_given_late)
            if not own.intersection(shared.opts):
                self.params.append(shared)

    def invoke(self, ctx: click.Context) -> Any:
        if not self.reads:
            show_progress()
        return super().invoke(ctx)


def _given_late(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    """A root option given after the subcommand: recorded as if given before it (the settings are
    resolved on first use, so they see it)."""
    if value is None or value == ():
        return
    root = ctx.find_root().obj
    if root is not None:
        root.give(param.name, value)


def show_progress() -> None:
    """Lines from the layers below for a person waiting ("started the local chain…", "waiting for 5
    confirmations (2/5)"): on stderr, so `--json` output on stdout stays one object. Set up for every
    command but the reads, which start nothing and wait for nothing (and so do not load logging)."""
    import logging
    import sys

    class Stderr(logging.Handler):
        """Writes to whatever sys.stderr is at the time (a test swaps it), one line per record."""

        def emit(self, record: logging.LogRecord) -> None:
            from anchor.cli.output import printable

            sys.stderr.write(printable(self.format(record)) + "\n")

    log = logging.getLogger("anchor.progress")
    if not any(getattr(h, "anchor_progress", False) for h in log.handlers):
        handler = Stderr()
        handler.anchor_progress = True  # type: ignore[attr-defined]
        log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False


class AnchorGroup(click.Group):
    """A group whose commands are `AnchorCommand`s and whose subgroups are `AnchorGroup`s."""

    command_class = AnchorCommand
    group_class = type


class LazyGroup(AnchorGroup):
    """The root: each command named by `module:attribute`, imported when the command is asked for, so
    `anchor verify FILE` loads the verify command and not the research runtime's (the click
    documentation's lazy-loading pattern)."""

    def __init__(self, *args: Any, lazy: dict[str, str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self.lazy])

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """As click resolves it; a name that is no command suggests the nearest of all of them, the
        ones not imported yet included (`stmap`: did you mean `stamp`?)."""
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            raise click.exceptions.NoSuchCommand(
                exc.command_name, possibilities=self.list_commands(ctx), ctx=ctx
            ) from None

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = self.lazy.get(cmd_name)
        if where is None:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = where.partition(":")
        found = getattr(importlib.import_module(module), attribute)
        assert isinstance(found, click.Command), where
        return found


def command(name: str | None = None, **attrs: Any) -> Callable[[Callable[..., Any]], AnchorCommand]:
    """`click.command` making an `AnchorCommand` (for the commands the root imports lazily)."""
    return click.command(name, cls=AnchorCommand, **attrs)


def group(name: str | None = None, **attrs: Any) -> Callable[[Callable[..., Any]], AnchorGroup]:
    """`click.group` making an `AnchorGroup`; its help is the function's docstring."""
    return click.group(name, cls=AnchorGroup, **attrs)
