"""The archive decoder and the proof-file parser under hostile and fuzzed input.

Memory is watched with tracemalloc (Python allocations, bytes objects included: what a header bomb
would allocate), not timed: the suite asserts no wall-clock bound on a shared machine; time per input
is in benchmarks/hostile_bench.py."""

from __future__ import annotations

import bz2
import contextlib
import io
import json
import subprocess
import tarfile
import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anchor.errors import ArchiveRefused, BadInput, ProofFormatError
from anchor.ingest.archive import ArchiveLimits, decode_archive
from anchor.proof.file import parse_proof
from tests.conftest import ROOT
from tests.hostile_archives import directory_flood, header_bomb, make_header_bomb

PEAK_BYTES = 64 << 20
"""No input of this file may make a decoder allocate more than this (they are all < 1 MiB)."""


def _peak(call: Any) -> int:
    tracemalloc.start()
    with contextlib.suppress(BadInput, ProofFormatError):
        call()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def test_zip_r_and_tar_dot_archives_of_the_demo_bundle_decode_to_its_files(tmp_path: Path) -> None:
    """`zip -r` writes `dir/` entries and `tar -C d -cf x.tar .` a `.` member: structure, not files."""
    bundle = ROOT / "examples" / "bundle"
    subprocess.run(["tar", "-C", str(bundle), "-cf", str(tmp_path / "x.tar"), "."], check=True)
    subprocess.run(["zip", "-qr", str(tmp_path / "x.zip"), "."], cwd=bundle, check=True)
    from anchor.manifest.filetree import hash_tree

    expected = hash_tree(bundle).digest
    for name in ("x.tar", "x.zip"):
        assert decode_archive((tmp_path / name).read_bytes()).digest == expected, name


def _tar(*members: tuple[str, bytes | None]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                archive.addfile(info)
            else:
                info.size = len(data)
                archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("members", "named", "why"),
    [
        ((("out", b"1"), ("out/metrics.json", b"2")), "out", "both a file and the directory"),
        ((("Results.csv", b"1"), ("results.csv", b"2")), "results.csv", "only in letter case"),
        ((("Out/a", b"1"), ("out/b", b"2")), "out", "only in letter case"),
        ((("out", None), ("out", b"1")), "out", "both a file and the directory"),
    ],
    ids=["file-and-directory", "case-collision", "case-collision-of-directories", "directory-entry-and-file"],
)
def test_listings_no_file_system_could_extract_are_refused_by_name(
    members: tuple[tuple[str, bytes | None], ...], named: str, why: str
) -> None:
    with pytest.raises(ArchiveRefused) as refused:
        decode_archive(_tar(*members))
    assert why in refused.value.message and repr(named) in refused.value.message.lower()


def test_entries_of_every_kind_count_against_the_limit() -> None:
    with pytest.raises(ArchiveRefused, match="more than 100 entries"):
        decode_archive(directory_flood(101), ArchiveLimits(max_entries=100))


def test_a_header_bomb_is_refused_before_it_is_read() -> None:
    """942 bytes of tar.bz2 declaring a 1 GiB long-name header took the server to 2.2 GB."""
    data = header_bomb()
    assert len(data) < 4096
    refused: list[str] = []

    def decode() -> None:
        try:
            decode_archive(data)
        except ArchiveRefused as exc:
            refused.append(exc.message)
            raise

    assert _peak(decode) < PEAK_BYTES
    assert refused and "header of 1073741824 bytes" in refused[0]


def test_the_committed_header_bomb_declares_a_gib_long_name_as_the_generator_makes_it() -> None:
    """The 1 GiB bomb is a committed file (making it takes 13 s); this keeps it honest: its first
    header is the generator's (checked on a 2 MiB one), and it declares 1 GiB of name."""

    def first_header(data: bytes) -> tarfile.TarInfo:
        return tarfile.TarInfo.frombuf(bz2.BZ2Decompressor().decompress(data, max_length=512), "utf-8", "strict")

    committed, small = first_header(header_bomb()), first_header(make_header_bomb(2 << 20))
    assert (committed.type, committed.name) == (small.type, small.name) == (tarfile.GNUTYPE_LONGNAME, "././@LongLink")
    assert (committed.size, small.size) == (1 << 30, 2 << 20)
    assert len(header_bomb()) < 4096


