"""The attempt contract: what the search may edit, how an attempt runs and how it is scored.

It is fixed before the first attempt (its digest is anchored: pre-registration) and every attempt
binds to it, so nobody can move the goalposts after seeing results.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from anchor.errors import BadInput
from anchor.manifest.validation import validated


class AttemptContract(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str = Field(min_length=1)
    command: str = Field(min_length=1, description="run with {run_dir}, {run_name}, {attempt_timeout_minutes}")
    editable: tuple[str, ...] = Field(min_length=1, description="repo-relative paths the search may change")
    metric: str = Field(min_length=1, max_length=128)
    metric_source: str = "jsonl:metrics.jsonl"
    mode: Literal["max", "min"]
    attempt_timeout_minutes: float = Field(gt=0, le=24 * 60)
    min_improvement: float = Field(default=0.0, ge=0)
    grace_seconds: float = Field(default=5.0, ge=0, le=300)

    @field_validator("editable")
    @classmethod
    def _relative(cls, paths: tuple[str, ...]) -> tuple[str, ...]:
        for path in paths:
            parts = path.split("/")
            if path.startswith("/") or any(p in ("", ".", "..") for p in parts) or parts[0] == ".git":
                raise ValueError(f"{path!r} is not a relative path inside the repository")
        return paths

    @field_validator("metric_source")
    @classmethod
    def _source(cls, source: str) -> str:
        kind, _, arg = source.partition(":")
        if kind not in ("jsonl", "json") or not arg or arg.startswith("/") or ".." in arg.split("/"):
            raise ValueError(f"{source!r}: use jsonl:<file in run_dir> (last row) or json:<file in run_dir>")
        return source

    def render(self, run_dir: Path, run_name: str) -> str:
        """The command with its three placeholders filled; other braces (JSON in a shell line) stay."""
        return (
            self.command.replace("{run_dir}", str(run_dir))
            .replace("{run_name}", run_name)
            .replace("{attempt_timeout_minutes}", f"{self.attempt_timeout_minutes:g}")
        )


def load_contract(path: Path) -> tuple[AttemptContract, bytes]:
    """The contract and its bytes (what gets hashed and anchored). Raises `BadInput` naming the field."""
    try:
        raw = path.read_bytes()
        data = tomllib.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        raise BadInput(f"{path}: no such attempt contract", detail={"field": "contract"}) from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BadInput(f"{path}: not a TOML attempt contract ({exc})", detail={"field": "contract"}) from None
    return validated(AttemptContract, data, str(path)), raw
