"""Options several command groups share, as typer declares them."""

from __future__ import annotations

from typing import Annotated

import typer

JsonFlag = Annotated[bool, typer.Option("--json", help="Print one JSON object for scripts.")]
