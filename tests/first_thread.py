"""A process whose first thread has ended while another still runs: /proc shows it as a zombie, yet it
holds its files and runs its code (anvil's threads end one by one; measured code can call
pthread_exit). Whatever asks "does it still run?" must say yes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SCRIPT = """
import ctypes, socket, sys, threading, time
if len(sys.argv) > 1:
    listener = socket.socket()
    listener.bind(("127.0.0.1", int(sys.argv[1])))
    listener.listen()
threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
print("ready", flush=True)
ctypes.CDLL(None).pthread_exit(None)  # the first thread ends; the other runs on, holding the files
"""


@contextmanager
def first_thread_ended(*args: str) -> Iterator[subprocess.Popen[str]]:
    """Start SCRIPT (with a port: listening on it) in a process group of its own, and yield it once its
    first thread shows as a zombie; stopped by its pid afterwards, whatever the test did."""
    child = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, *args], start_new_session=True, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 10
        while Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            assert time.monotonic() < deadline, "the first thread did not end"
            time.sleep(0.05)
        yield child
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)  # the process we started, by its pid
        child.wait(timeout=10)
