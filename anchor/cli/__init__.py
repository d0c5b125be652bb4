"""The `anchor` command line. Errors are turned into messages and exit codes here, and only here."""

from __future__ import annotations

import json
import logging
import os
import sys


def main() -> None:
    # typer bundles its own copy of click: its exceptions are not `click`'s, so catch the bundled ones
    from typer import Abort
    from typer._click.exceptions import ClickException, NoArgsIsHelpError

    from anchor.cli.app import app
    from anchor.cli.helptext import command
    from anchor.errors import AnchorError, ExitCode

    as_json = "--json" in sys.argv[1:]
    _show_progress()
    try:
        from anchor.cli.helptext import hoist_global_options

        root = command(app, sys.argv[1:])
        code = root(args=hoist_global_options(root, sys.argv[1:]), standalone_mode=False)
    except AnchorError as exc:
        if as_json:
            print(json.dumps({"ok": False, "error": exc.to_dict()}, sort_keys=True))
        else:
            from anchor.cli.output import printable, tamper_lines

            first, *rest = map(printable, exc.diagnostic_lines())
            if "sizes" in exc.detail:  # a tamper verdict: show it as a diff, not as Python lists
                color = sys.stderr.isatty() and "NO_COLOR" not in os.environ
                rest = tamper_lines(exc.detail, color)
            print("\n".join([f"error[{exc.code}]: {first}", *rest]), file=sys.stderr)
        sys.exit(int(exc.exit_code))
    except NoArgsIsHelpError as exc:  # `anchor` or `anchor research` alone: the help is the answer
        exc.show()
        sys.exit(int(ExitCode.BAD_INPUT))
    except ClickException as exc:  # a usage error: unknown option, missing argument, bad value
        if as_json:
            error = {"code": "usage", "message": exc.format_message(), "detail": {}}
            print(json.dumps({"ok": False, "error": error}, sort_keys=True))
        else:
            exc.show()  # the usage line, "Try 'anchor … --help' for help." and the one-line error
        sys.exit(int(ExitCode.BAD_INPUT))
    except (Abort, KeyboardInterrupt):
        print("aborted", file=sys.stderr)
        sys.exit(130)
    except Exception as exc:  # a bug: say so in one line (ANCHOR_DEBUG=1 shows the traceback)
        if os.environ.get("ANCHOR_DEBUG") == "1":
            raise
        message = f"unexpected {type(exc).__name__}; this is a bug in anchor (ANCHOR_DEBUG=1 shows the traceback)"
        if as_json:
            print(json.dumps({"ok": False, "error": {"code": "internal", "message": message, "detail": {}}}))
        else:
            print(f"error[internal]: {message}", file=sys.stderr)
        sys.exit(int(ExitCode.INTERNAL))
    sys.exit(code if isinstance(code, int) else 0)


class _Stderr(logging.Handler):
    """Writes to whatever sys.stderr is at the time (a test swaps it), one line per record."""

    def emit(self, record: logging.LogRecord) -> None:
        from anchor.cli.output import printable

        sys.stderr.write(printable(self.format(record)) + "\n")


def _show_progress() -> None:
    """Lines from the layers below for a person waiting ("started the local chain…", "waiting for 5
    confirmations (2/5)"): on stderr, so `--json` output on stdout stays one object."""
    log = logging.getLogger("anchor.progress")
    if not any(isinstance(h, _Stderr) for h in log.handlers):
        log.addHandler(_Stderr())
    log.setLevel(logging.INFO)
    log.propagate = False
