"""Every mistake a newcomer makes gets one line that names its cause and the next step, never a
traceback or an exception's class name: a table of them, each with the line it must get.

Where these came from: an unreachable RPC host said `eth_chainId failed 5 times (gaierror)`;
`anchor journal status` (a local SQLite file) failed the same way offline; verify of a renamed folder
advised `anchor stamp moved` (a new, later anchor: wrong for a verifier); `anchor --help` told a user of
the installed package to `run make install`; `chain down` in a data dir that does not exist said its
state "is kept"; stamping a file from inside a stamped folder named the folder `.` and its proof
`..anchor.json`."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from anchor.errors import ExitCode
from tests.cli import run_anchor

UNTYPED = re.compile(r"\b(\w+Error|\w+Exception|gaierror|Traceback)\b")
"""What no answer to a user's mistake may hold: a traceback, or an exception's class name."""


def _results(work: Path) -> None:
    (work / "results").mkdir()
    (work / "results" / "metrics.json").write_text('{"accuracy": 0.9}\n')


def _renamed(work: Path) -> None:
    """A folder stamped as `results` (its proof stays beside the old name), then renamed `moved`."""
    _results(work)
    (work / "results").rename(work / "moved")
    (work / "results.anchor.json").write_text("{}")


def _journal(work: Path) -> None:
    from anchor.journal.backends import open_journal

    open_journal(work / "d").close()


@dataclass(frozen=True)
class Mistake:
    name: str
    argv: list[str]
    exit: int
    says: str
    """The line the answer must hold: the cause and the next step, on one line."""
    setup: Callable[[Path], None] = _results
    never: tuple[str, ...] = ()
    """Words the answer must not hold (advice that leads away)."""
    env: dict[str, str] = field(default_factory=dict)


def _proof_beside(work: Path) -> None:
    """`result.txt` and a proof file of it: the user names the proof where the data goes."""
    (work / "result.txt").write_text("0.93\n")
    (work / "result.txt.anchor.json").write_text("{}")


def _notes_where_the_proof_goes(work: Path) -> None:
    """`results/`, and a file of the user's at `results.anchor.json`, where its proof would go."""
    _results(work)
    (work / "results.anchor.json").write_text("my notes\n")


