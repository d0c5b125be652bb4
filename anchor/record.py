"""Frozen, strictly typed records for what the read path decodes: proof files, receipts, deployment
records, verdicts.

Why not pydantic here: importing it and building these models' validators cost about 140 ms of every
`anchor verify`, more than half of a read's budget (issue 26: 250 ms end to end). These formats need
little of it: text (a pattern, a length), whole numbers (bounds), literals, objects of free JSON,
nested records and bounded tuples of them, each maybe absent. A `Record` is a frozen dataclass whose
fields say that in their annotations and `check(...)`; it is validated whenever it is made, from a
file or in code, and refuses a field it does not declare. Pydantic stays where its features are used
(the manifest kinds, the API's request bodies).

Stricter than pydantic's lax mode on purpose: "5" is not an integer and `true` is not 1; a proof
states numbers as numbers.

Errors are `RecordError`: the first bad field's location (`batch.proof.3`) and what is wrong with it,
for the caller to raise as its own typed error naming its file.
"""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

R = TypeVar("R", bound="Record")


class RecordError(ValueError):
    """A value that does not fit its record: `loc` names the field (a path), `msg` says why."""

    def __init__(self, loc: tuple[str | int, ...], msg: str) -> None:
        self.loc = loc
        self.msg = msg
        super().__init__(f"{self.field}: {msg}")

    @property
    def field(self) -> str:
        return ".".join(str(part) for part in self.loc) or "(root)"


def check(
    *,
    pattern: str | None = None,
    max_length: int | None = None,
    ge: int | None = None,
    gt: int | None = None,
    lt: int | None = None,
    default: Any = dataclasses.MISSING,
    default_factory: Any = dataclasses.MISSING,
) -> Any:
    """A field with constraints: `pattern` (text), `max_length` (text or tuple), bounds (integers)."""
    rules = {"pattern": re.compile(pattern) if pattern else None, "max_length": max_length, "ge": ge, "gt": gt,
             "lt": lt}  # fmt: skip
    return dataclasses.field(default=default, default_factory=default_factory, metadata={"rules": rules})


_NONE = type(None)


def _convert(value: Any, hint: Any, rules: dict[str, Any], loc: tuple[str | int, ...]) -> Any:
    origin = get_origin(hint)
    if origin is Union or origin is types.UnionType:
        options = get_args(hint)
        if value is None and _NONE in options:
            return None
        (inner,) = [o for o in options if o is not _NONE]
        return _convert(value, inner, rules, loc)
    if origin is Literal:
        if not any(type(value) is type(v) and value == v for v in get_args(hint)):
            expected = " or ".join(repr(v) for v in get_args(hint))
            raise RecordError(loc, f"Input should be {expected}")
        return value
    if hint is Any:
        return value
    if hint is str:
        if not isinstance(value, str):
            raise RecordError(loc, "Input should be a valid string")
        if rules.get("max_length") is not None and len(value) > rules["max_length"]:
            raise RecordError(loc, f"String should have at most {rules['max_length']} characters")
        if rules.get("pattern") is not None and not rules["pattern"].fullmatch(value):
            raise RecordError(loc, f"String should match pattern '{rules['pattern'].pattern}'")
        return value
    if hint is int:
        if not isinstance(value, int) or isinstance(value, bool):
            raise RecordError(loc, "Input should be a valid integer")
        for bound, ok, says in (("ge", value.__ge__, "greater than or equal to"), ("gt", value.__gt__, "greater than"),
                                ("lt", value.__lt__, "less than")):  # fmt: skip
            if rules.get(bound) is not None and not ok(rules[bound]):
                raise RecordError(loc, f"Input should be {says} {rules[bound]}")
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise RecordError(loc, "Input should be a valid boolean")
        return value
    if origin is tuple or origin is list:
        if not isinstance(value, (list, tuple)):
            raise RecordError(loc, f"Input should be a valid {origin.__name__}")
        if rules.get("max_length") is not None and len(value) > rules["max_length"]:
            raise RecordError(loc, f"{origin.__name__.title()} should have at most {rules['max_length']} items")
        item = get_args(hint)[0]
        return origin(_convert(v, item, {}, (*loc, i)) for i, v in enumerate(value))
    if origin is dict:
        key, item = get_args(hint)
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise RecordError(loc, "Input should be a valid dictionary")
        if item is Any:
            return value
        return {k: _convert(v, item, {}, (*loc, k)) for k, v in value.items()}
    if isinstance(hint, type) and issubclass(hint, Record):
        if isinstance(value, hint):
            return value
        try:
            return hint.model_validate(value)
        except RecordError as exc:
            raise RecordError((*loc, *exc.loc), exc.msg) from None
    raise TypeError(f"{loc}: a record field's type must be plain JSON or a Record, not {hint!r}")  # a bug


@dataclasses.dataclass(frozen=True, kw_only=True)
class Record:
    """Base of every record: subclass it as `@dataclasses.dataclass(frozen=True, kw_only=True)`."""

    @classmethod
    def _fields(cls) -> dict[str, tuple[Any, dict[str, Any]]]:
        """Each field's resolved type and rules, worked out once per class."""
        found = cls.__dict__.get("_resolved")
        if found is None:
            hints = typing.get_type_hints(cls)
            found = {f.name: (hints[f.name], f.metadata.get("rules", {})) for f in dataclasses.fields(cls)}
            cls._resolved = found  # type: ignore[attr-defined]
        return found

    def __post_init__(self) -> None:
        for name, (hint, rules) in self._fields().items():
            converted = _convert(getattr(self, name), hint, rules, (name,))
            object.__setattr__(self, name, converted)

    @classmethod
    def model_validate(cls: type[R], raw: Any) -> R:
        """A record from decoded JSON: an object with every required field and no other."""
        if isinstance(raw, cls):
            return raw
        if not isinstance(raw, dict):
            raise RecordError((), "Input should be a valid dictionary or instance of " + cls.__name__)
        fields = dataclasses.fields(cls)
        names = {f.name for f in fields}
        for key in raw:
            if key not in names:
                raise RecordError((str(key),), "Extra inputs are not permitted")
        for f in fields:
            if f.name not in raw and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise RecordError((f.name,), "Field required")
        return cls(**raw)

    @classmethod
    def model_validate_json(cls: type[R], text: str | bytes) -> R:
        return cls.model_validate(json.loads(text))

    def model_dump(
        self, *, mode: str = "python", exclude: set[str] | None = None, exclude_none: bool = False
    ) -> dict[str, Any]:
        """The record as plain JSON values (tuples as lists in mode "json"), nested records included."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            if exclude and f.name in exclude:
                continue
            value = _dump(getattr(self, f.name), mode, exclude_none)
            if value is None and exclude_none:
                continue
            out[f.name] = value
        return out

    def model_dump_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), separators=(",", ":"), ensure_ascii=False)

    def model_copy(self: R, *, update: dict[str, Any] | None = None) -> R:
        """A copy with `update`'s fields replaced (and checked, as any record is when it is made)."""
        return dataclasses.replace(self, **(update or {}))


def _dump(value: Any, mode: str, exclude_none: bool) -> Any:
    if isinstance(value, Record):
        return value.model_dump(mode=mode, exclude_none=exclude_none)
    if isinstance(value, (tuple, list)):
        items = [_dump(v, mode, exclude_none) for v in value]
        return items if mode == "json" or isinstance(value, list) else tuple(items)
    return value
