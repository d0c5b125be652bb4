"""Canonical JSON: the one byte encoding that every manifest digest is computed over.

Rules (docs/manifest.md): UTF-8; object keys lowercase ASCII, sorted; no insignificant
whitespace; strings escaped as JSON requires and nothing more (non-ASCII stays literal); integers
only (floats are refused: their text form is not portable); `null` is never written: absent fields
are omitted.
"""

from __future__ import annotations

import json
import re
from typing import Any

from anchor.errors import BadInput

_KEY = re.compile(r"^[a-z0-9_]+$")


def _check(value: Any, where: str) -> None:
    if value is None:
        raise BadInput(f"canonical JSON has no null; omit the field instead: {where}")
    if isinstance(value, (bool, str)):
        return
    if isinstance(value, int):
        if abs(value) > 2**63 - 1:
            raise BadInput(f"integer out of the canonical range (|n| < 2^63): {where}")
        return
    if isinstance(value, float):
        raise BadInput(f"canonical JSON has no floats; encode as a decimal string: {where}")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str) or not _KEY.match(key):
                raise BadInput(f"canonical JSON keys are lowercase ASCII [a-z0-9_]: {where}.{key}")
            _check(item, f"{where}.{key}")
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _check(item, f"{where}[{index}]")
        return
    raise BadInput(f"type {type(value).__name__} has no canonical encoding: {where}")


def _fine(value: Any) -> bool:
    """Whether `_check` would pass `value`, without naming where each value sits: a manifest is checked
    twice per submission of the service (by the door and by the journal), and the names made on the way
    were most of the check's time. Only a value that is not fine is walked again, by `_check`, for the
    name of what is wrong."""
    if isinstance(value, (bool, str)):
        return True
    if isinstance(value, int):
        return abs(value) <= 2**63 - 1
    if isinstance(value, dict):  # loops, not all(): one frame a level, as `_check` takes, not two
        for key, item in value.items():
            if not isinstance(key, str) or not _KEY.match(key) or not _fine(item):
                return False
        return True
    if isinstance(value, (list, tuple)):
        for item in value:  # noqa: SIM110 - all() with a generator is a second frame a level
            if not _fine(item):
                return False
        return True
    return False


def canonical_json(value: Any) -> bytes:
    """Encode `value` canonically. On a null, a float or an unknown type, raises `BadInput`."""
    if not _fine(value):
        _check(value, "$")  # raises, naming the first field that has no canonical encoding
    # sort_keys orders by code point; for UTF-8 that equals byte order except for surrogates,
    # which json cannot emit from valid str anyway.
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8")
