"""Turn pydantic validation failures into `BadInput` that names the field, for every manifest kind."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from anchor.errors import BadInput

if TYPE_CHECKING:
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")


def validated(model: type[M], data: Any, source: str) -> M:
    """`model.model_validate(data)`; on failure raises `BadInput` naming `source` and the first bad field."""
    from pydantic import ValidationError  # imported by the models that get here, never before

    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()  # a mistyped key first: it explains the "Field required" of the key meant
        first = next((e for e in errors if e["type"] == "extra_forbidden" and len(e["loc"]) == 1), errors[0])
        field = ".".join(str(part) for part in first["loc"]) or "(root)"
        message = first["msg"].removeprefix("Value error, ")
        if first["type"] == "extra_forbidden" and len(first["loc"]) == 1:  # a mistyped key: name the one meant
            from anchor.errors import did_you_mean

            message = "not a field" + (did_you_mean(field, model.model_fields) or f" of {model.__name__}")
        raise BadInput(f"{source}: field '{field}': {message}", detail={"field": field, "source": source}) from None
