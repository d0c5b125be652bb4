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
        "--sandbox-runtime", help="bubblewrap, or gvisor (the same sandbox under gVisor's runsc; docs/research.md)."
    ),
]
