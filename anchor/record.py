"""Frozen, strictly typed records for what the read path decodes: proof files, receipts, deployment
records, verdicts.

Why not pydantic here: importing it and building these models' validators cost about 140 ms of every
`anchor verify`, more than half of a read's budget (250 ms end to end). These formats need
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
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Union, get_args, get_origin, is_typeddict

if TYPE_CHECKING:
    from collections.abc import Mapping

R = TypeVar("R", bound="Record")


class Value:
    """Equality, hashing and repr by fields, written once for every frozen dataclass of the package.

    Why not the dataclass's own: it compiles each generated method with `exec` as its module is
    imported, and `eq`, `hash` and `repr` were a quarter of that for the 29 classes `anchor verify FILE`
    loads (6 of its 100 ms of start-up). Declare a value class
    `@dataclass(frozen=True, slots=True, eq=False, repr=False)` and subclass this: it compares and
    hashes as the generated methods would (the same class, the fields in order, `field(compare=False)`
    left out), and prints `Name(field=value, ...)`."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _compared(self) == _compared(other)

    def __hash__(self) -> int:
        return hash(_compared(self))

    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in dataclasses.fields(self) if f.repr)  # type: ignore[arg-type]
        return f"{type(self).__qualname__}({shown})"


def _json_kind(raw: object) -> str:
    """How a decoded JSON value is said in a refusal (`[1]` is an array, not a "list")."""
    kinds = {list: "an array", str: "a string", bool: "true or false", int: "a number", float: "a number"}
    return "null" if raw is None else kinds.get(type(raw), type(raw).__name__)


def _compared(value: Value) -> tuple[object, ...]:
    fields = dataclasses.fields(value)  # type: ignore[arg-type]
    return tuple(getattr(value, f.name) for f in fields if (f.compare if f.hash is None else f.hash))


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
    rules = {
        "pattern": re.compile(pattern) if pattern else None,
        "max_length": max_length,
        "ge": ge,
        "gt": gt,
        "lt": lt,
    }
    return dataclasses.field(default=default, default_factory=default_factory, metadata={"rules": rules})


_NONE = type(None)


Convert = typing.Callable[[Any, tuple[str | int, ...]], Any]
"""A field's checker: (value, where) -> the value as the record keeps it, or `RecordError`."""


def _converter(hint: Any, rules: dict[str, Any]) -> Convert:
    """The checker of one field type, worked out once per field (not per value): reading a type's
    origin and arguments at every value was most of a proof's load (1,000 proofs of one
    batch spent 0.27 s of 0.9 s in it)."""
    origin = get_origin(hint)
    if origin is Union or origin is types.UnionType:
        options = get_args(hint)
        (inner,) = [o for o in options if o is not _NONE]
        convert = _converter(inner, rules)
        if _NONE not in options:
            return convert
        return lambda value, loc: None if value is None else convert(value, loc)
    if origin is Literal:
        allowed = get_args(hint)
        expected = " or ".join(repr(v) for v in allowed)

        def literal(value: Any, loc: tuple[str | int, ...]) -> Any:
            if not any(type(value) is type(v) and value == v for v in allowed):
                raise RecordError(loc, f"Input should be {expected}")
            return value

        return literal
    if hint is Any or hint is object:
        return lambda value, loc: value
    if is_typeddict(hint):  # a JSON object of a known shape: its decoder checks the keys, as for a listing row
        return _mapping(lambda value, loc: value, True)
    if hint is str:
        return _text(rules.get("max_length"), rules.get("pattern"))
    if hint is int:
        return _whole(rules)
    if hint is bool:

        def boolean(value: Any, loc: tuple[str | int, ...]) -> Any:
            if not isinstance(value, bool):
                raise RecordError(loc, "Input should be a valid boolean")
            return value

        return boolean
    if origin is tuple or origin is list:
        return _sequence(origin, _converter(get_args(hint)[0], {}), rules.get("max_length"))
    if origin is dict:
        return _mapping(_converter(get_args(hint)[1], {}), get_args(hint)[1] in (Any, object))
    if isinstance(hint, type) and issubclass(hint, Record):
        return _nested(hint)
    raise TypeError(f"a record field's type must be plain JSON or a Record, not {hint!r}")  # a bug


