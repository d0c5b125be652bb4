"""Turn pydantic validation failures into `BadInput` that names the field, for every manifest kind."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from anchor.errors import BadInput

M = TypeVar("M", bound=BaseModel)


def validated(model: type[M], data: Any, source: str) -> M:
    """`model.model_validate(data)`; on failure raises `BadInput` naming `source` and the first bad field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(root)"
        message = first["msg"].removeprefix("Value error, ")
        raise BadInput(f"{source}: field '{field}': {message}", detail={"field": field, "source": source}) from None
