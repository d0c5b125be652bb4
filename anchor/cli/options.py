"""Options several command groups share, as typer declares them."""

from __future__ import annotations

from typing import Annotated

import typer

JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object for scripts.")]
InsecureTokenFlag = Annotated[
    bool,
    typer.Option(
        "--allow-insecure-token",
        help="Send the service token over plain http to a host that is not this machine (it can be read on the way).",
    ),
]
SandboxRuntimeOpt = Annotated[
    str,
    typer.Option(
        "--sandbox-runtime",
        help="auto (gvisor where runsc runs here, else bubblewrap), gvisor, or bubblewrap (docs/research.md).",
    ),
]


# -- what a verdict must show: `verify` and `mlflow verify` (anchor.library.verifier.Policy) ---------------
def finality_word(value: str | None) -> str | None:
    """The Policy's own reading of the word (one rule), told as a usage error before any proof is read or
    any chain is asked (it took 2.4 s to say so)."""
    if value is None:  # typer asks even when the option is not given
        return None
    from anchor.errors import BadInput
    from anchor.library.verifier import Policy

    try:
        Policy(min_finality=value)
    except BadInput as exc:
        raise typer.BadParameter(exc.message.removeprefix("min_finality ")) from None
    return value


RegistryOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--registry",
        help="Trust this registry address (default: the deployment recorded for the chain in the data dir);"
        " repeat it for a proof with anchors on several chains.",
    ),
]
RequireOpt = Annotated[
    str,
    typer.Option(
        "--require", help="any, all, or N of the proof's anchors (services) must verify; more than it holds: exit 10."
    ),
]
ExpectSubmitterOpt = Annotated[
    str | None,
    typer.Option("--expect-submitter", help="Require that this account anchored it (exit 10 otherwise)."),
]
AnchoredBeforeOpt = Annotated[
    str | None,
    typer.Option("--anchored-before", help="Require anchoring before this ISO date/time, UTC unless given."),
]
MinFinalityOpt = Annotated[
    str | None,
    typer.Option("--min-finality", help="Require safe, finalized, or N confirmations (exit 11 otherwise).",
                 callback=finality_word),
]  # fmt: skip
QuorumOpt = Annotated[
    int | None,
    typer.Option("--quorum", help="Endpoints (of --rpc-url given several times) that must agree; default a majority."),
]
