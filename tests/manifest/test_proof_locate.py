"""Where the proof of a path is looked for: the real folder a proof sits in decides whether it is a
file proof of `anchor prove` (`<DIR>.proofs/…`), and that answer is remembered per folder only while the
folder is the same one."""

from __future__ import annotations

from pathlib import Path

import pytest

from anchor.proof.locate import current_proof_of


def test_a_folder_replaced_by_a_link_into_a_proofs_folder_is_resolved_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a").mkdir()
    proof = Path("a/r.txt.anchor.json")
    assert current_proof_of(Path("a/r.txt"), proof) == Path("a/r.txt.anchor.json")
    (tmp_path / "a").rename(tmp_path / "before")
    (tmp_path / "data.proofs" / "sub").mkdir(parents=True)
    (tmp_path / "a").symlink_to(tmp_path / "data.proofs" / "sub")
    assert current_proof_of(Path("a/r.txt"), proof) == tmp_path.resolve() / "data.anchor.json"


def test_the_same_relative_folder_from_another_working_directory_is_another_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "plain" / "a").mkdir(parents=True)
    (tmp_path / "data.proofs" / "a").mkdir(parents=True)
    proof = Path("a/r.txt.anchor.json")
    monkeypatch.chdir(tmp_path / "plain")
    assert current_proof_of(Path("a/r.txt"), proof) == Path("a/r.txt.anchor.json")
    monkeypatch.chdir(tmp_path / "data.proofs")
    assert current_proof_of(Path("a/r.txt"), proof) == tmp_path.resolve() / "data.anchor.json"
