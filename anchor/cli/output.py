"""Print a result either for people or for scripts (`--json`, one JSON object on stdout).

Nothing here needs the command-line framework but the context a command passes in (`ctx`)."""

from __future__ import annotations

import contextlib
import json
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

    import click

    from anchor.errors import AnchorError, ErrorJson
    from anchor.manifest.hashing import Progress


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` with every control character shown as an escape: a file name holding `\r\x1b[2K` could
    otherwise erase an error line and print a fake "OK" over it. Applied to every line we print."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


OPTION_OF_FIELD = {
    "services": "--service",
    "registries": "--registry",
    "researcher_addresses": "--researcher-address",
    "subjects_in": "--in",
    "inside": "--in",
    "read_rpcs": "--rpc-url",
    "ready_urls": "--ready-url",
    "mission.digest": "--mission-digest",  # the submission's fields, as the API's body nests them
    "snapshot.sha256": "--snapshot-sha256",
    "resume.digest": "--resume-digest",
}
"""The library's inputs whose option is not `--` and the name, dashed."""


RAN: list[Any] = []
"""The root command this call ran (anchor/cli/__init__.py), whose options `option` looks up."""

ENVIRONMENT: list[Any] = []
"""The settings model this call read (`environment()`); emptied at the start of each call."""


def environment() -> Any:
    """The `ANCHOR_*` settings this call of the command line runs with (anchor.settings.model): read
    from the environment and `.env` once per call, then handed to every setting-reading step."""
    if not ENVIRONMENT:
        from anchor.settings.model import Environment

        loaded = Environment.load()
        ENVIRONMENT.append(loaded)
        _note_unknown_variables(loaded)
        _note_passed_over_file(loaded)
    return ENVIRONMENT[0]


def _note_passed_over_file(env: Any) -> None:
    """A `.env` here that sets `ANCHOR_*` variables is not read unless ANCHOR_ENV_FILE names it (a file
    that came with the folder could name the signing key or the toolchain that runs): said once, so
    someone who wrote it for themselves is not left guessing why it does nothing."""
    from pathlib import Path

    import click

    if env.dotenv is not None or env.raw("ANCHOR_ENV_FILE"):
        return
    try:
        head = Path(".env").read_bytes()[:65536] if Path(".env").is_file() else b""
    except OSError:
        return
    if any(line.strip().removeprefix(b"export ").startswith(b"ANCHOR_") for line in head.splitlines()):
        click.echo(
            "note: ./.env sets ANCHOR_* variables and is not read (a file that came with a folder could"
            " name the key that signs); ANCHOR_ENV_FILE=.env reads it",
            err=True,
        )


def _note_unknown_variables(env: Any) -> None:
    """A `.env` line naming no setting of anchor's (a typo of a name) is ignored, as anchor.toml's
    would not be; said once on stderr, so the typo does not go unseen while the default is used."""
    for name in env.unknown():
        if env.source(name) in ("environment", "default"):
            continue  # the process environment holds many tools' variables; `anchor config show` lists it
        import difflib

        import click

        from anchor.settings.model import Environment

        near = difflib.get_close_matches(name, Environment.variables(), n=1)
        click.echo(
            f"note: {env.source(name)}: {name} is no setting of anchor's, ignored"
            + (f" (did you mean {near[0]}?)" if near else ""),
            err=True,
        )


def option(field: str) -> str:
    """How the command line says a refusal of the library's input `field` (`AnchorError.said_as`): as the
    option that gives it (`min_finality`: `--min-finality`), typed or not (`verify --offline` without
    `--trusted-block` is refused as `--trusted-block`). A field no option of the command that ran gives
    (a key of a contract file) keeps the library's name: `metric_sorce` is not an option `--metric-sorce`."""
    flag = OPTION_OF_FIELD.get(field, "--" + field.replace("_", "-"))
    typed = any(arg == flag or arg.startswith(flag + "=") for arg in sys.argv[1:])
    return flag if typed or flag in _options_of_command() else field


def _options_of_command() -> set[str]:
    """Every option of the command that ran and of the groups above it: its words followed down from
    the root as click resolves them."""
    if not RAN:
        return set()
    import click

    found: set[str] = set()
    command = RAN[0]
    for word in ["", *sys.argv[1:]]:
        if word:
            names = command.list_commands(click.Context(command)) if isinstance(command, click.Group) else []
            if word not in names:
                continue  # an option or its value
            command = command.get_command(click.Context(command), word)
        found.update(name for param in command.params for name in getattr(param, "opts", ()))
    return found


def error_json(exc: AnchorError) -> ErrorJson:
    """An error as `--json` shows it: the typed shape the API returns, its message in the CLI's words."""
    return exc.to_dict() | {"message": exc.said_as(option)}


def tamper_lines(detail: dict[str, Any], color: bool) -> list[str]:
    """A tamper verdict as a diff a person reads: `~ changed (old -> new bytes)`, `+ added`, `- removed`,
    coloured (yellow, green, red) when `color`. Names are escaped like every printed line."""
    sizes: dict[str, list[int | None]] = detail.get("sizes", {})
    links: dict[str, list[str | None]] = detail.get("links", {})
    paint = {"~": "33", "+": "32", "-": "31", ">": "36"} if color else {}
    renamed = [tuple(pair) for pair in detail.get("renamed", [])]
    moved = {path for pair in renamed for path in pair}
    lines = []
    for old_path, new_path in renamed[:50]:  # a removed and an added file with the same bytes
        text = f"  > {printable(old_path)} -> {printable(new_path)}  (renamed, same content)"
        lines.append(f"\x1b[{paint['>']}m{text}\x1b[0m" if paint else text)
    for mark, key in (("~", "changed"), ("+", "added"), ("-", "removed")):
        for path in [p for p in detail.get(key, []) if p not in moved][:50]:
            old, new = sizes.get(path, [None, None])
            size = f"{old} -> {new} bytes" if mark == "~" else f"{new} bytes" if mark == "+" else f"was {old} bytes"
            if path in links:  # a link (on either side) is shown by its target, not a size
                was, now = (f"link to {t}" if t is not None else "not a link" for t in links[path])
                size = f"{was} -> {now}" if mark == "~" else now if mark == "+" else f"was {was}"
            text = f"  {mark} {printable(path)}  ({printable(size)})"
            lines.append(f"\x1b[{paint[mark]}m{text}\x1b[0m" if mark in paint else text)
    hidden = (
        sum(len(detail.get(k, [])) for k in ("changed", "added", "removed")) - len(moved) + len(renamed) - len(lines)
    )
    lines += [f"  … and {hidden} more (--json lists them all)"] if hidden > 0 else []
    said = detail.get("anchored") or {}
    if said.get("block_number") is not None:  # where, as the proof says it (the chain is not read past the data)
        lines.append(
            f"  anchored, as the proof file says: manifest {said['manifest_digest']} in block {said['block_number']}"
            f" of {said['chain']}, registry {said['registry']}"
        )
    return lines


def count(n: int, noun: str) -> str:
    """ "1 file", "2 files": a count with its noun in the right number."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def wants_json(ctx: click.Context, local: bool) -> bool:
    root = ctx.find_root()
    return local or bool(root.obj and root.obj.get("json"))


def emit(ctx: click.Context, local_json: bool, data: dict[str, Any], lines: list[str]) -> None:
    emit_as(wants_json(ctx, local_json), data, lines)


def emit_as(as_json: bool, data: dict[str, Any], lines: list[str]) -> None:
    from anchor.settings.interrupt import check

    check()  # Ctrl-C came (a finalizer may have swallowed it): the answer is `aborted`, not a result
    if as_json:
        print(json.dumps({"ok": True, **data}, sort_keys=True, default=str))
        return
    # plain print, not rich: the lines carry no styling, rich would turn ":smile:" in a path into an emoji,
    # and importing it cost 20-50 ms of every command
    for line in lines:
        print(printable(line))


def hash_progress(ctx: click.Context, local_json: bool) -> contextlib.AbstractContextManager[Progress | None]:
    return progress_bar(wants_json(ctx, local_json))


@contextmanager
def progress_bar(as_json: bool) -> Iterator[Progress | None]:
    """A progress line for hashing (files, bytes, throughput, time left) on stderr when stderr is a
    terminal and the output is not JSON; None otherwise, so pipes and logs get no escape codes."""
    if as_json or not sys.stderr.isatty():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, TextColumn, TimeRemainingColumn, TransferSpeedColumn
    from rich.progress import Progress as Bar

    columns = (
        TextColumn("hashing {task.fields[files]} files"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
    )
    last = [0.0]
    with Bar(*columns, console=Console(stderr=True), transient=True, auto_refresh=False) as bar:
        task = bar.add_task("hash", total=None, files="0")

        def update(files_done: int, files_total: int, bytes_done: int, bytes_total: int) -> None:
            bar.update(task, completed=bytes_done, total=bytes_total, files=f"{files_done:,}/{files_total:,}")
            now = time.monotonic()
            if now - last[0] >= 0.1 or files_done == files_total:  # at most ten redraws a second
                last[0] = now
                bar.refresh()

        yield update


def write_rendered(text: str, out: Path | None, wrote: str) -> None:
    """Rendered manifests to stdout, or to `out`, which is never overwritten; `wrote` says what the
    file holds (on stderr, so stdout stays the manifests alone)."""
    if out is None:
        sys.stdout.write(text)
        return
    from anchor.errors import BadInput
    from anchor.files import atomic_write

    if out.exists():
        raise BadInput(f"{out}: exists; not overwritten (choose another --out, or remove it)", detail={"field": "out"})
    atomic_write(out, text.encode())
    sys.stderr.write(f"wrote {out}: {wrote}\n")
