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
from anchor.manifest.decode import validate_identity
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
    with pytest.raises(UnsafePath, match="link: is a symbolic link; links are refused by default") as info:
        hash_tree(tmp_path)
    assert info.value.detail["path"] == "link"


def test_fifo_is_refused_and_named(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(UnsafePath, match="pipe: a FIFO"):
        hash_tree(tmp_path)


def test_missing_root_is_bad_input_naming_the_path(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="nope: no such file"):
        hash_tree(tmp_path / "nope")


def test_canonical_json_sorts_keys_and_refuses_floats_nulls_and_non_ascii_keys() -> None:
    assert canonical_json({"b": 1, "a": "é\n"}) == '{"a":"é\\n","b":1}'.encode()
    with pytest.raises(BadInput, match="lowercase ASCII"):
        canonical_json({"Key": 1})
    with pytest.raises(BadInput, match="floats"):
        canonical_json({"x": 0.5})
    with pytest.raises(BadInput, match="null"):
        canonical_json({"x": None})


_JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**64), max_value=2**64) | st.floats() | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b_1", "Key", "x-y", "é", ""]), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(_JSONISH)
def test_the_quick_canonical_check_refuses_exactly_what_the_naming_check_refuses(value: object) -> None:
    """`canonical_json` walks a value once without naming anything and again, naming the field, only
    when it is refused: the two walks must agree on every value, or a refusal goes unnamed or a value
    with no canonical form is encoded."""
    from anchor.manifest.canonical import _check, _fine

    try:
        _check(value, "$")
    except BadInput:
        refused = True
    else:
        refused = False
    assert _fine(value) is not refused, value


def test_the_quick_canonical_check_goes_as_deep_as_the_naming_one() -> None:
    """One frame a nesting level, as `_check` takes: a value 600 levels deep is encoded, not a RecursionError."""
    deep: object = 1
    for _ in range(600):
        deep = [deep]
    assert canonical_json(deep) == b"[" * 600 + b"1" + b"]" * 600


@settings(max_examples=80, deadline=None)
@given(st.lists(st.binary(min_size=32, max_size=32), min_size=1, max_size=70, unique=True), st.data())
def test_every_file_proof_verifies_and_fails_for_another_file_or_root(leaves: list[bytes], data: st.DataObject) -> None:
    from anchor.manifest.filetree import audit_path, merkle_root, root_from_audit_path

    root = merkle_root(leaves)
    other_root = merkle_root([*leaves, b"\x00" * 32])
    for index, leaf in enumerate(leaves):
        path = audit_path(leaves, index)
        assert len(path) <= max(1, (len(leaves) - 1).bit_length())
        assert root_from_audit_path(leaf, index, len(leaves), path) == root
        assert root_from_audit_path(leaf, index, len(leaves) + 1, path) != other_root
    i = data.draw(st.integers(0, len(leaves) - 1))
    j = data.draw(st.integers(0, len(leaves) - 1).filter(lambda k: k != i)) if len(leaves) > 1 else None
    if j is not None:  # another file's leaf with this file's path and position
        assert root_from_audit_path(leaves[j], i, len(leaves), audit_path(leaves, i)) != root


def test_iterative_root_equals_the_recursive_rfc6962_definition() -> None:
    from anchor.manifest.filetree import merkle_root
    from tests.reference_impl import mth

    for n in range(0, 130):
        leaves = [blake3.blake3(str(i).encode()).digest() for i in range(n)]
        assert merkle_root(leaves) == mth(leaves), n


@settings(max_examples=200, deadline=None)
@given(
    st.text(min_size=1, max_size=40)
    | st.text(st.sampled_from('ab/"\\\x00\x1f\x7f\u00e9\u2028\U0001f600'), min_size=1, max_size=12),
    st.integers(0, 2**53 - 1),
)
def test_hand_written_leaf_encoding_equals_canonical_json(path: str, size: int) -> None:
    from anchor.manifest.domain import Domain, tagged
    from anchor.manifest.filetree import FileEntry

    entry = FileEntry(path, size, "ab" * 32)
    assert entry.leaf_hash() == tagged(Domain.FILE_LEAF, canonical_json(entry.to_json()))


