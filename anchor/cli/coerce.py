"""Option values turned into Python values without building a pydantic TypeAdapter per parameter.

typer 0.29 coerces every option and argument through a pydantic TypeAdapter built on first use: the
import of pydantic and the adapters' schemas cost about 130 ms of every `anchor` call, half the budget
of a read (`anchor verify FILE` in 250 ms). The values this CLI takes are plain: text, whole
numbers and numbers (in a range or not), flags, paths and choices, one or a list of them. Those are
converted here, with the same checks and the same messages typer gives (a choice's without pydantic's
"Value error, " in front); anything else (a date, a clamped range, a parser of its own) still goes to
typer's own coercion. tests/cli/test_cli_coerce.py holds both to the same answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

_MESSAGES = {
    int: "Input should be a valid integer, unable to parse string as an integer",
    float: "Input should be a valid number, unable to parse string as a number",
    bool: "Input should be a valid boolean, unable to interpret input",
}
_TRUE = {"1", "on", "t", "true", "y", "yes"}
_FALSE = {"0", "off", "f", "false", "n", "no", ""}


def _leaf(annotation: Any, info: Any) -> Any | None:
    """The converter for one plain leaf type (a choice: its tuple of choices), or None when typer's own
    coercion is needed."""
    if info.parser is not None or getattr(info, "click_type", None) is not None:
        return None
    from typer._param_types import choice_coercion_annotation

    choice = choice_coercion_annotation(annotation, info)  # an Enum or a Literal
    if choice is not None:
        return choice[0]
    if annotation in (int, float):
        return None if info.clamp else annotation
    if annotation in (str, bool) or annotation is Path:
        return annotation
    return None


def _plain(annotation: Any, info: Any) -> tuple[Any, bool] | None:
    """(leaf type, is a list) for the annotations converted here; None for every other."""
    if get_origin(annotation) is list:
        (inner,) = get_args(annotation)
        leaf = _leaf(inner, info)
        return None if leaf is None else (leaf, True)
    leaf = _leaf(annotation, info)
    return None if leaf is None else (leaf, False)


def install() -> None:
    """Route plain parameters to the converter here. Left as it is when typer's internals are not the
    ones this was written against (then the CLI is only slower); tests/cli/test_cli_coerce.py notices."""
    try:
        from typer import _param_types, core
        from typer._click.exceptions import BadParameter
        from typer._coercion import RuntimeParam
    except ImportError:
        return
    original = getattr(core, "build_runtime_param", None)
    if original is None or getattr(original, "_anchor_plain", False):
        return

    @dataclass(frozen=True)
    class PlainRuntimeParam(RuntimeParam):
        leaf: Any = None
        many: bool = False

        def _one(self, value: Any, param: Any, ctx: Any) -> Any:
            leaf = self.leaf
            if isinstance(leaf, tuple):  # the values of an Enum or a Literal
                try:
                    case = self.parameter_info.case_sensitive
                    return _param_types.coerce_cli_choice(value, choices=leaf, case_sensitive=case, ctx=ctx)
                except ValueError as exc:
                    raise BadParameter(str(exc), ctx=ctx, param=param) from None
            if leaf is Path:
                if value == "":  # Path("") is ".": `anchor stamp "$UNSET"` would have stamped the whole folder
                    raise BadParameter("an empty path (an unset shell variable?); name a file or folder, or '.'",
                                       ctx=ctx, param=param)  # fmt: skip
                path = value if isinstance(value, Path) else Path(value)
                info = self.parameter_info
                return _param_types.coerce_cli_path(path, info, path_type=Path, param=param, ctx=ctx)
            if isinstance(value, bytes):
                value = value.decode("utf-8", "replace")
            if leaf is str:
                return str(value)
            if isinstance(value, leaf) and not (leaf is int and isinstance(value, bool)):
                return self._in_range(value, param, ctx) if leaf in (int, float) else value
            text = str(value).strip()
            try:
                if leaf is bool:
                    if text.lower() in _TRUE:
                        return True
                    if text.lower() in _FALSE:
                        return False
                    raise ValueError(text)
                number = leaf(text)
            except ValueError:
                raise BadParameter(_MESSAGES[leaf], ctx=ctx, param=param) from None
            return self._in_range(number, param, ctx) if leaf is not bool else number

        def _in_range(self, number: Any, param: Any, ctx: Any) -> Any:
            low, high = self.parameter_info.min, self.parameter_info.max
            if low is not None and number < low:
                raise BadParameter(f"Input should be greater than or equal to {low}", ctx=ctx, param=param)
            if high is not None and number > high:
                raise BadParameter(f"Input should be less than or equal to {high}", ctx=ctx, param=param)
            return number

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            if self.many:
                items = value if isinstance(value, (list, tuple)) else [value]
                return [self._one(item, param, ctx) for item in items]
            return self._one(value, param, ctx)

    def build_runtime_param(descriptor: Any) -> Any:
        plain = None if descriptor.file_annotation is not None else _plain(descriptor.annotation,
                                                                           descriptor.parameter_info)  # fmt: skip
        if plain is None:
            return original(descriptor)
        leaf, many = plain
        return PlainRuntimeParam(
            annotation=descriptor.annotation, parameter_info=descriptor.parameter_info, leaf=leaf, many=many
        )

    build_runtime_param._anchor_plain = True  # type: ignore[attr-defined]
    setattr(core, "build_runtime_param", build_runtime_param)  # noqa: B010 - a name typer.core does not export