RPC_HOST = "nosuch.invalid"  # RFC 6761: never resolves
MISTAKES = [
    Mistake(
        "the proof file named as the data",
        ["verify", "result.txt.anchor.json"],
        ExitCode.BAD_INPUT,
        "error[bad_input]: result.txt.anchor.json: a proof file, not the data it proves: verify the data"
        " (`anchor verify result.txt`)",
        setup=_proof_beside,
        never=("anchor stamp",),  # it suggested anchoring the proof file
    ),
    Mistake(
        "an rpc host that does not resolve",
        ["--rpc-url", f"http://{RPC_HOST}:8545", "lookup", "0x" + "ab" * 32],
        ExitCode.CHAIN_UNREACHABLE,
        f"error[chain_unreachable]: could not resolve {RPC_HOST}: offline? check"
        f" --rpc-url or ANCHOR_RPC_URL (http://{RPC_HOST}:8545)",
        never=("failed 5 times",),
    ),
    Mistake(
        "an rpc url whose port is out of range",
        ["verify", "results", "--rpc-url", "http://127.0.0.1:99999"],
        ExitCode.BAD_INPUT,
        "error[bad_input]: --rpc-url 'http://127.0.0.1:99999': the port must be a number from 1 to 65535",
    ),
    Mistake(
        "a stray space pasted into an rpc url",
        ["lookup", "results", "--rpc-url", "http://127.0.0.1 :8545"],
        ExitCode.BAD_INPUT,
        "a space or control character at position 17 (a stray one from pasting?)",
        never=("could not resolve", "failed"),  # it was "could not resolve 127.0.0.1 : offline?"
    ),
    Mistake(
        "an rpc url in the environment without its scheme",
        ["verify", "results"],
        ExitCode.BAD_INPUT,
        "error[bad_input]: ANCHOR_RPC_URL '127.0.0.1:8545': expected an http(s) URL, http(s)://host[:port][/path]"
        " (did you mean http://127.0.0.1:8545?)",
        env={"ANCHOR_RPC_URL": "127.0.0.1:8545"},
    ),
    Mistake(
        "a service url whose port is out of range",
        ["stamp", "results", "--service", "http://127.0.0.1:99999"],
        ExitCode.BAD_INPUT,
        "error[bad_input]: --service 'http://127.0.0.1:99999': the port must be a number from 1 to 65535",
    ),
    Mistake(
        "a file of the user's where the proof goes by default",
        ["stamp", "results"],
        ExitCode.BAD_INPUT,
        "error[bad_input]: results.anchor.json (where the proof goes by default): exists and is not a proof;"
        " not overwritten (give the proof another place with --out, or move it)",
        setup=_notes_where_the_proof_goes,
        never=("--out 'results.anchor.json'",),  # it named an option the user had not typed
    ),
    Mistake(
        "journal status offline reads the local file alone",
        ["--rpc-url", f"http://{RPC_HOST}:8545", "journal", "status"],
        ExitCode.OK,
        "chain: none yet (the journal holds nothing)",
        setup=_journal,
    ),
    Mistake(
        "journal status of a data dir with no journal",
        ["journal", "status"],
        ExitCode.OK,
        "no journal yet in data dir {work}/d (chosen by ANCHOR_DATA_DIR): nothing was stamped from it",
    ),
    Mistake(
        "verify of a renamed folder",
        ["verify", "moved"],
        ExitCode.NOT_ANCHORED,
        "stamped under another name (moved, renamed)? give it with --proof FILE, or find its record by its"
        " content with `anchor lookup moved`; never stamped: stamp it with `anchor stamp moved`",
        setup=_renamed,
    ),
    Mistake(
        "the help of the installed package",
        ["--help"],
        ExitCode.OK,
        "8  toolchain missing: anvil or solc (install Foundry; in a source checkout, `make install`)",
        never=("run `make install`",),
        env={"COLUMNS": "200"},
    ),  # wide enough for the line not to wrap
    Mistake(
        "chain down in a data dir that does not exist",
        ["chain", "down"],
        ExitCode.OK,
        "no state yet: `anchor chain up` (or a stamp) starts a new chain here",
        never=("is kept",),
    ),
    Mistake(
        "chain status in a data dir that does not exist",
        ["chain", "status"],
        ExitCode.OK,
        "data dir: {work}/d (chosen by ANCHOR_DATA_DIR; `anchor info` says more)",
        never=("is kept",),
    ),
    Mistake(
        "a typo of stamp",
        ["stmap", "results"],
        ExitCode.BAD_INPUT,
        "Error: No such command 'stmap'. Did you mean 'stamp'?",
    ),
    Mistake(
        "a typo of verify",
        ["verfy", "results"],
        ExitCode.BAD_INPUT,
        "Error: No such command 'verfy'. Did you mean 'verify'?",
    ),
    Mistake(
        "a typo of journal status",
        ["journal", "stauts"],
        ExitCode.BAD_INPUT,
        "Error: No such command 'stauts'. Did you mean 'status'?",
    ),
    Mistake(
        "a typo of chain status",
        ["chain", "stats"],
        ExitCode.BAD_INPUT,
        "Error: No such command 'stats'. Did you mean 'status'?",
    ),
    Mistake(
        "a typo of research run",
        ["research", "rn"],
        ExitCode.BAD_INPUT,
        "Error: No such command 'rn'. Did you mean 'run'?",
    ),
    Mistake(
        "a typo of an option of verify",
        ["verify", "results", "--proff", "p.json"],
        ExitCode.BAD_INPUT,
        "Error: No such option '--proff'. (Did you mean one of: '--from', '--offline', '--proof'?)",
    ),
    Mistake(
        "a typo of a path to stamp",
        ["stamp", "resluts"],
        ExitCode.BAD_INPUT,
        "error[bad_input]: resluts: no such file or directory (did you mean results?)",
    ),
    Mistake(
        "a typo of a path to verify",
        ["verify", "resluts"],
        ExitCode.BAD_INPUT,
        "error[bad_input]: resluts: no such file or folder (did you mean results?)",
    ),
    Mistake(
        "a typo of a path to hash",
        ["hash", "resluts"],
        ExitCode.BAD_INPUT,
        "error[bad_input]: resluts: no such file or directory (did you mean results?)",
    ),
    Mistake(
        "a lookup key that is neither a path nor hex",
        ["lookup", "0xzz"],
        ExitCode.BAD_INPUT,
        "error[bad_input]: 0xzz: no such file or folder, and not a digest, batch root or commit (hex)",
    ),
    Mistake(
        "a typo of a finality word",
        ["verify", "results", "--min-finality", "soon"],
        ExitCode.BAD_INPUT,
        "Error: Invalid value for '--min-finality': 'soon': expected safe, finalized, or a number of confirmations",
    ),
    Mistake(
        "a typo of a symlink rule",
        ["stamp", "results", "--symlinks=folow"],
        ExitCode.BAD_INPUT,
        "Error: Invalid value for '--symlinks': 'folow' is not one of 'refuse', 'record', 'follow-inside'.",
    ),
]