def test_many_files_hashed_by_workers_equal_the_sequential_result(tmp_path: Path) -> None:
    from anchor.manifest import hashing

    files = {f"d{i % 7}/f{i}.txt": os.urandom(i % 300) for i in range(hashing.PARALLEL_MIN_FILES + 50)}
    _write(tmp_path, files)
    tree = hash_tree(tmp_path)
    by_path = {entry.path: entry for entry in tree.files}
    for rel, content in files.items():
        assert by_path[rel].blake3 == blake3.blake3(content).hexdigest() and by_path[rel].size == len(content)


def test_a_tree_hashed_while_it_is_walked_equals_each_file_hashed_alone(tmp_path: Path) -> None:
    """past PARALLEL_MIN_FILES the walk hands chunks to the workers as it lists, and the leaves
    come back from them. Every file's digest and the root must be what hashing each file alone and
    building the tree from scratch give."""
    from anchor.manifest import hashing
    from anchor.manifest.filetree import FileEntry, merkle_root

    files = {f"d{i % 37}/e{i % 5}/f{i}.txt": os.urandom(i % 200) for i in range(3 * hashing.STREAM_CHUNK + 7)}
    files["big.bin"] = os.urandom(hashing.SMALL_FILE + 1)
    _write(tmp_path, files)
    tree = hash_tree(tmp_path)
    assert {e.path: (e.size, e.blake3) for e in tree.files} == {
        rel: (len(content), blake3.blake3(content).hexdigest()) for rel, content in files.items()
    }
    ordered = sorted(files, key=lambda rel: rel.encode())
    leaves = [FileEntry(rel, len(files[rel]), blake3.blake3(files[rel]).hexdigest()).leaf_hash() for rel in ordered]
    assert tree.root == merkle_root(leaves)


