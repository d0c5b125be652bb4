"""A stand-alone anchoring process for the fault tests: `python -m tests.faults.child DATA PORT MODE N BATCH`.

MODE "submit" journals N fresh manifests and flushes in batches of BATCH; MODE "flush" only
reconciles and flushes. ANCHOR_FAULT (see anchor/journal/faults.py) decides where it dies.

`python -m tests.faults.child --forkserver` imports the anchoring stack once and then forks one such
process per request read from stdin (a JSON line: argv, env, the file for its output), answering each
with the child's exit status. Why: the crash tests start hundreds of these processes, and each used to
spend about a second importing web3 before reaching its first seam. A forked child is still a process
of its own: it opens the journal and the chain itself, is SIGKILLed at its seam by the kernel, and
shares nothing with the next one but modules imported before any of them ran.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path


def run(argv: Sequence[str]) -> None:
    from anchor.anchoring.service import AnchorService
    from anchor.settings.session import Settings
    from tests.journal_helpers import unique_submissions

    data, port, mode, n, batch = argv[:5]
    url = os.environ.get("ANCHOR_JOURNAL_URL")  # the backend under test (unset: SQLite in DATA)
    service = AnchorService.open(Settings(data_dir=Path(data), local_port=int(port), journal_url=url))
    if mode == "submit":
        service.submit(unique_submissions(int(n)))
    service.flush(max_items=int(batch))
    service.close()


def _warm() -> None:
    """Import what a child needs before forking any (nothing is opened: no connection, file or thread)."""
    import eth_account  # noqa: F401
    import psycopg  # noqa: F401
    import web3  # noqa: F401

    import anchor.anchoring.service  # noqa: F401
    import anchor.chain.keys  # noqa: F401
    import anchor.chain.open  # noqa: F401
    import anchor.chain.registry  # noqa: F401
    import anchor.chain.transactions  # noqa: F401
    import anchor.journal.effects  # noqa: F401
    import anchor.journal.pg  # noqa: F401
    import tests.journal_helpers  # noqa: F401


def _forked(request: dict[str, object]) -> int:
    """In the child: its output to the named file, the requested environment, then `run`."""
    out = os.open(str(request["output"]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(out, 1)  # never the server's stdout: that is the protocol
    os.dup2(out, 2)
    os.environ.clear()
    os.environ.update(request["env"])  # type: ignore[arg-type]
    try:
        run(request["argv"])  # type: ignore[arg-type]
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:  # noqa: BLE001 - reported through the output file and the exit status
        traceback.print_exc()
        return 1
    return 0


def forkserver() -> None:
    _warm()
    answers = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = _forked(request)
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        answers.write(json.dumps({"returncode": code, "pid": pid}) + "\n")
        answers.flush()


if __name__ == "__main__":
    if sys.argv[1:] == ["--forkserver"]:
        forkserver()
    else:
        run(sys.argv[1:6])