def test_a_zip_declaring_more_entries_than_allowed_is_refused_before_its_directory_is_parsed() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for i in range(30):
            archive.writestr(f"f{i}", b"")
    with pytest.raises(ArchiveRefused, match=r"\(central directory\).*more than 20 entries"):
        decode_archive(buffer.getvalue(), ArchiveLimits(max_entries=20))


def test_a_zip_whose_directory_holds_more_entries_than_it_declares_is_counted_before_it_is_parsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The end record may say 1 while the central directory holds 1.2 M entries (60 MiB, 7.6 s of
    parsing before any cap applied): the entries are counted by hopping header to header, and the
    archive is refused before zipfile builds anything."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for i in range(30):
            archive.writestr(f"f{i}", b"")
    raw = bytearray(buffer.getvalue())
    end = raw.rfind(b"PK\x05\x06")
    raw[end + 8 : end + 12] = (1).to_bytes(2, "little") * 2  # "1 entry on this disk, 1 in all"
    parsed: list[int] = []
    real = zipfile.ZipFile._RealGetContents  # type: ignore[attr-defined]
    monkeypatch.setattr(zipfile.ZipFile, "_RealGetContents", lambda self: parsed.append(1) or real(self))
    with pytest.raises(ArchiveRefused, match=r"\(central directory\).*more than 20 entries"):
        decode_archive(bytes(raw), ArchiveLimits(max_entries=20))
    assert parsed == []  # refused before the directory was parsed


# ---------------------------------------------------------------------- bounded fuzzing

_names = st.text(alphabet=st.sampled_from("ab./\\\x00é"), min_size=0, max_size=12)


