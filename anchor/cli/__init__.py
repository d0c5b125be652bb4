"""The `anchor` command line. Errors are turned into messages and exit codes here, and only here."""

from __future__ import annotations

import json
import sys


def main() -> None:
    import click

    from anchor.cli.app import app
    from anchor.errors import AnchorError, ExitCode

    as_json = "--json" in sys.argv[1:]
    try:
        code = app(standalone_mode=False)
    except AnchorError as exc:
        if as_json:
            print(json.dumps({"ok": False, "error": exc.to_dict()}, sort_keys=True))
        else:
            print(f"error[{exc.code}]: {exc.diagnostics()}", file=sys.stderr)
        sys.exit(int(exc.exit_code))
    except click.ClickException as exc:
        exc.show()
        sys.exit(int(ExitCode.BAD_INPUT))
    except click.exceptions.Abort:
        print("aborted", file=sys.stderr)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)