def _text(max_length: int | None, pattern: re.Pattern[str] | None) -> Convert:
    def text(value: Any, loc: tuple[str | int, ...]) -> Any:
        if not isinstance(value, str):
            raise RecordError(loc, "Input should be a valid string")
        if max_length is not None and len(value) > max_length:
            raise RecordError(loc, f"String should have at most {max_length} characters")
        if pattern is not None and not pattern.fullmatch(value):
            raise RecordError(loc, f"String should match pattern '{pattern.pattern}'")
        return value

    return text


def _whole(rules: dict[str, Any]) -> Convert:
    known = (
        ("ge", int.__ge__, "greater than or equal to"),
        ("gt", int.__gt__, "greater than"),
        ("lt", int.__lt__, "less than"),
    )
    bounds = [(rules[name], ok, says) for name, ok, says in known if rules.get(name) is not None]

    def whole(value: Any, loc: tuple[str | int, ...]) -> Any:
        if not isinstance(value, int) or isinstance(value, bool):
            raise RecordError(loc, "Input should be a valid integer")
        for bound, ok, says in bounds:
            if not ok(value, bound):
                raise RecordError(loc, f"Input should be {says} {bound}")
        return value

    return whole


def _sequence(origin: type, item: Convert, max_length: int | None) -> Convert:
    name = origin.__name__

    def sequence(value: Any, loc: tuple[str | int, ...]) -> Any:
        if not isinstance(value, (list, tuple)):
            raise RecordError(loc, f"Input should be a valid {name}")
        if max_length is not None and len(value) > max_length:
            raise RecordError(loc, f"{name.title()} should have at most {max_length} items")
        return origin(item(v, (*loc, i)) for i, v in enumerate(value))

    return sequence


def _mapping(item: Convert, free: bool) -> Convert:
    def mapping(value: Any, loc: tuple[str | int, ...]) -> Any:
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise RecordError(loc, "Input should be a valid dictionary")
        return value if free else {k: item(v, (*loc, k)) for k, v in value.items()}

    return mapping


def _nested(hint: type[Record]) -> Convert:
    def nested(value: Any, loc: tuple[str | int, ...]) -> Any:
        if isinstance(value, hint):
            return value
        try:
            return hint.model_validate(value)
        except RecordError as exc:
            raise RecordError((*loc, *exc.loc), exc.msg) from None

    return nested


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class Record(Value):
    """Base of every record: subclass it as `@dataclasses.dataclass(frozen=True, kw_only=True, eq=False,
    repr=False)` (equality and repr are `Value`'s)."""

    @classmethod
    def _fields(cls) -> dict[str, Convert]:
        """Each field's checker, worked out once per class from its resolved type and rules."""
        found: dict[str, Convert] | None = cls.__dict__.get("_resolved")
        if found is None:
            hints = typing.get_type_hints(cls)
            found = {f.name: _converter(hints[f.name], f.metadata.get("rules", {})) for f in dataclasses.fields(cls)}
            cls._resolved = found  # type: ignore[attr-defined]
        return found

    def __post_init__(self) -> None:
        for name, convert in self._fields().items():
            object.__setattr__(self, name, convert(getattr(self, name), (name,)))

    @classmethod
    def model_validate(cls: type[R], raw: object) -> R:
        """A record from decoded JSON: an object with every required field and no other."""
        if isinstance(raw, cls):
            return raw
        if not isinstance(raw, dict):
            raise RecordError((), f"expected a JSON object, found {_json_kind(raw)}")
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
    ) -> dict[str, object]:
        """The record as plain JSON values (tuples as lists in mode "json"), nested records included."""
        out: dict[str, object] = {}
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

    def model_copy(self: R, *, update: Mapping[str, object] | None = None) -> R:
        """A copy with `update`'s fields replaced and checked, as any record's are when it is made.

        Only those fields are checked again: the others were checked when this record was made, and a
        record is frozen (checking the whole proof again for each changed anchor was a fifth of the
        time 1,000 proofs took to verify)."""
        fields = self._fields()
        unknown = [name for name in update or {} if name not in fields]
        if unknown:  # as dataclasses.replace says it
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument {unknown[0]!r}")
        copied = object.__new__(type(self))
        copied.__dict__.update(self.__dict__)
        for name, value in (update or {}).items():
            object.__setattr__(copied, name, fields[name](value, (name,)))
        return copied


def _dump(value: Any, mode: str, exclude_none: bool) -> Any:
    if isinstance(value, Record):
        return value.model_dump(mode=mode, exclude_none=exclude_none)
    if isinstance(value, (tuple, list)):
        items = [_dump(v, mode, exclude_none) for v in value]
        return items if mode == "json" or isinstance(value, list) else tuple(items)
    return value
