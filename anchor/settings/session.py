"""Settings shared by the CLI and the API, and the process environment they come from.

Why one place: "no RPC URL means the embedded local chain", which variables are secrets, and what a
child process may inherit must hold the same for every command and route. Ground layer: it never
imports the chain (`anchor.chain.open` turns settings into a connection).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from anchor.errors import BadInput
from anchor.layout import DataDir
from anchor.record import Value
from anchor.settings.model import SECRET_VARIABLES as SECRET_VARIABLES  # re-exported: where callers look
from anchor.settings.model import Environment, http_url_problem, meant_url
from anchor.settings.model import is_secret as is_secret
from anchor.settings.model import redact_url as redact_url  # re-exported: where callers look


def child_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a process we start (the code under measurement, a proposer, git): ours
    without any secret. A signing key, a keystore password or an API token in a child's environment
    would be readable by the very code being measured.

    Why from the process environment as it is now and not from the settings model: a child inherits
    the caller's PATH, HOME, locale and its own tools' variables, which are none of anchor's settings;
    the model decides only what is withheld (`is_secret`)."""
    clean = {k: v for k, v in os.environ.items() if not is_secret(k)}
    return {**clean, **(extra or {})}


def own_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment for a process of anchor's own that acts for this one (a researcher `research
    run --researchers` starts): ours whole, secrets included, since it signs as we would."""
    return {**os.environ, **(extra or {})}


def inherited(names: tuple[str, ...]) -> dict[str, str]:
    """Those of `names` set in the process environment: what an allow-listed child environment (the
    fence's, a probe's) takes from ours."""
    return {name: os.environ[name] for name in names if name in os.environ}


def search_path(default: str = os.defpath) -> str:
    """The PATH a tool we start is looked up on (`default` where none is set)."""
    return os.environ.get("PATH", default)


def protect_environment() -> None:
    """Make this process's memory and /proc/<pid>/environ unreadable to other processes of its user
    (PR_SET_DUMPABLE 0): a command run beside us as the same user (a mission's, in a pod) must not
    read a secret (the service token) out of our environment, as `child_environment` keeps it out of its own.
    Linux only; elsewhere a no-op."""
    import ctypes
    import sys

    if not sys.platform.startswith("linux"):
        return
    pr_set_dumpable = 4
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_dumpable, 0, 0, 0, 0)


def stat_fields(stat: str | Path) -> list[str] | None:
    """The fields of a /proc `stat` file after the command name (which may hold spaces and parentheses):
    [0] the state, [2] the process group, [19] the start time. None if it cannot be read (gone)."""
    try:
        fields = Path(stat).read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields if len(fields) > 19 else None


def start_ticks(pid: int) -> int | None:
    """A process's start time (clock ticks since boot, /proc/<pid>/stat field 22): with the pid, an
    identity that pid reuse cannot fake. None if there is no such process. Whatever we start and may
    have to stop later (the local chain, an attempt's process group) is recorded with it."""
    fields = stat_fields(f"/proc/{pid}/stat")
    return int(fields[19]) if fields is not None and fields[19].isdigit() else None


def runs(pid: int, state: str) -> bool:
    """Whether process `pid`, whose /proc stat shows `state`, still runs. A zombie does not: it has
    ended and awaits its reaper, which a container's first process may never be. A process whose first
    thread ended before the others also shows as a zombie, and does run: its other threads still hold its
    files (a listening socket) and run its code, and a signal to its pid still reaches them."""
    if state not in ("Z", "X"):
        return True
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False  # gone meanwhile
    for thread in threads:
        fields = stat_fields(f"/proc/{pid}/task/{thread}/stat")
        if fields is not None and fields[0] not in ("Z", "X"):
            return True
    return False


LOCAL_CHAIN_STARTS = ("refuse", "until_exit", "keep_running")


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Settings(Value):
    """Where a command works, resolved from the command line, the settings model (`env`) and the
    anchor.toml files: what each `ANCHOR_*` variable means is said once, in anchor.settings.model."""

    data_dir: Path
    rpc_url: str | None = None
    keystore: Path | None = None
    local_port: int | None = None
    journal_url: str | None = field(default=None, repr=False)
    """May carry a password: a secret, never in a repr (ANCHOR_JOURNAL_URL)."""
    read_rpcs: tuple[str, ...] = ()
    """Every endpoint a verdict is read from (`--rpc-url` given more than once, or ANCHOR_READ_RPCS);
    empty: `rpc_url` (or the local chain)."""
    service_urls: tuple[str, ...] = ()
    """The services every writer stamps through (ANCHOR_SERVICE_URLS; anchor.anchoring.stamper)."""
    browser_rpc_urls: tuple[str, ...] = ()
    """The endpoints the /verify page is told to read (ANCHOR_BROWSER_RPC_URL; api.routes.browser_verify)."""
    offline: bool = False
    """`verify --offline`: verdicts come from sealed proofs and `trusted_blocks` alone; no socket is opened."""
    trusted_blocks: tuple[tuple[int | None, int, str], ...] = ()
    """(chain id or None for any, block number, 0x block hash) the verifier trusts (`--trusted-block`,
    `--trusted-blocks FILE`): the whole trust root of an offline verdict (anchor.sealing.check)."""
    local_chain_start: str = "refuse"
    """What a write does when the embedded local chain is not running (LOCAL_CHAIN_STARTS): "refuse" (a
    library call's default: a chain it started would outlive the program, an orphan per batch job),
    "until_exit" (`start_chain=True`: started, and stopped when this interpreter exits), "keep_running"
    (the command line: started and left running for the next command, as it says)."""
    env: Environment = field(default_factory=Environment, compare=False, repr=False)
    """Every `ANCHOR_*` setting (anchor.settings.model), read once by the door that made these settings
    and passed down with them: the RPC retries, the runner's knobs, the service's limits."""
    data_dir_source: str = field(default="given", compare=False)
    """The rule that chose `data_dir` (`--data-dir`, ANCHOR_DATA_DIR, an anchor.toml, the nearest
    `.anchor/`, the per-user default): what `anchor info` and `anchor chain status` say."""

    def trusted_block(self, chain_id: int, number: int) -> str | None:
        """The trusted hash of block `number` of `chain_id`, if one was given."""
        for chain, block, block_hash in self.trusted_blocks:
            if block == number and chain in (None, chain_id):
                return block_hash
        return None

    @classmethod
    def load(
        cls,
        data_dir: Path | None = None,
        rpc_url: str | list[str] | None = None,
        near: Path | None = None,
        env: Environment | None = None,
    ) -> Settings:
        """Options given on the command line, then ANCHOR_* variables (`env`, else the process
        environment and its `.env`: anchor.settings.model), then anchor.toml files
        (`anchor.settings.config`), then defaults. Several `rpc_url`s: writes use the first, reads ask them all.
        `near`: a path being verified; the data dir nearest to it comes first (anchor.settings.config)."""
        env = Environment.load() if env is None else env
        urls = [rpc_url] if isinstance(rpc_url, str) else list(rpc_url or [])
        settings, found = cls._resolve(data_dir, urls[0] if urls else None, near, env)
        blocked = _file_in_the_way(settings.data_dir)
        if blocked is not None:  # `config show` still shows it
            where = found["data_dir"]
            said = "" if blocked == settings.data_dir else f": {blocked} is a file"
            raise BadInput(
                f"data directory {where.value} (from {where.source}): not a directory (a file is in the"
                f" way{said}); name a folder, made if missing",
                detail={"path": str(settings.data_dir), "source": where.source},
            )
        settings = replace(settings, service_urls=env.service_urls, browser_rpc_urls=env.browser_rpc_url)
        sources = {url: "--rpc-url" for url in urls}
        if settings.rpc_url is not None and settings.rpc_url not in sources:
            sources[settings.rpc_url] = found["rpc_url"].source
        if len(urls) < 2 and env.read_rpcs:
            urls = list(env.read_rpcs)
            sources.update({url: "ANCHOR_READ_RPCS" for url in urls if url not in sources})
            settings = replace(settings, rpc_url=settings.rpc_url or urls[0])
        for url, source in sources.items():
            check_rpc_url(url, source)
        return replace(settings, read_rpcs=tuple(urls)) if len(urls) > 1 else settings

    from_env = load
    """The name `load` had before the settings were one model; kept for callers of the library."""

    @classmethod
    def _resolve(
        cls,
        data_dir: Path | None = None,
        rpc_url: str | None = None,
        near: Path | None = None,
        env: Environment | None = None,
    ) -> tuple[Settings, dict[str, Any]]:
        """The settings and, for each, its value and source (for `anchor config show`)."""
        from anchor.settings.config import Setting, resolve

        env = Environment.load() if env is None else env
        given = {
            "data_dir": Setting(None if data_dir is None else str(data_dir), "--data-dir"),
            "rpc_url": Setting(rpc_url, "--rpc-url"),
        }
        found = resolve(given, near, env)
        port = found["local_port"]
        if port.value is not None and (
            not (port.value.isascii() and port.value.isdigit()) or not 0 < int(port.value) < 65536
        ):
            raise BadInput(
                f"local_port={port.value!r} (from {port.source}): expected a port number",
                detail={"variable": "ANCHOR_LOCAL_PORT", "source": port.source},
            )
        settings = cls(
            data_dir=Path(found["data_dir"].value or ".anchor").resolve(),
            rpc_url=found["rpc_url"].value or None,
            keystore=Path(found["keystore"].value) if found["keystore"].value else None,
            local_port=int(port.value) if port.value else None,
            journal_url=found["journal_url"].value or None,
            env=env,
            data_dir_source=found["data_dir"].source,
        )
        return settings, found

    @property
    def proofs_dir(self) -> Path:
        return self.layout.proofs

    @property
    def layout(self) -> DataDir:
        """Every path under the data dir (anchor.settings.datadir)."""
        return DataDir(self.data_dir)


def check_rpc_url(url: str, source: str) -> None:
    """`BadInput` naming where an RPC URL came from (`--rpc-url`, ANCHOR_RPC_URL, anchor.toml...) when no
    request can be sent to it (anchor.settings.model.http_url_problem); shown without its path or query,
    where hosted providers keep the key."""
    problem = http_url_problem(url)
    if problem is not None:
        meant = meant_url(url)
        hint = f" (did you mean {meant}?)" if meant else ""
        where = {"field": "rpc_url"} if source.startswith("--") else {"variable": source}
        raise BadInput(f"{source} {endpoint_of(url)!r}: {problem}{hint}", detail=where)


def endpoint_of(url: str) -> str:
    """scheme://host:port only, how an RPC URL is shown anywhere: hosted providers carry an API key in
    the path or query."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed [: shown as typed
        return url.split("@")[-1][:200]
    if not parts.scheme or not parts.hostname:  # not a URL at all (`127.0.0.1:18545`): shown as typed
        return url.split("@")[-1][:200]
    port = parts.netloc.rpartition("@")[2].rpartition("]")[2].partition(":")[2]  # as typed: it may be out of range
    return f"{parts.scheme}://{parts.hostname}{f':{port}' if port else ''}"


def _file_in_the_way(path: Path) -> Path | None:
    """The file that stops `path` from being a folder (made if missing): `path` itself, or the nearest
    of its parents that exists, when that is not a folder. A command would otherwise fail deep inside
    with NotADirectoryError where it first opens something under it."""
    for candidate in (path, *path.parents):
        try:
            mode = candidate.stat().st_mode
        except FileNotFoundError:
            continue
        except NotADirectoryError:
            continue  # a parent further up is the file: met next
        return None if stat.S_ISDIR(mode) else candidate
    return None
