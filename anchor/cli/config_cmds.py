"""`anchor config show`: the effective settings and where each one came from; `anchor info`: which
data dir, chain and journal a command run here uses, and the rule that chose the data dir."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from anchor.cli.commands import AnchorGroup, command
from anchor.cli.options import PATH, json_option
from anchor.cli.output import emit, environment

app = AnchorGroup("config", help="Show the effective settings (command line, ANCHOR_* variables, anchor.toml files).")


@app.command()
@json_option
@click.pass_context
def show(ctx: click.Context, json: bool) -> None:
    """Print every setting, its value and its source: an option, a variable, a file, or the default."""
    from anchor.settings.config import project_file, user_file
    from anchor.settings.session import Settings, redact_url
    from anchor.settings.variables import _endpoint, variable_rows

    data_dir, rpc_url = ctx.find_root().obj["given"]
    settings, found = Settings._resolve(data_dir, rpc_url[0] if rpc_url else None, env=environment())
    effective = {
        "data_dir": str(settings.data_dir),
        "rpc_url": _endpoint(settings.rpc_url) if settings.rpc_url else "(the local chain)",
        "local_port": found["local_port"].value or "(18545, or the port recorded in the data directory)",
        "keystore": found["keystore"].value or "(none: ANCHOR_PRIVATE_KEY, or the dev key on the local chain)",
        "journal_url": redact_url(settings.journal_url) if settings.journal_url else "(none: the ledger is a file)",
    }
    rows = {key: {"value": effective[key], "source": found[key].source} for key in effective}
    project = project_file()
    files = {"project": None if project is None else str(project), "user": str(user_file())}
    lines = [f"{key:<11} {row['value']}  ({row['source']})" for key, row in rows.items()]
    lines += [
        f"files: project {files['project'] or '(none found)'}; user {files['user']}"
        + ("" if user_file().is_file() else " (absent)")
    ]
    variables = variable_rows(environment())
    lines += ["variables (docs/configuration.md says what each does):"]
    lines += [
        f"  {name:<36} {row['value'] if row['set'] else '(unset)'}  ({row['source']})"
        for name, row in variables.items()
    ]
    emit(ctx, json, {"settings": rows, "files": files, "variables": variables}, lines)


DATA_DIR_ORDER = (
    "--data-dir, ANCHOR_DATA_DIR, the project's anchor.toml, the nearest .anchor/ above the"
    " verified path or the working directory, the user's anchor.toml, ~/.local/share/anchor"
)
"""The rule's order, as `anchor info` says it (anchor.settings.config)."""


def cli_settings(data_dir: Path | None, rpc_url: list[str] | None, near: Path | None = None) -> Any:
    """The settings every command runs with: the library's (anchor.settings), and the command line's one
    difference, documented in `anchor --help`: a write starts the embedded local chain when it is not
    running and leaves it running for the next command (a library call refuses unless asked)."""
    import dataclasses

    from anchor.settings.session import Settings

    settings = Settings.load(data_dir, rpc_url, near=near, env=environment())
    return dataclasses.replace(settings, local_chain_start="keep_running")


def settings_near(ctx: click.Context, path: Path) -> Any:
    """The settings for reading about `path`: with no --data-dir, the data dir nearest to `path` comes
    before the working directory's (anchor.settings.config), so `anchor verify outside/results` from
    outside's parent reads the chain that stamped it."""
    root = ctx.find_root().obj
    data_dir, rpc_url = root["given"]
    if data_dir is None:
        root["settings"] = cli_settings(None, rpc_url, near=path)
    return root["settings"]


@command("info")
@click.argument(
    "path",
    type=PATH,
    required=False,
    help="The data dir a stamp or verify of PATH would use (default: a command run here).",
)
@json_option
@click.pass_context
def info(ctx: click.Context, path: Path | None, json: bool) -> None:
    """Which data dir a command run here uses and the rule that chose it; its chain and journal."""
    from anchor import __version__
    from anchor.settings.session import endpoint_of, redact_url

    settings = ctx.find_root().obj["settings"] if path is None else settings_near(ctx, path)
    exists = settings.data_dir.is_dir()
    data = {
        "data_dir": {
            "path": str(settings.data_dir),
            "rule": settings.data_dir_source,
            "exists": exists,
            "order": DATA_DIR_ORDER,
        },
        "version": __version__,
    }
    lines = [
        f"data dir  {settings.data_dir}" + ("" if exists else "  (not made yet: the first write makes it)"),
        f"  chosen by {settings.data_dir_source}",
        f"  (the order: {DATA_DIR_ORDER})",
    ]
    data["chain"], chain_line = _chain_info(settings)
    lines.append(chain_line)
    if settings.journal_url:
        data["journal"] = redact_url(settings.journal_url)
        lines.append(f"journal   {endpoint_of(settings.journal_url)} (ANCHOR_JOURNAL_URL)")
    else:
        journal = settings.layout.journal
        data["journal"] = str(journal)
        lines.append(f"journal   {journal}" + ("" if journal.is_file() else " (none yet)"))
    lines.append(f"anchor {__version__}; every setting and its source: anchor config show")
    emit(ctx, json, data, lines)


def _chain_info(settings: Any) -> tuple[dict[str, Any], str]:
    """The chain the settings name, without reaching a remote one: an RPC endpoint as configured, or the
    data dir's local chain as its record and a probe on 127.0.0.1 find it."""
    from anchor.chain.node import LocalChain
    from anchor.settings.session import endpoint_of

    if settings.rpc_url:
        return {"rpc_url": endpoint_of(settings.rpc_url), "local": False}, f"chain     {endpoint_of(settings.rpc_url)}"
    if not settings.data_dir.is_dir():
        chain = LocalChain(settings.data_dir, settings.local_port)
        return {"rpc_url": chain.rpc_url, "local": True, "running": False}, (
            f"chain     the local chain of this data dir: none yet (the first stamp starts it on {chain.rpc_url})"
        )
    status = LocalChain(settings.data_dir, settings.local_port).status()
    said = (
        f"running at {status.rpc_url} (anvil pid {status.pid}), block {status.block_number}"
        if status.running
        else f"stopped (`anchor chain up` starts it on {status.rpc_url})"
    )
    return {**status.to_json(), "local": True}, f"chain     the local chain of this data dir: {said}"
