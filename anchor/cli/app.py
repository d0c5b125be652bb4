"""Root of the `anchor` CLI: the global options and where each command lives.

Each command is imported when it is named (anchor.cli.commands.LazyGroup): `anchor verify FILE` loads
the verify command and the library it calls, not the research runtime, MLflow or the server. Heavy
imports (web3, solcx, pydantic) happen inside the commands that need them, so `--help` stays fast too.
"""

from __future__ import annotations

from typing import Any

import click

from anchor.cli.commands import LazyGroup
from anchor.cli.options import data_dir, json_option, rpc_url

HELP = """Anchor: tamper-evident, on-chain-anchored provenance for research results.

Without --rpc-url (or ANCHOR_RPC_URL) every command uses the embedded local chain, an anvil on
127.0.0.1 whose state lives in the data directory (`anchor info` says which one, and why). A command
that writes starts it if it is not running and leaves it running for the next command, with its pid:
stop it with `anchor chain down`.

\b
Exit codes:
  0  OK / verified
  1  internal error: a bug in anchor, and nothing else (ANCHOR_DEBUG=1 shows the traceback)
  2  bad input (arguments, paths, files)
  3  not anchored
  4  tampered (the data differs from what was anchored)
  5  chain, anchoring service or MLflow tracking server unreachable
  6  deployment mismatch (the address does not hold the recorded registry; no answer given)
  7  conflict (the registry refused a write)
  8  toolchain missing: anvil or solc (install Foundry; in a source checkout, `make install`)
  9  not our registry (the proof names a registry other than the trusted one)
  10  verified, but not as required (--expect-submitter, --anchored-before)
  11  anchored, but not yet as final as --min-finality requires
  12  the read endpoints disagree: no quorum (--quorum) backs one answer
  13  a mission's command failed or ran out of its budget (nothing anchored)
  14  pending: a service accepted it (signed receipt), not anchored yet; run `anchor upgrade`
  15  the disk is full or read-only where a file had to be written, or the journal is damaged (nothing lost)
  16  retracted: anchored, and since withdrawn on chain by whoever anchored it (`anchor retract`)
  17  the journal cannot be used as it is: busy past the timeout, of another schema, unreachable
  18  a git command of the research harness failed in your repository (left as it was)
  130  aborted (Ctrl-C): nothing is sent after it; what was sent before is in the journal
  141  the reader of the output closed it early (`| head -1`): nothing more is said
"""

COMMANDS = {
    "anchor": "anchor.cli.data_cmds:anchor_alias",
    "attest": "anchor.cli.data_cmds:attest",
    "bundle": "anchor.cli.data_cmds:bundle",
    "chain": "anchor.cli.chain_cmds:app",
    "config": "anchor.cli.config_cmds:app",
    "deploy": "anchor.cli.deploy_cmds:deploy",
    "flush": "anchor.cli.journal_cmds:old_flush",
    "hash": "anchor.cli.data_cmds:hash_",
    "index": "anchor.cli.deploy_cmds:index",
    "info": "anchor.cli.config_cmds:info",
    "journal": "anchor.cli.journal_cmds:journal_app",
    "lineage": "anchor.cli.research_cmds:lineage",
    "lookup": "anchor.cli.data_cmds:lookup",
    "mission": "anchor.cli.mission_cmds:missions",
    "mlflow": "anchor.cli.mlflow_cmds:app",
    "prove": "anchor.cli.data_cmds:prove",
    "render": "anchor.cli.deploy_cmds:render",
    "research": "anchor.cli.research_cmds:app",
    "retract": "anchor.cli.retract_cmds:retract",
    "seal": "anchor.cli.seal_cmds:seal",
    "serve": "anchor.cli.deploy_cmds:serve",
    "snapshot": "anchor.cli.mission_cmds:snapshots",
    "stamp": "anchor.cli.data_cmds:stamp",
    "status": "anchor.cli.journal_cmds:old_status",
    "submit": "anchor.cli.journal_cmds:old_submit",
    "upgrade": "anchor.cli.data_cmds:upgrade",
    "verify": "anchor.cli.data_cmds:verify",
}
"""Every command of the root, as `module:attribute` (imported when named)."""


class Session(dict[str, Any]):
    """What the root passes down (`ctx.obj`): the root options as given (`given`), `--json`, and the
    settings, resolved on first use, so a command that needs none (`hash`) is not stopped by a broken
    anchor.toml, and a `--data-dir` given after the subcommand is seen."""

    def __missing__(self, key: str) -> Any:
        if key != "settings":
            raise KeyError(key)
        from anchor.cli.config_cmds import cli_settings

        data_dir, rpc_urls = self["given"]
        self["settings"] = cli_settings(data_dir, rpc_urls)
        return self["settings"]

    def give(self, name: str, value: Any) -> None:
        """A root option given after the subcommand (anchor.cli.commands.AnchorCommand)."""
        data_dir, rpc_urls = self["given"]
        if name == "data_dir":
            data_dir = value
        else:
            rpc_urls = [*(rpc_urls or []), *value]
        self["given"] = (data_dir, rpc_urls)
        self.pop("settings", None)


class Root(LazyGroup):
    """The root group: `serve`'s mode flags of earlier releases sent to the command each is now."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name, found, rest = super().resolve_command(ctx, args)
        if name == "serve":
            from anchor.cli.deploy_cmds import renamed

            now = renamed(rest)
            if now is not None:
                return now[0], self.get_command(ctx, now[0]), now[1]
        return name, found, rest


def _version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        from anchor import __version__

        click.echo(f"anchor {__version__}")
        ctx.exit()


@click.group(
    "anchor",
    cls=Root,
    lazy=COMMANDS,
    help=HELP,
    params=[data_dir(), rpc_url()],
    context_settings={"max_content_width": 100, "show_default": True, "help_option_names": ["-h", "--help"]},
)
@click.option(
    "--version", is_flag=True, expose_value=False, is_eager=True, callback=_version, help="Print the version and exit."
)
@json_option
@click.pass_context
def app(ctx: click.Context, /, json: bool, **given: Any) -> None:
    ctx.obj = Session(given=(given["data_dir"], list(given["rpc_url"]) or None), json=json)