@st.composite
def _archives(draw: st.DrawFn) -> bytes:
    members = draw(st.lists(st.tuples(_names, st.one_of(st.none(), st.binary(max_size=64))), max_size=8))
    buffer = io.BytesIO()
    if draw(st.booleans()):
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, data in members:
                if name.replace("\x00", ""):
                    archive.writestr(name.replace("\x00", "") + ("/" if data is None else ""), data or b"")
    else:
        with tarfile.open(fileobj=buffer, mode=draw(st.sampled_from(["w", "w:gz", "w:bz2"]))) as archive:
            for name, data in members:
                info = tarfile.TarInfo(name)
                kind = draw(
                    st.sampled_from([tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.GNUTYPE_LONGNAME, tarfile.SYMTYPE])
                )
                info.type = kind if data is not None else tarfile.DIRTYPE
                info.size = len(data or b"") if info.type == tarfile.REGTYPE else 0
                archive.addfile(info, io.BytesIO(data or b"") if info.type == tarfile.REGTYPE else None)
    raw = buffer.getvalue()
    cut = draw(st.integers(min_value=0, max_value=len(raw)))
    flips = draw(st.lists(st.integers(min_value=0, max_value=max(len(raw) - 1, 0)), max_size=3))
    mutated = bytearray(raw[: max(cut, len(raw) // 2)])
    for index in flips:
        if index < len(mutated):
            mutated[index] ^= 0xFF
    return bytes(mutated)


@pytest.mark.filterwarnings("ignore:Duplicate name")  # the generator's own zip writer; duplicates are the point
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(_archives())
def test_fuzzed_archives_decode_or_are_refused_typed_within_bounded_memory(data: bytes) -> None:
    limits = ArchiveLimits(max_files=8, max_file_bytes=1 << 16, max_total_bytes=1 << 18, max_entries=16)

    def decode() -> None:
        tree = decode_archive(data, limits)
        assert len(tree.files) <= 8

    assert _peak(decode) < PEAK_BYTES  # any other exception type fails the test: only typed refusals


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=30,
)
_proof_like = st.fixed_dictionaries(
    {"format": st.just("anchor/proof"), "version": st.sampled_from([1, 2]), "manifest": _json_values},
    optional={"batch": _json_values, "anchor": _json_values, "files": _json_values, "manifest_digest": _json_values},
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    st.one_of(_proof_like.map(lambda v: json.dumps(v).encode()), st.binary(max_size=256)),
    st.integers(min_value=0, max_value=3000),
)
def test_fuzzed_proof_files_parse_or_are_refused_typed_within_bounded_memory(raw: bytes, depth: int) -> None:
    nested = b"[" * depth + raw + b"]" * depth

    def parse() -> None:
        parse_proof(nested, "fuzz")

    assert _peak(parse) < PEAK_BYTES


GOOD_SIGNED = {
    "researcher": "0x" + "ab" * 20,
    "commit": "11" * 32,
    "parent": "22" * 32,
    "diff_hash": "33" * 32,
    "metric_hash": "44" * 32,
    "kept": False,
    "deadline": 2_000_000_000,
    "v": 27,
    "r": "55" * 32,
    "s": "66" * 32,
}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("deadline", -1),
        ("deadline", 1 << 256),
        ("deadline", 1e300),
        ("deadline", "2000000000"),
        ("deadline", True),
        ("researcher", "zzz"),
        ("researcher", "0x" + "ab" * 19 + " a"),
        ("researcher", 7),
        ("researcher", "0X" + "ab" * 20),
        ("kept", "false"),
        ("kept", 1),
        ("kept", None),
        ("v", -1),
        ("v", 1 << 300),
        ("commit", 11),
        ("r", "0x" + "55" * 31),
        ("s", "zz" * 32),
    ],
)
def test_a_signed_lineage_field_of_the_wrong_type_or_range_is_refused_naming_it(field: str, value: object) -> None:
    """What POST /v1/lineage decodes before it recovers or encodes anything: every one of these used to
    reach the EIP-712 encoder (a 500), or, for "kept": "false", be read as true."""
    from anchor.chain.signed import SignedLineage

    assert SignedLineage.from_json(GOOD_SIGNED).fields.kept is False  # the well-formed body decodes
    with pytest.raises(BadInput) as refused:
        SignedLineage.from_json({**GOOD_SIGNED, field: value})
    assert refused.value.detail == {"field": field}


_TEXT = st.text(alphabet=st.sampled_from(["a", "é", "\ud800", "\udfff", "\u2028", '"', "\\", "["]), max_size=4)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=40,
)


@settings(max_examples=400, deadline=None)
@given(value=_JSON, depth=st.integers(min_value=1, max_value=12), as_bytes=st.booleans())
def test_parse_json_refuses_exactly_what_the_full_walk_refuses(value: Any, depth: int, as_bytes: bool) -> None:
    """parse_json skips its walk over every string when the text cannot hold a lone surrogate or nest
    too deep; for generated values, surrogates and depths it must refuse exactly what the
    walk refuses, whether the text comes as bytes or as str."""
    from anchor.ingest.untrusted_json import check_encodable, parse_json

    text = json.dumps(value, ensure_ascii=False)
    try:
        raw: bytes | str = text.encode("utf-8") if as_bytes else text
    except UnicodeEncodeError:  # an unescaped lone surrogate cannot be UTF-8 bytes: escape it, as a file would
        text = json.dumps(value)
        raw = text.encode("utf-8") if as_bytes else text
    walked: Exception | None = None
    try:
        check_encodable(json.loads(text), "x", max_depth=depth)
    except BadInput as exc:
        walked = exc
    try:
        parse_json(raw, "x", max_depth=depth)
    except BadInput as exc:
        assert walked is not None and str(exc) == str(walked)
    else:
        assert walked is None
