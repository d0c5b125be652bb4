"""The `anchor` command line. Errors are turned into messages and exit codes here, and only here."""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    """Run the command in `sys.argv` and exit with its code. A reader of stdout that left early (`| head
    -1`) ends it quietly with 141 wherever the failed write was met: in a command, in an error's JSON, in
    click's or rich's own handling (each of which exits 1 for it), or in the last flush."""
    from anchor.settings import interrupt

    interrupt.install()
    _keep_stdout()
    try:
        _answer(sys.argv[1:])
    except KeyboardInterrupt:  # met outside the command's own handling: its last words, or the flush
        _aborted()
    except SystemExit as exc:
        try:
            sys.stdout.flush()  # here, not in the interpreter's last flush, which would print its failure
        except BrokenPipeError:
            if not _reader_gone():
                raise
            _end_quietly()
        if exc.code == 1 and _reader_gone():
            _end_quietly()
        raise
    except BrokenPipeError:
        if not _reader_gone():
            raise  # a pipe to a child of ours: a bug, not a reader of ours that left
        _end_quietly()


def _answer(argv: list[str]) -> None:
    """The command's answer on stdout or its error on stderr, then `sys.exit` with the code."""
    from anchor.cli.output import ENVIRONMENT, RAN
    from anchor.errors import AnchorError, ExitCode
    from anchor.settings import interrupt

    as_json = "--json" in argv
    RAN.clear()  # nothing built yet for this call (the tests run many calls in one process)
    ENVIRONMENT.clear()  # nor any setting read
    try:
        code = _run(argv)
    except AnchorError as exc:
        from anchor.cli.output import error_json, option

        if interrupt.seen():  # what failed after Ctrl-C failed because of it
            _aborted()
        if as_json:
            print(json.dumps({"ok": False, "error": error_json(exc)}, sort_keys=True))
        else:
            from anchor.cli.output import printable, tamper_lines

            first, *rest = map(printable, exc.diagnostic_lines(option))
            if "sizes" in exc.detail:  # a tamper verdict: show it as a diff, not as Python lists
                from anchor.cli.output import environment

                color = sys.stderr.isatty() and not environment().no_color
                rest = tamper_lines(exc.detail, color)
            elif isinstance(changes := exc.detail.get("changes"), list):  # a run's changes (anchor.mlflow): one a line
                changed = [f"  ~ {printable(str(change))}" for change in changes]
                rest = changed + [line for line in rest if not line.startswith("  changes: ")]
            print("\n".join([f"error[{exc.code}]: {first}", *rest]), file=sys.stderr)
        interrupt.answered()
        sys.exit(int(exc.exit_code))
    except KeyboardInterrupt:
        _aborted()
    except BrokenPipeError:
        raise  # not a bug of ours when the reader left: `main` tells which
    except Exception as exc:
        if interrupt.seen():
            _aborted()
        _usage_exit(exc, as_json)  # a usage error, help, or an abort: exits
        if _debug():  # a bug: say so in one line (ANCHOR_DEBUG=1 shows the traceback)
            raise
        message = f"unexpected {type(exc).__name__}; this is a bug in anchor (ANCHOR_DEBUG=1 shows the traceback)"
        if as_json:
            print(json.dumps({"ok": False, "error": {"code": "internal", "message": message, "detail": {}}}))
        else:
            print(f"error[internal]: {message}", file=sys.stderr)
        sys.exit(int(ExitCode.INTERNAL))
    if interrupt.seen():  # Ctrl-C, however it travelled: click's Abort, or swallowed by a finalizer
        _aborted()
    interrupt.answered()
    sys.exit(code if isinstance(code, int) else 0)


def _aborted() -> None:
    """The one answer to Ctrl-C, wherever it landed: `aborted` on stderr, exit 130 (128 + SIGINT)."""
    from anchor.errors import ExitCode

    print("aborted", file=sys.stderr)
    sys.exit(int(ExitCode.ABORTED))


def _reader_gone() -> bool:
    """Whether our stdout is a pipe or socket whose reader has closed it (`| head -1`, `| grep -q`):
    its write end then polls as an error. Asked of the descriptor as it was when we started, kept in
    `_STARTED_AS`: whichever layer met the failed write (ours, click's, rich's) may since have put
    /dev/null in its place."""
    import select

    try:
        poller = select.poll()
        poller.register(_STARTED_AS[0], select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (IndexError, OSError, ValueError):
        return False


_STARTED_AS: list[int] = []
"""A duplicate of stdout's descriptor, made as `main` starts (not inherited by children)."""


def _keep_stdout() -> None:
    for fd in _STARTED_AS:  # the last call's, where one process runs many (the tests)
        os.close(fd)
    _STARTED_AS.clear()
    try:
        kept = os.dup(1)
    except OSError:
        return  # no stdout at all: nothing can break it
    _STARTED_AS.append(kept)


def _end_quietly() -> None:
    """The reader left: what is left to write goes nowhere (the interpreter's last flush would fail and
    say so), and the exit is 141, as a shell reports a Unix tool that a closed pipe stopped."""
    from anchor.errors import ExitCode

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass
    sys.exit(int(ExitCode.READER_GONE))


def _run(argv: list[str]) -> object:
    """Run the command `argv` names; its exit code (click returns it for `ctx.exit(code)`)."""
    import click

    from anchor.cli.app import app
    from anchor.cli.output import RAN

    RAN[:] = [app]  # where `anchor.cli.output.option` finds the options of the command that ran
    try:
        return app.main(args=argv, prog_name="anchor", standalone_mode=False)
    except click.exceptions.Exit as done:  # raised outside a command's context (`--version`)
        return done.exit_code


def _usage_exit(exc: Exception, as_json: bool) -> None:
    """Exit as the command line should for click's own exceptions (a usage error, `anchor` alone, an
    abort); return for anything else."""
    if "click" not in sys.modules:
        return
    import click

    from anchor.errors import ExitCode

    if isinstance(exc, click.exceptions.NoArgsIsHelpError):  # `anchor` or `anchor research` alone: the help
        exc.show()
        sys.exit(int(ExitCode.BAD_INPUT))
    if isinstance(exc, click.ClickException):  # a usage error: unknown option, missing argument, bad value
        if as_json:
            error = {"code": "usage", "message": exc.format_message(), "detail": {}}
            print(json.dumps({"ok": False, "error": error}, sort_keys=True))
        else:
            exc.show()  # the usage line, "Try 'anchor … --help' for help." and the one-line error
        sys.exit(int(ExitCode.BAD_INPUT))
    if isinstance(exc, click.Abort):
        _aborted()


def _debug() -> bool:
    from anchor.cli.output import environment
    from anchor.errors import AnchorError

    try:
        return bool(environment().debug)
    except AnchorError:  # a malformed .env or ANCHOR_DEBUG: said where it was first read, not here
        return False
