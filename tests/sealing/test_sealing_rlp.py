"""anchor.sealing.rlp against Ethereum's `rlp` package: the same bytes for every value, the same item
for every canonical encoding, and a refusal for every byte string `rlp.decode` refuses (non-canonical
forms, truncations, trailing bytes), on random items and random mutations of their encodings. Nesting
deeper than any consensus object is refused by a typed error, not a RecursionError."""

from __future__ import annotations

from typing import Any

import pytest
import rlp
from hypothesis import given, settings
from hypothesis import strategies as st

from anchor.sealing.rlp import MAX_DEPTH, RlpError, decode, encode
from tests.reference_impl import rlp_nested_lists

items = st.recursive(
    st.binary(max_size=80) | st.sampled_from([b"", b"\x00", b"\x7f", b"\x80", b"\xff", bytes(55), bytes(56)]),
    lambda inner: st.lists(inner, max_size=6),
    max_leaves=40,
)


def _plain(item: Any) -> Any:
    return [_plain(each) for each in item] if isinstance(item, list | tuple) else bytes(item)


def _theirs(data: bytes) -> Any:
    try:
        return _plain(rlp.decode(data))
    except rlp.exceptions.DecodingError:
        return RlpError


def _ours(data: bytes) -> Any:
    try:
        return decode(data)
    except RlpError:
        return RlpError


@settings(max_examples=1000, deadline=None)
@given(items)
def test_encoding_and_decoding_agree_with_ethereums_rlp(item: Any) -> None:
    encoded = encode(item)
    assert encoded == rlp.encode(item)
    assert decode(encoded) == item == _plain(rlp.decode(encoded))


@settings(max_examples=1000, deadline=None)
@given(items, st.data())
def test_every_mutated_encoding_is_refused_or_read_exactly_as_ethereums_rlp_reads_it(item: Any, data: Any) -> None:
    encoded = bytearray(encode(item))
    edit = data.draw(st.sampled_from(["flip", "truncate", "append", "lengthen"]))
    at = data.draw(st.integers(0, max(0, len(encoded) - 1)))
    if edit == "flip" and encoded:
        encoded[at] = data.draw(st.integers(0, 255))
    elif edit == "truncate":
        del encoded[at:]
    elif edit == "append":
        encoded += data.draw(st.binary(min_size=1, max_size=4))
    else:  # a long-form length where a short one fits, or a leading zero in the length
        encoded[at:at] = data.draw(st.sampled_from([b"\xb8\x01", b"\xb9\x00\x01", b"\xf8\x01", b"\x81"]))
    assert _ours(bytes(encoded)) == _theirs(bytes(encoded))


@settings(max_examples=2000, deadline=None)
@given(st.binary(max_size=64))
def test_random_bytes_are_refused_or_read_exactly_as_ethereums_rlp_reads_them(data: bytes) -> None:
    assert _ours(data) == _theirs(data)


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"\x81\x05", "wrapped in a string prefix"),
        (b"\xb8\x05hello", "long form"),
        (b"\xb9\x00\x38" + bytes(56), "leading zero"),
        (b"\x83ab", "runs past"),
        (b"\x80\x80", "trailing"),
        (b"\xc2\x83a", "runs past the end of the list"),
        (b"", "no bytes"),
    ],
)
def test_each_non_canonical_form_is_refused_by_name(data: bytes, why: str) -> None:
    with pytest.raises(RlpError, match=why):
        decode(data)


def test_a_5000_deep_list_is_refused_by_depth_not_by_recursion() -> None:
    deep = rlp_nested_lists(5000)
    assert decode(deep, max_depth=6000) is not None
    with pytest.raises(RlpError, match=f"nested deeper than {MAX_DEPTH}"):
        decode(deep)
    assert decode(encode([[[[b"log"]]]])) == [[[[b"log"]]]]
