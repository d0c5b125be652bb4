"""Response models of the public API (frozen: answers are values, not state)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Health(BaseModel):
    model_config = ConfigDict(frozen=True)

    status: str
    version: str


class ErrorPublic(BaseModel):
    model_config = ConfigDict(frozen=True)

    code: str
    message: str
    detail: dict[str, object]
