"""Root of the `anchor` CLI: global options and the command groups, each in its own module.

Heavy imports (web3, solcx, pydantic) happen inside the commands that need them, so `--help`
stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from anchor.cli import (
    chain_cmds,
    coerce,
    config_cmds,
    data_cmds,
    deploy_cmds,
    journal_cmds,
    mission_cmds,
    mlflow_cmds,
    research_cmds,
    retract_cmds,
    seal_cmds,
)

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

coerce.install()  # before any command runs: plain values converted without pydantic
app = typer.Typer(help=HELP, no_args_is_help=True, add_completion=True, pretty_exceptions_enable=False)
app.add_typer(chain_cmds.app, name="chain")
app.add_typer(config_cmds.app, name="config")
app.add_typer(mlflow_cmds.app, name="mlflow")
app.command("info")(config_cmds.info)
deploy_cmds.register(app)
data_cmds.register(app)
journal_cmds.register(app)
research_cmds.register(app)
mission_cmds.register(app)
retract_cmds.register(app)
seal_cmds.register(app)


def _version(value: bool) -> None:
    if value:
        from anchor import __version__

        print(f"anchor {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            help="Data directory (else ANCHOR_DATA_DIR, anchor.toml, the nearest .anchor/"
            " above the working directory, ~/.local/share/anchor; `anchor info` says which).",
        ),
    ] = None,
    rpc_url: Annotated[
        list[str] | None,
        typer.Option(
            "--rpc-url",
            help="EVM JSON-RPC URL (else ANCHOR_RPC_URL, anchor.toml, the local chain). Repeat it to read"
            " verdicts from several endpoints: verify and lookup then need a quorum of them to agree.",
        ),
    ] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object for scripts.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    ctx.obj = {"settings": config_cmds.cli_settings(data_dir, rpc_url), "json": json_output,
               "given": (data_dir, rpc_url)}  # fmt: skip