@pytest.mark.parametrize("mistake", MISTAKES, ids=lambda m: m.name)
def test_each_mistake_gets_one_line_with_its_cause_and_next_step_never_a_traceback(
    mistake: Mistake, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    mistake.setup(work)
    before = sorted(p.name for p in work.iterdir())
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANCHOR_")}
    env |= {"ANCHOR_DATA_DIR": str(work / "d"), "ANCHOR_RPC_RETRIES": "4", **mistake.env}
    said = run_anchor(mistake.argv, env, cwd=work)
    text = said.stdout + said.stderr
    assert said.returncode == mistake.exit, text
    expected = mistake.says.format(work=work)
    assert any(expected in line for line in text.splitlines()), f"no line holds {expected!r}:\n{text}"
    assert UNTYPED.search(text) is None, text
    assert not [word for word in mistake.never if word in text], text
    assert sorted(p.name for p in work.iterdir()) == before  # a mistake writes nothing, makes no data dir


def test_there_are_a_dozen_mistakes_or_more_and_each_common_command_has_its_typo() -> None:
    assert len(MISTAKES) >= 12
    typed = {m.argv[0] for m in MISTAKES if "typo" in m.name}
    assert {"stamp", "verify", "hash", "journal", "chain", "research", "stmap", "verfy"} <= typed


@pytest.mark.chain  # a stamp, then another from inside the stamped folder
def test_a_stamp_inside_a_stamped_folder_names_that_folder_even_from_inside_it(tmp_path: Path, deployed_chain) -> None:  # type: ignore[no-untyped-def]
    """From inside the folder, the note named it `.` and its proof `..anchor.json`; it now names the folder
    by its path, and says what its verify will then answer (exit 4), and how to keep it anchored."""
    import uuid

    results = tmp_path / "results"
    results.mkdir()
    (results / "model.pkl").write_text(uuid.uuid4().hex)
    assert deployed_chain.cli("stamp", str(results)).returncode == 0
    env = deployed_chain.env()
    inside = run_anchor(["stamp", "model.pkl"], env, cwd=results)
    assert inside.returncode == 0, inside.stderr
    [note] = [line for line in inside.stderr.splitlines() if line.startswith("note: ")]
    assert note == (
        f"note: model.pkl.anchor.json is written inside {results}, which has an anchor of its own"
        f" ({results}.anchor.json): `anchor verify {results}` will then fail with exit 4 (tampered:"
        " this proof is a file added since; its anchored files unchanged); hint: --out outside"
        f" {results} keeps {results} as anchored"
    )
    assert UNTYPED.search(inside.stdout + inside.stderr) is None
    checked = run_anchor(["verify", str(results)], env)
    assert checked.returncode == ExitCode.TAMPERED  # as the note said
