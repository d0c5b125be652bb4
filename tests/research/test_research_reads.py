"""Research reads verify a ledger once per change: a page of a researcher's attempts
used to re-verify every ledger's hash chain on every request. What is served is still what was verified,
and an edit after a cached read is a 409 on the next one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from anchor.errors import Tampered
from anchor.research.ledger import Ledger
from anchor.research.searches import remember_search
from anchor.settings.session import Settings


def _ledger(workdir: Path, attempts: int) -> Ledger:
    ledger = Ledger(workdir / "ledger.jsonl")
    for n in range(attempts):
        commit = f"{n:040x}"
        ledger.append({"event": "started", "commit": commit, "researcher": "r0", "started_at": f"t{n}"})
        ledger.append(
            {
                "commit": commit,
                "parent": "0" * 40,
                "researcher": "r0",
                "status": "completed",
                "kept": n == 0,
                "attempt_digest": "ab" * 32,
                "diff_blake3": "cd" * 32,
                "contract_digest": "ef" * 32,
            }
        )
    return ledger


def test_a_ledger_is_verified_once_per_change_and_an_edit_after_a_cached_read_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from api.routes import research

    workdir = tmp_path / "data" / "research"
    ledger = _ledger(workdir, 3)
    remember_search(tmp_path / "data", workdir)
    settings = Settings(data_dir=tmp_path / "data")
    verified = []
    real = Ledger.verify
    monkeypatch.setattr(Ledger, "verify", lambda self: verified.append(self.path) or real(self))

    first = research._attempts_of(settings, "r0")
    again = research._attempts_of(settings, "r0")
    assert [row["commit"] for _, _, row, _ in first] == [f"{n:040x}" for n in range(3)] and again == first
    assert [started for *_, started in first] == ["t0", "t1", "t2"]
    assert len(verified) == 1  # the second read took the verified rows

    ledger.append({"event": "started", "commit": "f" * 40, "researcher": "r1", "started_at": "t9"})
    research._attempts_of(settings, "r0")
    assert len(verified) == 2  # appended: verified again

    lines = ledger.path.read_text().splitlines()
    edited = json.loads(lines[3])  # the second attempt's outcome (not kept)
    edited["kept"] = True
    ledger.path.write_text("\n".join([*lines[:3], json.dumps(edited), *lines[4:]]) + "\n")
    with pytest.raises(Tampered):
        research._attempts_of(settings, "r0")
    with pytest.raises(Tampered):  # never cached: refused every time
        research._attempts_of(settings, "r0")


def test_a_lineage_prefix_that_matches_none_or_several_attempts_says_where_to_look_or_which_ones(
    tmp_path: Path,
) -> None:
    """`anchor lineage 23ff` said "commit '23ff' matches 0 attempts in the ledger" and stopped; a prefix too
    short said how many it matched (counting ledger rows, not commits), never which."""
    from anchor.errors import BadInput
    from anchor.research.report import lineage_tree

    entries = [e for e in _ledger(tmp_path, 3).entries() if "status" in e]
    settings = Settings.load(tmp_path / "d")
    with pytest.raises(BadInput, match=r"matches no attempt in the ledger \(`anchor research report`"):
        lineage_tree(entries, "ffff", settings)
    with pytest.raises(BadInput, match=r"matches 3 attempts in the ledger: give more of it \(000000000000, 0000"):
        lineage_tree(entries, "0000", settings)
