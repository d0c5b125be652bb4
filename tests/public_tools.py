"""Checks made with public tools only (Foundry's cast), never with Anchor's own code."""

from __future__ import annotations

import subprocess
from typing import Any

from tests.conftest import ROOT


def cast_verify_inclusion(proof: dict[str, Any], rpc_url: str) -> bool:
    """The registry's own inclusion view, called with cast from a proof file's fields."""
    out = subprocess.run(
        [
            str(ROOT / "node_modules" / ".bin" / "cast"), "call", proof["anchor"]["registry"],
            "verifyInclusion(bytes32,bytes32[],bytes32)(bool)", proof["batch"]["root"],
            "[" + ",".join(proof["batch"]["proof"]) + "]", proof["manifest_digest"], "--rpc-url", rpc_url,
        ],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return out.stdout.strip() == "true"
