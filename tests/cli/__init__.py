"""Run `anchor` the way a user does, in this process or as a child.

Why in process: a child pays 0.3–1.5 s of interpreter start and imports (web3 alone is about a
second) before it does anything; the suite makes a few hundred calls. `anchor.cli.main` reads only
`sys.argv`, `os.environ`, the working directory and the standard streams, so giving it exactly what a
child would get (and restoring ours afterwards) checks the same thing: the same entry point, the same
error handling in one place, the same exit codes. A handful of tests keep a real child process where
the process itself is under test: exit codes through the installed script, start-up imports, signals,
the wheel (`run_anchor_process`).
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

ANCHOR_BIN = Path(sys.executable).with_name("anchor")
_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class _Capture(io.TextIOWrapper):
    """A text stream with a binary `.buffer`, as a child's captured stdout has (some commands write bytes)."""

    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8", errors="replace", write_through=True)

    def text(self) -> str:
        self.flush()
        raw = self.buffer.getvalue()  # type: ignore[attr-defined]
        return raw.decode("utf-8", errors="replace")

    def isatty(self) -> bool:
        return False


@contextlib.contextmanager
def _as_child(argv: Sequence[str], env: Mapping[str, str], cwd: Path | None, stdin: str) -> Iterator[None]:
    """This process made to look like a fresh child for the duration: argv, environment, cwd, streams,
    signal handlers. Everything is put back afterwards, whatever the command did to it."""
    saved_env, saved_argv, saved_cwd = dict(os.environ), sys.argv, os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_handlers = {sig: signal.getsignal(sig) for sig in _SIGNALS}
    os.environ.clear()
    os.environ.update(env)
    sys.argv = ["anchor", *argv]
    if cwd is not None:
        os.chdir(cwd)
    sys.stdin = io.StringIO(stdin)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        for sig, handler in saved_handlers.items():
            signal.signal(sig, handler)
        from anchor.chain.toolchain import checkout

        checkout.cache_clear()  # keyed on ANCHOR_PROJECT_ROOT, which a call may have set


def run_anchor(
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    *,
    cwd: Path | None = None,
    stdin: str = "",
    check: bool = False,
) -> subprocess.CompletedProcess[str]:
    """`anchor ARGS` through `anchor.cli.main` in this process; the result looks like `subprocess.run`'s."""
    from anchor.cli import main

    out, err = _Capture(), _Capture()
    code: int
    with _as_child(args, os.environ.copy() if env is None else env, cwd, stdin):
        sys.stdout, sys.stderr = out, err
        try:
            main()
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    result = subprocess.CompletedProcess(["anchor", *args], code, out.text(), err.text())
    if check and code != 0:
        raise AssertionError(f"anchor {' '.join(args)} -> {code}\n{result.stdout}\n{result.stderr}")
    return result


def run_anchor_process(
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    *,
    cwd: Path | None = None,
    check: bool = False,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """`anchor ARGS` as a real child process of the installed script (exit codes, imports, signals)."""
    result = subprocess.run(
        [str(ANCHOR_BIN), *args],
        env=None if env is None else dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"anchor {' '.join(args)} -> {result.returncode}\n{result.stdout}\n{result.stderr}")
    return result
