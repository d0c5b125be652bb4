"""The `anchor` command line. Errors are turned into messages and exit codes here, and only here."""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def main() -> None:
    from anchor.cli.output import RAN
    from anchor.errors import AnchorError, ExitCode

    argv = sys.argv[1:]
    as_json = "--json" in argv
    RAN.clear()  # nothing built yet for this call (the tests run many calls in one process)
    try:
        code = 0 if _run_fast(argv) else _run_typer(argv)
    except AnchorError as exc:
        from anchor.cli.output import error_json, option

        if not RAN and exc.said_as(lambda name: "") != exc.message:
            _build(argv)  # the fast path built no command, and this refusal names an input: of its options?
        if as_json:
            print(json.dumps({"ok": False, "error": error_json(exc)}, sort_keys=True))
        else:
            from anchor.cli.output import printable, tamper_lines

            first, *rest = map(printable, exc.diagnostic_lines(option))
            if "sizes" in exc.detail:  # a tamper verdict: show it as a diff, not as Python lists
                color = sys.stderr.isatty() and "NO_COLOR" not in os.environ
                rest = tamper_lines(exc.detail, color)
            elif isinstance(exc.detail.get("changes"), list):  # a run's changes (anchor.mlflow): one a line
                changed = [f"  ~ {printable(str(change))}" for change in exc.detail["changes"]]
                rest = changed + [line for line in rest if not line.startswith("  changes: ")]
            print("\n".join([f"error[{exc.code}]: {first}", *rest]), file=sys.stderr)
        sys.exit(int(exc.exit_code))
    except KeyboardInterrupt:
        print("aborted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:
        _typer_exit(exc, as_json)  # a usage error, help, or an abort: exits
        if _debug():  # a bug: say so in one line (ANCHOR_DEBUG=1 shows the traceback)
            raise
        message = f"unexpected {type(exc).__name__}; this is a bug in anchor (ANCHOR_DEBUG=1 shows the traceback)"
        if as_json:
            print(json.dumps({"ok": False, "error": {"code": "internal", "message": message, "detail": {}}}))
        else:
            print(f"error[internal]: {message}", file=sys.stderr)
        sys.exit(int(ExitCode.INTERNAL))
    sys.exit(code if isinstance(code, int) else 0)


def _run_fast(argv: list[str]) -> bool:
    from anchor.cli.fast import run_fast

    return run_fast(argv)


def _run_typer(argv: list[str]) -> object:
    from anchor.cli.helptext import hoist_global_options

    _show_progress()
    root = _build(argv)
    return root(args=hoist_global_options(root, argv), standalone_mode=False)


def _build(argv: list[str]) -> Any:
    """The command `argv` names, built (not run), and kept where `anchor.cli.output.option` reads its
    options (what a refusal's input is said as): by `_run_typer`, and on the fast path's error only."""
    from anchor.cli.app import app
    from anchor.cli.helptext import command
    from anchor.cli.output import RAN

    RAN[:] = [command(app, argv)]
    return RAN[0]


def _typer_exit(exc: Exception, as_json: bool) -> None:
    """Exit as the command line should for typer's own exceptions (a usage error, `anchor` alone, an
    abort); return for anything else. typer bundles its own copy of click: its exceptions are not
    `click`'s. Imported only when typer ran (the fast path never loads it)."""
    if "typer" not in sys.modules:
        return
    from typer import Abort
    from typer._click.exceptions import ClickException, NoArgsIsHelpError

    from anchor.errors import ExitCode

    if isinstance(exc, NoArgsIsHelpError):  # `anchor` or `anchor research` alone: the help is the answer
        exc.show()
        sys.exit(int(ExitCode.BAD_INPUT))
    if isinstance(exc, ClickException):  # a usage error: unknown option, missing argument, bad value
        if as_json:
            error = {"code": "usage", "message": exc.format_message(), "detail": {}}
            print(json.dumps({"ok": False, "error": error}, sort_keys=True))
        else:
            exc.show()  # the usage line, "Try 'anchor … --help' for help." and the one-line error
        sys.exit(int(ExitCode.BAD_INPUT))
    if isinstance(exc, Abort):
        print("aborted", file=sys.stderr)
        sys.exit(130)


def _show_progress() -> None:
    """Lines from the layers below for a person waiting ("started the local chain…", "waiting for 5
    confirmations (2/5)"): on stderr, so `--json` output on stdout stays one object. Set up for the
    commands typer runs; the fast path logs nothing and does not load logging (9 ms)."""
    import logging

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


def _debug() -> bool:
    from anchor.settings.env import env

    return env().debug
