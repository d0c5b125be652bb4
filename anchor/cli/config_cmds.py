"""`anchor config show`: the effective settings and where each one came from."""

from __future__ import annotations

import typer

from anchor.cli.options import JsonFlag
from anchor.cli.output import emit

app = typer.Typer(help="Show the effective settings (command line, ANCHOR_* variables, anchor.toml files).",
                  no_args_is_help=True)  # fmt: skip


@app.command()
def show(ctx: typer.Context, json: JsonFlag = False) -> None:
    """Print every setting, its value and its source: an option, a variable, a file, or the default."""
    from anchor.settings.config import project_file, user_file
    from anchor.settings.session import Settings, redact_url
    from anchor.settings.variables import variable_rows

    data_dir, rpc_url = ctx.find_root().obj["given"]
    settings, found = Settings.resolve(data_dir, rpc_url[0] if rpc_url else None)
    effective = {
        "data_dir": str(settings.data_dir), "rpc_url": settings.rpc_url or "(the local chain)",
        "local_port": found["local_port"].value or "(18545, or the port recorded in the data directory)",
        "keystore": found["keystore"].value or "(none: ANCHOR_PRIVATE_KEY, or the dev key on the local chain)",
        "journal_url": redact_url(settings.journal_url) if settings.journal_url else "(none: the ledger is a file)",
    }  # fmt: skip
    rows = {key: {"value": effective[key], "source": found[key].source} for key in effective}
    project = project_file()
    files = {"project": None if project is None else str(project), "user": str(user_file())}
    lines = [f"{key:<11} {row['value']}  ({row['source']})" for key, row in rows.items()]
    lines += [f"files: project {files['project'] or '(none found)'}; user {files['user']}"
              + ("" if user_file().is_file() else " (absent)")]  # fmt: skip
    variables = variable_rows()
    lines += ["variables (docs/configuration.md says what each does):"]
    lines += [f"  {name:<36} {row['value'] if row['set'] else '(unset)'}  ({row['source']})"
              for name, row in variables.items()]  # fmt: skip
    emit(ctx, json, {"settings": rows, "files": files, "variables": variables}, lines)