def test_a_file_replaced_after_it_was_listed_is_refused_by_the_worker_that_hashes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file the walk listed is replaced (another inode) before the chunk holding it reaches a worker:
    the worker must refuse it by name, as the serial hasher does, and nothing of the tree comes back."""
    from anchor.errors import FileChanged
    from anchor.manifest import hashing

    files = {f"d{i % 11}/f{i}.txt": b"x" * (i % 50) for i in range(2 * hashing.STREAM_CHUNK)}
    _write(tmp_path, files)
    victim = f"d{1000 % 11}/f1000.txt"
    real_add = hashing.Streamed.add

    def swap_then_add(self: hashing.Streamed, batch: list) -> None:  # type: ignore[type-arg]
        if any(shown == victim for shown, *_ in batch):
            os.link(tmp_path / victim, tmp_path.parent / f"{tmp_path.name}-kept")  # its inode stays taken
            (tmp_path / victim).unlink()
            (tmp_path / victim).write_bytes(b"planted")
        real_add(self, batch)

    monkeypatch.setattr(hashing.Streamed, "add", swap_then_add)
    with pytest.raises(FileChanged, match=f"{victim}: not the file the walk listed"):
        hash_tree(tmp_path)


def _runs(root: Path) -> Path:
    _write(root, {"run2/metrics.json": b'{"acc": 0.88}', "run3/metrics.json": b'{"acc": 0.91}'})
    (root / "latest").symlink_to("run3")
    return root


def test_recorded_links_are_bound_by_target_and_never_followed(tmp_path: Path) -> None:
    root = _runs(tmp_path)
    tree = hash_tree(root, symlinks="record")
    assert [e.path for e in tree.files] == ["run2/metrics.json", "run3/metrics.json"]
    assert tree.identity()["symlinks"] == {"policy": "record", "links": [{"path": "latest", "target": "run3"}]}
    (root / "latest").unlink()
    (root / "latest").symlink_to("run2")  # the same files, a link that now says something else
    retargeted = hash_tree(root, symlinks="record")
    assert retargeted.digest != tree.digest
    assert diff(tree, retargeted).changed == ("latest",)


def test_follow_inside_hashes_through_a_link_and_records_it(tmp_path: Path) -> None:
    root = _runs(tmp_path)
    tree = hash_tree(root, symlinks="follow-inside")
    assert [e.path for e in tree.files] == ["latest/metrics.json", "run2/metrics.json", "run3/metrics.json"]
    assert tree.files[0].blake3 == tree.files[2].blake3
    assert tree.identity()["symlinks"]["policy"] == "follow-inside"


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("/etc", "leads outside the root"),
        ("../..", "leads outside the root"),
        ("..", "a loop"),
        (".", "a loop"),
        ("missing", "dangling"),
    ],
)
def test_follow_inside_refuses_links_that_leave_loop_or_dangle(tmp_path: Path, target: str, message: str) -> None:
    root = _runs(tmp_path / "tree")
    (root / "sub").mkdir()
    (root / "sub" / "odd").symlink_to(target)
    with pytest.raises(UnsafePath, match=message) as info:
        hash_tree(root, symlinks="follow-inside")
    assert info.value.detail["path"] == "sub/odd"


def test_a_tree_without_links_has_the_identity_it_always_had_under_every_policy(tmp_path: Path) -> None:
    _write(tmp_path, {"a.txt": b"1", "b/c.txt": b"2"})
    policies = ("refuse", "record", "follow-inside")
    identities = {canonical_json(hash_tree(tmp_path, symlinks=p).identity()) for p in policies}
    assert len(identities) == 1 and b"symlinks" not in identities.pop()


def test_a_recorded_links_list_out_of_order_is_refused(tmp_path: Path) -> None:
    identity = hash_tree(_runs(tmp_path), symlinks="record").identity()
    identity["symlinks"]["links"] = [{"path": "z", "target": "a"}, {"path": "a", "target": "b"}]
    with pytest.raises(BadInput, match="sorted by path"):
        validate_identity(identity)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["*.log", ".git/", "build/", "/top.txt", "a/**/b", "*.anchor.json", "d?/", "[ab]*", "d[!(?P<ps_d>]"]
        ),
        min_size=1,
        max_size=4,
    ),
    st.lists(
        st.sampled_from(["a", "b", "d1", ".git", "x.log", "top.txt", "build", "c.anchor.json", "ds", "d("]),
        min_size=1,
        max_size=4,
    ),
    st.booleans(),
)
def test_rules_without_a_negation_exclude_exactly_what_gitignore_does(
    rules: list[str], parts: list[str], is_dir: bool
) -> None:
    """The walk's shortcut (a path is left out when any rule matches, the rules joined into one regular
    expression) must agree with pathspec's GitIgnoreSpec, which ranks every match, on every path; with a
    `!rule` the spec itself decides. The shortcut is taken whenever no rule is negated."""
    from anchor.manifest.exclude import Rules

    path = "/".join(parts)
    for patterns in (rules, [*rules, "!" + rules[0]]):
        ours = Rules(patterns)
        assert ours.excludes(path, is_dir) == bool(ours._spec.match_file(path + "/" if is_dir else path)), patterns
        assert (ours._any_of is None) == (patterns is not rules), patterns  # no negation: the shortcut


def test_progress_while_the_walk_streams_counts_up_to_every_file_and_byte(tmp_path: Path) -> None:
    """The totals grow while the walk lists; the files and bytes done never go back, and the last report
    says every file and byte was hashed (a bar that stops at 98% or runs past 100% misleads)."""
    from anchor.manifest import hashing

    files = {f"d{i % 13}/f{i}.txt": b"y" * (i % 97) for i in range(2 * hashing.STREAM_CHUNK + 3)}
    _write(tmp_path, files)
    seen: list[tuple[int, int, int, int]] = []
    hash_tree(tmp_path, progress=lambda *report: seen.append(report))
    assert seen[-1] == (len(files), len(files), sum(map(len, files.values())), sum(map(len, files.values())))
    assert all(a[0] <= b[0] and a[2] <= b[2] and a[1] <= b[1] for a, b in zip(seen, seen[1:], strict=False))


def _wide(root: Path, dirs: int = 60, per: int = 20) -> dict[str, bytes]:
    """A tree wide enough that the walk hands its directories to the workers (past PARALLEL_MIN_FILES)."""
    files = {f"g{d % 6}/d{d:03d}/f{i}.txt": f"{d}-{i}".encode() * (i % 7) for d in range(dirs) for i in range(per)}
    _write(root, files)
    return files


_HANDED_OFF = """
import json, sys
from pathlib import Path
from anchor.manifest import hashing
from anchor.manifest.exclude import Rules
from anchor.manifest.filetree import hash_tree

root, symlinks, parallel = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
handed = []
real = hashing.Streamed.hand_off
hashing.Streamed.hand_off = lambda self, frames, top: handed.append(parallel and real(self, frames, top)) or handed[-1]
tree = hash_tree(root, Rules.for_root(root), symlinks)
print(json.dumps({"digest": tree.digest.hex(), "files": tree.files_json(), "links": tree.links,
                  "left_out": sorted(tree.left_out), "handed": any(handed)}))
