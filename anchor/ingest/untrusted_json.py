"""JSON from outside (request bodies, uploaded or local proof files, annotations), decoded under bounds.

Why this exists: py_ecc, imported by web3, raises the interpreter's recursion limit to 100,000, and
CPython's JSON decoder recurses on the C stack once per nesting level, so `[` x 100,000 (200 KB, no
token needed) overflowed the C stack and killed the worker with SIGSEGV. Here every decode runs under
a sane recursion limit (RecursionError instead of a crash) and the result's depth is capped.

`check_encodable` is the other half: what we accept must be writable later. A lone surrogate
(`"\\ud800"` in JSON) decodes to a Python str that no UTF-8 writer can encode; accepted at submission,
it failed the proof writer at confirmation and stopped the journal.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from anchor.errors import BadInput

MAX_DEPTH = 32
"""Deepest nesting accepted anywhere in untrusted JSON (proof files nest 4 deep; annotations are free)."""
SAFE_RECURSION_LIMIT = 1000
"""CPython's default; the C stack holds it with room to spare."""
MAX_ANNOTATION_BYTES = 64 * 1024


def restore_recursion_limit() -> None:
    """Lower the recursion limit back to the default if a library raised it (never raise it)."""
    if sys.getrecursionlimit() > SAFE_RECURSION_LIMIT:
        sys.setrecursionlimit(SAFE_RECURSION_LIMIT)


def parse_json(raw: bytes | str, what: str, max_depth: int = MAX_DEPTH, error: type[BadInput] = BadInput) -> Any:
    """Decode `raw` (UTF-8) or raise `error` naming `what`: bad JSON, too deep, or not encodable."""
    restore_recursion_limit()
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        value = json.loads(text)
    except RecursionError:
        raise error(f"{what}: JSON nested deeper than {max_depth} levels", detail={"field": what}) from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise error(f"{what}: not valid JSON ({str(exc).splitlines()[0][:200]})", detail={"field": what}) from None
    if _may_be_unsafe(text, raw, max_depth):
        check_encodable(value, what, max_depth=max_depth)
    return value


def _may_be_unsafe(text: str, raw: bytes | str, max_depth: int) -> bool:
    """Whether the decoded value can hold what `check_encodable` refuses; when not, its walk over every
    string is skipped (a tenth of the time 1,000 proofs took to verify). A lone surrogate reaches a
    string only through a `\\u` escape (UTF-8 bytes cannot encode one; text given as `str` is encoded
    once to be sure), and a value nests no deeper than its brackets are many."""
    if "\\u" in text or text.count("{") + text.count("[") >= max_depth:
        return True
    if isinstance(raw, str):
        try:
            raw.encode("utf-8")
        except UnicodeEncodeError:
            return True
    return False


def check_encodable(value: Any, what: str, max_depth: int = MAX_DEPTH, max_bytes: int | None = None) -> None:
    """Refuse (BadInput naming `what`) a JSON value nested deeper than `max_depth`, holding a string
    that is not valid Unicode (a lone surrogate), or larger than `max_bytes` once encoded."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            raise BadInput(f"{what}: JSON nested deeper than {max_depth} levels", detail={"field": what})
        if isinstance(node, dict):
            for key, child in node.items():
                _check_text(key, what)
                stack.append((child, depth + 1))
        elif isinstance(node, list | tuple):
            stack.extend((child, depth + 1) for child in node)
        elif isinstance(node, str):
            _check_text(node, what)
    if max_bytes is not None:
        size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
        if size > max_bytes:
            raise BadInput(f"{what}: {size} bytes of JSON, more than {max_bytes}", detail={"field": what})


def _check_text(text: object, what: str) -> None:
    if isinstance(text, str):
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise BadInput(f"{what}: a string is not valid Unicode (lone surrogate)", detail={"field": what}) from None
