"""Storage faults: a full disk where the proof, or the journal, had to be written.
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
    mounted = (
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(where)], capture_output=True).returncode
        == 0
    )
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


def _pending(env: dict[str, str]) -> int:
    import json

    from tests.cli import run_anchor

    status = run_anchor(("--json", "journal", "status"), env)
    assert status.returncode == 0, status.stdout + status.stderr
    return int(json.loads(status.stdout)["items"].get("pending", 0))


def _results(tmp_path: Path, n: int) -> list[Path]:
    paths = []
    for i in range(n):
        (tmp_path / f"r{i}").mkdir()
        (tmp_path / f"r{i}" / "a.txt").write_text(f"result {i} {tmp_path.name}\n")
        paths.append(tmp_path / f"r{i}")
    return paths


def test_a_journal_truncated_by_an_operator_is_named_damaged_and_left_as_it_is(tmp_path: Path) -> None:
    """Half the file cut away: one typed error naming the journal and what to do (exit 15), never "a bug",
    the damaged file untouched (no repair that could lose more), and the backup put back holds it all."""
    from tests.conftest import deployed

    with deployed(tmp_path / "data") as chain:
        journal = chain.data_dir / "journal.sqlite"
        for path in _results(tmp_path, 3):
            assert chain.cli("journal", "submit", str(path)).returncode == 0
        assert _pending(chain.env()) == 3
        backup = journal.read_bytes()
        journal.write_bytes(backup[: len(backup) // 2])
        for argv in (("journal", "status"), ("journal", "submit", str(tmp_path / "r0")), ("journal", "flush")):
            damaged = chain.cli(*argv)
            assert damaged.returncode == ExitCode.STORAGE, (argv, damaged.stdout + damaged.stderr)
            assert f"error[journal_damaged]: {journal}: the journal is damaged" in damaged.stderr
            assert "Restore it from a backup" in damaged.stderr and "bug" not in damaged.stderr
            assert journal.read_bytes() == backup[: len(backup) // 2]  # nothing written to it
        journal.write_bytes(backup)
        assert _pending(chain.env()) == 3  # put back: every submission is there


def test_a_torn_write_ahead_log_loses_no_committed_submission(tmp_path: Path) -> None:
    """A writer killed mid-append leaves half a frame at the end of journal.sqlite-wal. The files as
    that crash leaves them (a reader held the log open, so it was never folded into the database) are
    opened again: every submission that was committed is there, and the next one goes in."""
    import os
    import shutil
    import sqlite3

    from tests.conftest import deployed

    with deployed(tmp_path / "data") as chain:
        first, *rest = _results(tmp_path, 4)
        assert chain.cli("journal", "submit", str(first)).returncode == 0
        reader = sqlite3.connect(chain.data_dir / "journal.sqlite", isolation_level=None)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM items").fetchone()  # the log cannot be checkpointed away now
        for path in rest[:2]:
            assert chain.cli("journal", "submit", str(path)).returncode == 0
        wal = chain.data_dir / "journal.sqlite-wal"
        assert wal.stat().st_size > 0
        crashed = tmp_path / "crashed"
        shutil.copytree(chain.data_dir, crashed, ignore=shutil.ignore_patterns("chain", "*.lock"))
        reader.close()
        with open(crashed / "journal.sqlite-wal", "ab") as log:
            log.write(os.urandom(24 + 2048))  # a frame header and half a page: the torn append
        torn = {**chain.env(), "ANCHOR_DATA_DIR": str(crashed), "ANCHOR_RPC_URL": chain.node.rpc_url}
        assert _pending(torn) == 3
        from tests.cli import run_anchor

        assert run_anchor(("journal", "submit", str(rest[2])), torn).returncode == 0
        assert _pending(torn) == 4


def test_a_read_only_filesystem_reads_the_journal_and_refuses_each_write_by_name(tmp_path: Path) -> None:
    """A data dir remounted read-only (what the kernel does to a failing disk, or an auditor's mount):
    status still answers from the journal as it is; a submit and a flush are the typed storage error
    naming the journal (exit 15); after a remount read-write the same submit goes in."""
    import json
    import shutil

    from tests.cli import run_anchor
    from tests.conftest import deployed

    where = tmp_path / "ro"
    where.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(where)]).returncode != 0:
        pytest.fail("this test mounts a tmpfs (CI runs as root): mount was refused")
    try:
        with deployed(tmp_path / "chain-data") as chain:
            data = where / "data"
            shutil.copytree(chain.data_dir / "deployments", data / "deployments")
            env = {**chain.env(), "ANCHOR_DATA_DIR": str(data), "ANCHOR_RPC_URL": chain.node.rpc_url}
            paths = _results(tmp_path, 2)
            assert run_anchor(("journal", "submit", str(paths[0])), env).returncode == 0
            subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True)
            status = run_anchor(("--json", "journal", "status"), env)
            assert status.returncode == 0, status.stdout + status.stderr
            assert json.loads(status.stdout)["items"]["pending"] == 1
            journal = data / "journal.sqlite"
            for argv in (("journal", "submit", str(paths[1])), ("journal", "flush")):
                refused = run_anchor(argv, env)
                assert refused.returncode == ExitCode.STORAGE, (argv, refused.stdout + refused.stderr)
                named = (
                    f"{journal}: " if argv[1] == "submit" else f"{data / 'flush.lock'}: "
                )  # the file it had to write
                assert named + "the filesystem is read-only" in refused.stderr, refused.stderr
                assert "bug" not in refused.stderr
            subprocess.run(["mount", "-o", "remount,rw", str(where)], check=True)
            assert run_anchor(("journal", "submit", str(paths[1])), env).returncode == 0
            status = run_anchor(("--json", "journal", "status"), env)
            assert json.loads(status.stdout)["items"]["pending"] == 2
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _pg_items(url: str) -> int:
    import psycopg

    with psycopg.connect(url, options="-c search_path=anchor_journal") as conn:
        return int(conn.execute("SELECT count(*) FROM items").fetchone()[0])  # type: ignore[index]


def test_a_read_only_postgresql_journal_reads_and_refuses_each_write_by_name(
    fresh_chain: Chain, postgres_url: str, tmp_path: Path
) -> None:
    """The PostgreSQL journal turned read-only (a hot standby after a failover, or the database set
    default_transaction_read_only): status still reads it; a submission is the typed storage error
    (exit 15) naming the PostgreSQL journal, never its URL; nothing is half there; once writable again
    the same command completes. Before, a read-only database could not even be opened for reading."""
    import dataclasses

    import psycopg

    chain = dataclasses.replace(fresh_chain, journal_url=postgres_url)
    chain.cli("deploy", check=True)
    first, second = _results(tmp_path, 2)
    assert chain.cli("journal", "submit", str(first)).returncode == 0
    from urllib.parse import urlsplit

    database = urlsplit(postgres_url).path.lstrip("/")
    server = postgres_url.replace(f"/{database}?", "/postgres?")
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{database}" SET default_transaction_read_only = on')
    status = chain.cli("--json", "journal", "status")
    assert status.returncode == 0, status.stdout + status.stderr
    refused = chain.cli("journal", "submit", str(second))
    said = refused.stdout + refused.stderr
    assert refused.returncode == ExitCode.STORAGE, said
    assert "PostgreSQL journal: the database is read-only" in said and "run the same command again" in said
    assert postgres_url not in said and "bug" not in said
    assert _pg_items(postgres_url) == 1
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(f'ALTER DATABASE "{database}" SET default_transaction_read_only = off')
    assert chain.cli("journal", "submit", str(second)).returncode == 0
    assert _pg_items(postgres_url) == 2


def test_a_full_disk_under_the_postgresql_server_is_named_and_the_submission_completes_once_freed(
    fresh_chain: Chain, tmp_path: Path
) -> None:
    """The PostgreSQL server's own disk fills (a real tmpfs under its data directory, filled to the
    last block): a submission that needs new pages is the typed storage error naming the PostgreSQL
    journal, nothing of it is there, and the same submission completes once space is freed."""
    import dataclasses
    import os

    from tests.postgres import fresh_database, postgres_server

    if os.geteuid() != 0:
        pytest.fail("mounting the server's small filesystem needs root (CI runs as root)")
    import tempfile

    where = Path(tempfile.mkdtemp(prefix="anchor-pgdisk-", dir="/var/tmp"))  # the server's user reaches it
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=160m,mode=1777", "tmpfs", str(where)], check=True)
    try:
        with postgres_server(under=where) as server_url:
            url = fresh_database(server_url, "full")
            chain = dataclasses.replace(fresh_chain, journal_url=url)
            chain.cli("deploy", check=True)
            small, big = _results(tmp_path, 2)
            for n in range(3000):  # a listing of 3,000 files: new pages for the items and files tables
                (big / f"part-{n:04d}.txt").write_text(f"{n}\n")
            assert chain.cli("journal", "submit", str(small)).returncode == 0
            filler = where / "filler"
            with contextlib.suppress(OSError), open(filler, "wb") as out:
                while True:
                    out.write(b"\0" * 65536)
                    out.flush()
            refused = chain.cli("journal", "submit", str(big))
            said = refused.stdout + refused.stderr
            assert refused.returncode == ExitCode.STORAGE, said
            assert "PostgreSQL journal: the database server's disk is full" in said and "bug" not in said
            filler.unlink()
            assert _pg_items(url) == 1
            again = chain.cli("journal", "submit", str(big))
            assert again.returncode == 0, again.stdout + again.stderr
            assert _pg_items(url) == 2
    finally:
        subprocess.run(["umount", str(where)], check=False)
        where.rmdir()
