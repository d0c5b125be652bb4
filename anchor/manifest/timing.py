"""The timing record: a result bundle's six latency milestones, anchored beside it (docs/manifest.md,
"Timing record").

Why a record of its own: the milestones stay out of the bundle's identity (the same result computed
faster is the same result), but a number kept only in a proof file's annotations can be edited without
anyone noticing. Anchored as a separate manifest that names the bundle's digest, the milestones are
tamper-evident while the bundle's identity does not change with them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from anchor.manifest.bundle import Milestones
from anchor.manifest.identity import HasIdentity

HEX64 = r"^[0-9a-f]{64}$"


class TimingRecord(HasIdentity, BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    kind: Literal["timing"] = "timing"
    version: Literal[1] = 1
    bundle: str = Field(pattern=HEX64)
    """The digest of the bundle manifest these milestones belong to."""
    milestones: dict[str, str]

    @field_validator("milestones")
    @classmethod
    def _milestones(cls, value: dict[str, str]) -> dict[str, str]:
        """The six names only, ordered in time, each RFC 3339 with a timezone; written as Python's
        isoformat writes them, so one time has one spelling."""
        normalized = Milestones.model_validate(value).to_json()
        if normalized != value:
            raise ValueError(f"milestones: not in canonical form; expected {normalized}")
        if not normalized:
            raise ValueError("milestones: at least one")
        return normalized

    def identity(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


def timing_for(bundle_digest: bytes, milestones: Milestones) -> TimingRecord:
    return TimingRecord(bundle=bundle_digest.hex(), milestones=milestones.to_json())