"""


@pytest.mark.parametrize("symlinks", ["record", "follow-inside"])
def test_subtrees_the_workers_walk_give_the_tree_one_walk_gives(tmp_path: Path, symlinks: str) -> None:
    """past a few hundred files the walk hands the directories it has left to the workers,
    which list and hash them. Rules deep in the tree (.git/, proof files, .anchorignore's), links met
    there and every file must come out as one walk in one process makes them: the same digest, the same
    files, what was left out and the links. Each side runs in a fresh interpreter: the workers are forked
    only where the forking process has no other thread, which a pytest worker cannot promise."""
    import json
    import subprocess
    import sys

    root = tmp_path / "tree"
    _wide(root)
    _write(root, {"g3/d033/.git/HEAD": b"ref", "g5/d041/out.anchor.json": b"{}", "g1/d007/scratch/x.tmp": b"x"})
    (root / ".anchorignore").write_text("scratch/\n")
    (root / "g2" / "d050" / "latest").symlink_to("f3.txt")
    (root / "g4" / "d010" / "up").symlink_to("../d016")
    parallel, serial = (
        json.loads(
            subprocess.run(
                [sys.executable, "-c", _HANDED_OFF, str(root), symlinks, flag],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        for flag in ("1", "0")
    )
    assert parallel.pop("handed"), "the walk never handed a directory to the workers: the test tests nothing"
    assert serial.pop("handed") is False
    assert parallel == serial
    assert {"g3/d033/.git/", "g5/d041/out.anchor.json", "g1/d007/scratch/"} <= set(parallel["left_out"])


@pytest.mark.parametrize("plant", ["fifo", "link"])
def test_a_hostile_entry_deep_in_a_subtree_a_worker_walks_is_refused_by_name(tmp_path: Path, plant: str) -> None:
    """The workers' part of the walk refuses what the walk refuses, naming the path: a FIFO, and a link
    under the default policy, deep in a late subtree."""
    _wide(tmp_path)
    target = tmp_path / "g5" / "d059" / "trap"
    if plant == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/etc")
    with pytest.raises(UnsafePath, match="g5/d059/trap: (a FIFO is not a regular file|is a symbolic link)"):
        hash_tree(tmp_path)


def test_a_workers_walk_of_a_subtree_refuses_a_hostile_entry_as_data_naming_it(tmp_path: Path) -> None:
    """What a worker answers when its subtree holds a FIFO: the refusal as data, the walk's (it must come
    before any hashing refusal), naming the path relative to the root."""
    from anchor.manifest import hashing
    from anchor.manifest.filetree import _leaf

    _write(tmp_path, {"a/b/ok.txt": b"1"})
    os.mkfifo(tmp_path / "a" / "b" / "trap")
    top, sub = os.lstat(tmp_path), os.lstat(tmp_path / "a")
    frame = ("a/", str(tmp_path / "a"), (sub.st_dev, sub.st_ino), frozenset({(top.st_dev, top.st_ino)}))
    answer = hashing._walk_and_hash([frame], os.path.realpath(tmp_path), None, "refuse", _leaf)
    assert answer[0][:2] == ("walk", "UnsafePath") and "a/b/trap: a FIFO is not a regular file" in answer[0][2]
    ok = hashing._walk_and_hash([frame], os.path.realpath(tmp_path), ("trap",), "refuse", _leaf)
    rels, sizes, digests, leaves, excluded, links = ok
    assert (rels, sizes, digests, excluded) == ("a/b/ok.txt", [1], blake3.blake3(b"1").hexdigest(), ["a/b/trap"])
    assert leaves == _leaf("a/b/ok.txt", 1, blake3.blake3(b"1").hexdigest())


def test_a_path_not_in_the_tree_is_refused_with_the_one_meant(tmp_path: Path) -> None:
    """`anchor prove outputs/metric.json --in DIR`: the listed path closest to the typo is named."""
    from anchor.errors import BadInput
    from anchor.manifest.filetree import hash_tree

    (tmp_path / "outputs").mkdir()
    (tmp_path / "outputs" / "metrics.json").write_text("{}")
    tree = hash_tree(tmp_path)
    with pytest.raises(
        BadInput, match=r"outputs/metric.json: not in this tree \(did you mean outputs/metrics.json\?\)"
    ):
        tree.entry("outputs/metric.json")
    assert tree.entry("outputs/metrics.json")[0] == 0
