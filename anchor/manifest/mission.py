"""The mission: what a research run is asked to find out, fixed before it runs (docs/manifest.md,
"Mission").

Typed and immutable: a frozen model, unknown fields refused, every string bounded. Its digest is
BLAKE3 in its own domain over canonical JSON, so the same mission written twice (key order, TOML or
JSON, spacing) is the same mission, and a mission cannot be passed off as any other kind of manifest.
A result bundle binds the SHA-256 of the mission file it ran; `anchor mission check` prints both.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from anchor.errors import BadInput
from anchor.manifest.attempt import canonical_decimal
from anchor.manifest.canonical import canonical_json
from anchor.manifest.identity import HasIdentity
from anchor.manifest.validation import validated

HEX64 = r"^[0-9a-f]{64}$"
KEY = r"^[a-z][a-z0-9_]{0,63}$"
MAX_MISSION_BYTES = 256 * 1024


class Budget(BaseModel):
    """How much the mission may spend: wall-clock minutes and attempts, both required."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    minutes: int = Field(ge=1, le=7 * 24 * 60)
    attempts: int = Field(ge=1, le=1_000_000)


class StopRule(BaseModel):
    """Stop as soon as `metric` reaches `target` in the direction `mode` (a decimal string, exact)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    metric: str = Field(min_length=1, max_length=128)
    mode: Literal["max", "min"]
    target: str

    @field_validator("target", mode="before")
    @classmethod
    def _decimal(cls, value: object) -> str:
        return canonical_decimal(value, "target")


class Mission(HasIdentity, BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    kind: Literal["mission"] = "mission"
    version: Literal[1] = 1
    hypothesis: str = Field(min_length=1, max_length=4096)
    covers: dict[str, str] = Field(default_factory=dict, max_length=32)
    """The identities it is about (e.g. symbol, horizon, cohort): lowercase keys, short values."""
    budget: Budget
    stop_rules: tuple[StopRule, ...] = Field(default=(), max_length=16)
    evaluator_policy_sha256: str = Field(pattern=HEX64)
    """The evaluator policy it is judged by (the SHA-256 a result bundle binds)."""
    command: str = Field(min_length=1, max_length=4096)

    @field_validator("covers")
    @classmethod
    def _identities(cls, covers: dict[str, str]) -> dict[str, str]:
        import re

        for key, value in covers.items():
            if not re.match(KEY, key):
                raise ValueError(f"covers: {key!r} is not a lowercase identifier ([a-z][a-z0-9_]*)")
            if not 1 <= len(value) <= 256:
                raise ValueError(f"covers.{key}: 1 to 256 characters")
        return dict(sorted(covers.items()))

    def identity(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def sha256(self) -> str:
        """SHA-256 of its canonical JSON: the `mission_sha256` a run's result bundle binds (the same
        mission as TOML, JSON or through the API is one mission)."""
        return hashlib.sha256(canonical_json(self.identity())).hexdigest()


def load_mission(path: Path) -> tuple[Mission, bytes]:
    """The mission in `path` (TOML, or JSON for a `.json` file) and the file's bytes; `BadInput` naming
    the file and the field."""
    from anchor.files import read_document

    text, raw = read_document(path, "mission file", {"file": str(path)}, limit=MAX_MISSION_BYTES)
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except ValueError as exc:
        raise BadInput(
            f"{path}: not a {'JSON' if path.suffix == '.json' else 'TOML'} mission ({exc})", detail={"file": str(path)}
        ) from None
    if not isinstance(data, dict):
        raise BadInput(f"{path}: a mission is an object", detail={"file": str(path)})
    return validated(Mission, data, str(path)), raw
