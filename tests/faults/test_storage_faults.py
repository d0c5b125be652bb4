"""Storage faults (issue 32, item 1): a full disk where the proof, or the journal, had to be written.
What the user sees is one typed error naming the path and what to do (exit 15), nothing half-written,
nothing journaled lost, and the same command completes once there is space again. The filesystem is a
real, small tmpfs filled to the last block; where mounting is not allowed, ENOSPC is injected at the
same write seam (said in the test's output)."""

from __future__ import annotations

import contextlib
import errno
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from anchor.errors import ExitCode
from tests.conftest import Chain

pytestmark = pytest.mark.chain


@contextlib.contextmanager
def full_filesystem(where: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, object]]:
    """(a directory on a full filesystem, a function that frees it). A 512 KiB tmpfs filled up; without
    the right to mount, writes under the directory fail with ENOSPC at anchor.files' seam instead."""
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(where)],
                             capture_output=True).returncode == 0  # fmt: skip
    filler = where / "filler"
    if mounted:
        with contextlib.suppress(OSError), open(filler, "wb") as out:
            while True:
                out.write(b"\0" * 4096)
                out.flush()
    else:
        import tempfile

        real = tempfile.mkstemp

        def refusing(*args: object, **kwargs: object) -> object:
            if str(kwargs.get("dir", "")).startswith(str(where)) and filler.exists():
                raise OSError(errno.ENOSPC, "No space left on device (injected)")
            return real(*args, **kwargs)  # type: ignore[arg-type]

        filler.write_bytes(b"")
        monkeypatch.setattr("anchor.files.tempfile.mkstemp", refusing)
    print(f"full filesystem at {where}: {'a real tmpfs' if mounted else 'ENOSPC injected'}")
    try:
        yield where, filler.unlink
    finally:
        if mounted:
            subprocess.run(["umount", str(where)], check=False)


def test_a_full_disk_under_the_proof_is_named_and_the_same_stamp_completes_once_there_is_space(
    deployed_chain: Chain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = tmp_path / "results"
    results.mkdir()
    (results / "metrics.json").write_text('{"accuracy": 0.91}\n')
    with full_filesystem(tmp_path / "full", monkeypatch) as (full, free):
        out = full / "results.anchor.json"
        stamped = deployed_chain.cli("stamp", str(results), "--out", str(out))
        assert stamped.returncode == ExitCode.STORAGE, stamped.stdout + stamped.stderr
        assert f"{out}: the disk is full" in stamped.stderr and "run the same command again" in stamped.stderr
        assert "bug" not in stamped.stderr and not out.exists()
        assert not [p for p in full.iterdir() if p.name.endswith(".tmp")]  # nothing half-written
        free()  # type: ignore[operator]
        again = deployed_chain.cli("stamp", str(results), "--out", str(out))
        assert again.returncode == 0 and "already anchored" in again.stdout, again.stdout + again.stderr
        verified = deployed_chain.cli("verify", str(results), "--proof", str(out))
        assert verified.returncode == 0, verified.stdout + verified.stderr


def test_a_full_disk_under_the_journal_is_named_and_nothing_is_half_journaled(
    deployed_chain: Chain, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The journal's transaction fails as a whole: SQLite's "database or disk is full" becomes the typed
    error naming the journal, the submission is not there, and the same submit succeeds afterwards."""
    import sqlite3

    from anchor.journal.store import Journal

    results = tmp_path / "results"
    results.mkdir()
    (results / "a.txt").write_text("a\n")
    real = Journal.tx

    @contextlib.contextmanager
    def full_at_commit(self: Journal, submission: bool = False) -> Iterator[object]:
        with real(self, submission) as db:
            yield db
            if submission:  # SQLite says this when the WAL cannot grow
                raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(Journal, "tx", full_at_commit)
    refused = deployed_chain.cli("journal", "submit", str(results))
    assert refused.returncode == ExitCode.STORAGE, refused.stdout + refused.stderr
    assert f"{deployed_chain.data_dir / 'journal.sqlite'}: the disk is full" in refused.stderr
    monkeypatch.setattr(Journal, "tx", real)
    status = deployed_chain.cli("--json", "journal", "status", check=True)
    import json

    assert json.loads(status.stdout)["items"].get("pending", 0) == 0  # rolled back: nothing half there
    assert deployed_chain.cli("journal", "submit", str(results)).returncode == 0
