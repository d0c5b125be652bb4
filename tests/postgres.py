"""A real PostgreSQL server for the tests: `initdb` in a temporary directory, the server on a Unix
socket only (no TCP port), run as an unprivileged user, stopped by the PID we started.

As root (CI), the server runs as Debian's `postgres` user through `setpriv`, which execs (the PID we
record is the postmaster's own); otherwise as whoever runs the tests. `make test` installs Debian's
`postgresql` (the `postgres` target); a missing server is a failure, never a skip.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def _bin(name: str) -> str:
    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    assert found, f"PostgreSQL is missing: `make test` installs it (apt-get install postgresql); no {name}"
    return str(found[-1])


def _as_server_user() -> tuple[list[str], int | None]:
    """The argv prefix that runs a command as an unprivileged user, and that user's uid (None: as us)."""
    if os.geteuid() != 0:
        return [], None
    user = pwd.getpwnam("postgres")
    return ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups", "--"], user.pw_uid


@contextlib.contextmanager
def postgres_server(under: Path | None = None) -> Iterator[str]:
    """Yield the URL of a fresh server's `postgres` database (superuser `anchor`, trust on the socket).
    `under`: where its directory (data and socket) is made, e.g. /var/run as on a Debian host."""
    prefix, uid = _as_server_user()
    root = Path(tempfile.mkdtemp(prefix="anchor-pg-", dir=under))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if uid is not None:
        for path in (root, sock):
            os.chown(path, uid, -1)
    subprocess.run(
        [*prefix, _bin("initdb"), "-D", str(data), "-U", "anchor", "-A", "trust", "-E", "UTF8", "--no-instructions"],
        check=True,
        capture_output=True,
    )
    log = open(root / "server.log", "wb")  # noqa: SIM115 - closed below, after the server stops
    server = subprocess.Popen(
        [
            *prefix,
            _bin("postgres"),
            "-D",
            str(data),
            "-k",
            str(sock),
            "-c",
            "listen_addresses=",
            "-c",
            "max_connections=200",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"postgresql://anchor@/postgres?host={sock}"
    try:
        _wait_ready(url, server, root / "server.log")
        yield url
    finally:
        with contextlib.suppress(ProcessLookupError):
            server.send_signal(signal.SIGINT)  # fast shutdown of the postmaster we started, by its PID
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()
        shutil.rmtree(root, ignore_errors=True)


def _wait_ready(url: str, server: subprocess.Popen[bytes], log: Path) -> None:
    import psycopg

    deadline = time.monotonic() + 60
    while True:
        try:
            with psycopg.connect(url, connect_timeout=2):
                return
        except psycopg.OperationalError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"PostgreSQL did not start: {log.read_text()[-2000:]}") from None
            time.sleep(0.05)


def fresh_database(server_url: str, name: str) -> str:
    """Create database `name` on the server and return its URL."""
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # a test's own name, never input
    return server_url.replace("/postgres?", f"/{name}?")
