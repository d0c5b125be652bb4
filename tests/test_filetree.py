"""The file-tree manifest: deterministic, b3sum-compatible, sensitive to every change, hostile-safe."""

from __future__ import annotations

import os
from pathlib import Path

import blake3
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anchor.errors import BadInput, UnsafePath
from anchor.manifest.canonical import canonical_json
from anchor.manifest.filetree import FileTreeManifest, diff, hash_tree


def _write(root: Path, files: dict[str, bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)


def test_file_digest_is_plain_blake3_like_b3sum(tmp_path: Path) -> None:
    (tmp_path / "f.bin").write_bytes(b"abc" * 1000)
    manifest = hash_tree(tmp_path)
    assert manifest.files[0].blake3 == blake3.blake3(b"abc" * 1000).hexdigest()


def test_large_file_streamed_in_chunks_hashes_like_one_shot(tmp_path: Path) -> None:
    data = os.urandom(3 * 8 * 1024 * 1024 + 123)
    (tmp_path / "big").write_bytes(data)
    assert hash_tree(tmp_path / "big").files[0].blake3 == blake3.blake3(data).hexdigest()


def test_same_tree_in_another_place_has_the_same_digest(tmp_path: Path) -> None:
    files = {"a.txt": b"1", "d/e/f.txt": b"22", "z": b""}
    _write(tmp_path / "one", files)
    _write(tmp_path / "two", dict(reversed(files.items())))
    assert hash_tree(tmp_path / "one").digest == hash_tree(tmp_path / "two").digest


def test_listing_round_trips_through_json(tmp_path: Path) -> None:
    _write(tmp_path, {"a": b"x", "b/c": b"y"})
    manifest = hash_tree(tmp_path)
    assert FileTreeManifest.from_files_json(manifest.files_json()) == manifest


@pytest.mark.parametrize("bad", ["../etc/passwd", "/abs", "a//b", "./a", "a/../b", "", "cafe\u0301"])
def test_listed_paths_that_climb_or_are_not_normalized_are_refused(bad: str) -> None:
    with pytest.raises(UnsafePath) as info:
        FileTreeManifest.from_files_json([{"path": bad, "size": 0, "blake3": "0" * 64}])
    assert info.value.detail["path"] == bad


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.dictionaries(
        st.from_regex(r"[a-z]{1,6}(/[a-z]{1,6}){0,2}", fullmatch=True), st.binary(max_size=64), min_size=1, max_size=8
    ),
    st.data(),
)
def test_any_one_byte_change_rename_addition_or_removal_changes_the_root(
    tmp_path_factory: pytest.TempPathFactory, files: dict[str, bytes], data: st.DataObject
) -> None:
    # drop paths that are prefixes of others (a file cannot also be a directory)
    files = {p: c for p, c in files.items() if not any(o.startswith(p + "/") for o in files)}
    root = tmp_path_factory.mktemp("tree")
    _write(root, files)
    before = hash_tree(root)
    target = data.draw(st.sampled_from(sorted(files)))
    change = data.draw(st.sampled_from(["byte", "rename", "add", "remove"]))
    path = root / target
    if change == "byte":
        content = bytearray(files[target] or b"\x00")
        index = data.draw(st.integers(0, len(content) - 1))
        content[index] ^= 0x01
        path.write_bytes(bytes(content) if files[target] else b"\x01")
    elif change == "rename":
        path.rename(path.with_name(path.name + "x"))
    elif change == "add":
        (root / "added-file").write_bytes(b"")
    else:
        path.unlink()
    after = hash_tree(root)
    assert after.root != before.root
    assert diff(before, after)


def test_symlink_is_refused_and_named(tmp_path: Path) -> None:
    _write(tmp_path, {"ok.txt": b"1"})
    (tmp_path / "link").symlink_to("/etc/passwd")
    with pytest.raises(UnsafePath, match="link: symbolic links are refused") as info:
        hash_tree(tmp_path)
    assert info.value.detail["path"] == "link"


def test_fifo_is_refused_and_named(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(UnsafePath, match="pipe: a FIFO"):
        hash_tree(tmp_path)


def test_missing_root_is_bad_input_naming_the_path(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="nope: no such file"):
        hash_tree(tmp_path / "nope")


def test_canonical_json_sorts_keys_and_refuses_floats_and_nulls() -> None:
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'.encode()
    with pytest.raises(BadInput, match="floats"):
        canonical_json({"x": 0.5})
    with pytest.raises(BadInput, match="null"):
        canonical_json({"x": None})
