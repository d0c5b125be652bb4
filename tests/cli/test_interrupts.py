"""Ctrl-C is an abort everywhere: exit 130 with an `aborted` line, nothing sent after it, and a data dir
the next command carries on from (anchor.settings.interrupt).

Seventeen interrupts into `anchor stamp` once found: the exit 130 typer makes of a KeyboardInterrupt
on its own, with no `aborted` line; and once an interrupt swallowed in a finalizer ("Exception ignored
in … __del__ … KeyboardInterrupt"), after which the stamp went on to "anchored", exit 0. Here SIGINT
lands at every named seam of a stamp and of a journal flush, raised where it lands and inside a
finalizer, and at random moments of a stamp waiting for its block and of a seal: every one exits 130
with `aborted`."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from anchor.errors import ExitCode
from anchor.journal.faults import SEAMS
from tests.cli import ANCHOR_BIN, run_anchor
from tests.conftest import anvil, deployed, test_rng

SENT_BEFORE = ("after_broadcast", "after_receipt", "during_confirmation")
"""The seams past the broadcast: what was sent before Ctrl-C is on chain; before them, nothing may be."""


def _child(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    """`anchor ARGV` as a child whose SIGINT is the default (a test run in the background inherits it
    ignored, and an ignored signal stays ignored across exec)."""
    return subprocess.Popen(
        [str(ANCHOR_BIN), *argv],
        env=env,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _assert_aborted(result: subprocess.CompletedProcess[str] | tuple[int, str, str], where: str) -> None:
    code, out, err = result if isinstance(result, tuple) else (result.returncode, result.stdout, result.stderr)
    said = f"{where}: exit {code}\n--- stdout\n{out}\n--- stderr\n{err}"
    assert code == ExitCode.ABORTED, said
    assert err.rstrip().splitlines()[-1:] == ["aborted"], said
    assert "Traceback" not in err and "Exception ignored" not in err and "KeyboardInterrupt" not in err, said
    assert "anchored" not in out and "sealed" not in out, said  # no result is claimed after Ctrl-C


def _folder(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "metrics.json").write_text(f'{{"run": "{uuid.uuid4().hex}"}}\n')
    return folder


@pytest.mark.chain
def test_ctrl_c_at_each_seam_of_stamp_and_flush_aborts_and_nothing_is_sent_after_it(tmp_path: Path) -> None:
    from anchor.chain.node import rpc_call

    points = 0
    with deployed(tmp_path / "data") as chain:
        env = chain.env()

        def block() -> int:
            return int(str(rpc_call(chain.node.rpc_url, "eth_blockNumber")), 16)

        folders = []
        for seam in SEAMS:
            for how in ("int", "int-in-del"):
                for command in ("stamp", "flush"):
                    folder = _folder(tmp_path, f"{command}-{seam}-{how}")
                    folders.append(folder)
                    # what an earlier interrupt left signed is sent by the next flush: here, before this run
                    assert run_anchor(["journal", "flush"], env).returncode == 0
                    if command == "flush":
                        run_anchor(["journal", "submit", str(folder)], env, check=True)
                    argv = ["stamp", str(folder)] if command == "stamp" else ["journal", "flush"]
                    before = block()
                    ran = subprocess.run(
                        [str(ANCHOR_BIN), *argv],
                        env={**env, "ANCHOR_FAULT": f"{seam}:1:{how}"},
                        capture_output=True,
                        text=True,
                        timeout=120,
                        stdin=subprocess.DEVNULL,
                        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
                    )
                    _assert_aborted(ran, f"{command} interrupted at {seam} ({how})")
                    points += 1
                    if seam not in SENT_BEFORE:
                        assert block() == before, f"{command} at {seam} ({how}): a transaction was sent after Ctrl-C"
        # the data dir carries on: one flush finishes what was journaled, a stamp of each confirms it
        flushed = run_anchor(["journal", "flush"], env)
        assert flushed.returncode == 0, flushed.stderr
        for folder in folders:
            again = run_anchor(["stamp", str(folder)], env)
            assert again.returncode == 0, again.stderr
        checked = run_anchor(["verify", *map(str, folders)], env)
        assert checked.returncode == 0, checked.stdout + checked.stderr
    assert points == len(SEAMS) * 4 == 20


@pytest.mark.chain  # an anvil of its own with 1 s blocks: a stamp waits for its block, a seal reads several
def test_ctrl_c_at_random_moments_of_a_stamp_and_a_seal_aborts_and_leaves_the_proof_whole(tmp_path: Path) -> None:
    rng = test_rng("ctrl-c moments")
    dev_key = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"  # anvil's first dev account
    with anvil(31337, 1) as url:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
        env |= {"ANCHOR_RPC_URL": url, "ANCHOR_PRIVATE_KEY": dev_key, "ANCHOR_DATA_DIR": str(tmp_path / "data")}
        assert run_anchor(["deploy"], env).returncode == 0
        start = time.monotonic()
        sealed = _folder(tmp_path, "sealed")
        assert run_anchor(["stamp", str(sealed)], env).returncode == 0
        took = time.monotonic() - start
        # a moment before the interpreter reaches our code is Python's own start (the console script's
        # `import re`), whose Ctrl-C is Python's traceback: moments start after a start-up, timed here
        begun = time.monotonic()
        started = _child(["--version"], env, tmp_path)
        started.communicate(timeout=60)
        startup = time.monotonic() - begun
        proof = Path(f"{sealed}.anchor.json")
        kept = proof.read_bytes()
        hits, stamps, tried = 0, [], 0
        for i in range(60):  # a loaded machine (CI beside other work) finishes some commands first: try on
            if hits >= 12:
                break
            tried += 1
            command = "seal" if i % 3 == 2 else "stamp"
            folder = sealed if command == "seal" else _folder(tmp_path, f"moment-{i}")
            stamps += [folder] if command == "stamp" else []
            child = _child([command, str(folder)], env, tmp_path)
            time.sleep(rng.uniform(max(0.05, 1.2 * startup), startup + max(0.1, took * 0.6)))
            answering = select.select([child.stdout], [], [], 0)[0]
            if child.poll() is not None or answering:  # done, or giving its answer, before the moment came
                child.send_signal(signal.SIGINT)
                out, err = child.communicate(timeout=60)
                assert child.returncode == 0 and "Traceback" not in err, err  # a late Ctrl-C changes nothing
                continue
            child.send_signal(signal.SIGINT)
            out, err = child.communicate(timeout=60)
            _assert_aborted((child.returncode, out, err), f"{command} interrupted at moment {i}")
            hits += 1
            if command == "seal":  # written whole or not at all: the proof before, or a sealed one
                now = proof.read_bytes()
                assert now == kept or b'"sealed"' in now, now[:200]
        assert hits >= 12, f"only {hits} of {tried} moments fell inside a command"
        flushed = run_anchor(["journal", "flush"], env)
        assert flushed.returncode == 0, flushed.stderr
        for folder in stamps:
            assert run_anchor(["stamp", str(folder)], env).returncode == 0
        checked = run_anchor(["verify", str(sealed), *map(str, stamps)], env)
        assert checked.returncode == 0, checked.stdout + checked.stderr


_IN_A_WEAKREF_CALLBACK = """
import os, signal, time, weakref
from anchor.settings import interrupt

interrupt.install()


class Held:
    pass


def dropped(_):  # a weakref callback, as an import's module lock has: what it raises, Python prints and drops
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(200_000):
        pass


held = Held()
watch = weakref.ref(held, dropped)
try:
    del held
    time.sleep(2)
    print("went on")
except KeyboardInterrupt:
    print("interrupted")
"""


def test_ctrl_c_landing_in_a_weakref_callback_is_neither_printed_nor_lost() -> None:
    """Ctrl-C met where Python cannot raise it (a stamp interrupted while an import released its module
    lock printed "Exception ignored in: <function _get_module_lock.<locals>.cb>" and a traceback) is not
    printed, and still stops the program a moment later."""
    import sys

    done = subprocess.run([sys.executable, "-c", _IN_A_WEAKREF_CALLBACK], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "interrupted" and done.stderr == "", (done.stdout, done.stderr)
