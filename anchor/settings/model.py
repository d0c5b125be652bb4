"""The settings model: every `ANCHOR_*` variable anchor reads, described once (its variable, type,
default, who reads it and what it means), read once at the edge and passed down.

A door (the command line, the API's app factory, the library's public calls) builds one `Environment`
with `Environment.load()`: the process environment over the file ANCHOR_ENV_FILE names, if any, over
the defaults here (no file is read unless the environment names one: a `.env` in the working directory
came with the folder, and could name the signing key, the chain or the toolchain that runs); an option
given on the command line is the door's to apply over it (`--rpc-url`, `--data-dir`:
anchor.settings.session.Settings.load). Everything below the door is handed the
model (usually as `Settings.env`) and reads its typed attributes; nothing else in anchor/ or api/
reads the process environment. docs/configuration.md's table of variables is generated from the
fields below (`python -m anchor.settings.docs`) and a test fails when the two differ.

Why not pydantic-settings, which reads the same three sources: importing it costs about 200 ms (it
pulls in pydantic, asyncio and logging), more than `anchor verify FILE` takes in all, and the verify
path reads settings on every call. The contract is the same: one declaration per field, typed values,
env over the env file over default, a bad value refused with its variable's name (`BadInput`, exit 2), and
secrets held as `Secret` (pydantic's `SecretStr` interface: `get_secret_value()`), which no repr, log
line or exception shows.

Why each value is parsed on first use rather than all at load: a bad value of a variable a command
does not use must not stop that command (a typo in ANCHOR_CALENDAR_RATE says nothing to `anchor
verify`). The environment is still read once: the model holds the values it was loaded with.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Generic, TypeVar, cast, overload

from anchor.errors import BadInput

T = TypeVar("T")
DAY_S = 24 * 3600
PREFIX = "ANCHOR_"
DOTENV = ".env"
"""The file `Environment.load` reads beside the process environment, in the working directory."""


class Secret:
    """A secret value: shown as `**********` by str, repr and f-strings, so a settings object, a log
    line or an exception that holds one never carries it. `get_secret_value()` (pydantic's name) is the
    one way to the value, at the place that uses it (a signer, an Authorization header)."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('**********')"

    def __str__(self) -> str:
        return "**********"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __bool__(self) -> bool:
        return bool(self._value)


# -- how each kind of value is read: (variable, its text) -> value; a bad text raises BadInput naming it --
def text(variable: str, raw: str) -> str:
    return raw


def stripped(variable: str, raw: str) -> str:
    return raw.strip()


def url_base(variable: str, raw: str) -> str:
    """An http(s) URL that links are made under: `notaurl` became `notaurl/explorer/bundle/0x…`."""
    from urllib.parse import urlsplit

    parts = urlsplit(raw.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise BadInput(
            f"{variable}={raw!r}: expected an http(s) URL, such as http://127.0.0.1:8000",
            detail={"variable": variable},
        )
    return raw.strip().rstrip("/")


def path(variable: str, raw: str) -> Path:
    return Path(raw)


def url(variable: str, raw: str) -> str:
    return raw


def port(variable: str, raw: str) -> int:
    if not (raw.isascii() and raw.isdigit()) or not 0 < int(raw) < 65536:
        raise BadInput(f"{variable}={raw!r}: expected a port number", detail={"variable": variable})
    return int(raw)


def listed(variable: str, raw: str) -> tuple[str, ...]:
    """A comma-separated list, blanks dropped."""
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def secret(variable: str, raw: str) -> Secret:
    return Secret(raw)


def secret_stripped(variable: str, raw: str) -> Secret | None:
    return Secret(raw.strip()) if raw.strip() else None


def _number(variable: str, raw: str, kind: type[int] | type[float]) -> float:
    try:
        value = kind(raw)
    except ValueError:
        expected = "an integer" if kind is int else "a number"
        raise BadInput(f"{variable}={raw!r}: expected {expected}", detail={"variable": variable}) from None
    if value < 0:
        raise BadInput(f"{variable}={raw!r}: must not be negative", detail={"variable": variable})
    return value


def integer(variable: str, raw: str) -> int:
    return int(_number(variable, raw, int))


def seconds(variable: str, raw: str) -> float:
    return float(_number(variable, raw, float))


def seconds_nonzero(variable: str, raw: str) -> float:
    """Seconds, where 0 means the default (a body timeout of 0 would end every request at once)."""
    return seconds(variable, raw) or 30.0


def unless_zero(variable: str, raw: str) -> bool:
    return raw != "0"


def when_one(variable: str, raw: str) -> bool:
    return raw == "1"


class Var(Generic[T]):
    """One setting: read from `ANCHOR_<NAME>` by `parse`, else `default`. `read_by`, `meaning` and
    `shown` (the default as a person reads it) are its row in docs/configuration.md. `empty`: whether an
    empty value counts as set (a keystore's empty password does); otherwise empty is unset."""

    __slots__ = ("parse", "default", "read_by", "meaning", "shown", "empty", "secret", "name", "variable")

    def __init__(
        self,
        parse: Callable[[str, str], T],
        default: T,
        read_by: str,
        meaning: str,
        *,
        shown: str,
        empty: bool = False,
        secret: bool = False,
    ) -> None:
        self.parse, self.default, self.read_by, self.meaning, self.shown = parse, default, read_by, meaning, shown
        self.empty = empty
        self.secret = secret or parse in (globals()["secret"], secret_stripped)
        self.name = self.variable = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name, self.variable = name, PREFIX + name.upper()

    @overload
    def __get__(self, obj: None, owner: type) -> Var[T]: ...
    @overload
    def __get__(self, obj: Environment, owner: type) -> T: ...
    def __get__(self, obj: Environment | None, owner: type) -> Var[T] | T:
        if obj is None:
            return self
        return obj._value(self)


class Environment:
    """Every `ANCHOR_*` setting, typed: `Environment.load()` at a door, `Environment()` for the
    defaults, `Environment({"ANCHOR_…": "…"})` for given values (a test's, a child's)."""

    __slots__ = ("_raw", "_sources", "_parsed", "dotenv", "no_color")

    # -- where: the data dir, the chain, the journal
    data_dir: Var[Path | None] = Var(
        path,
        None,
        "CLI, API",
        "data directory: journal, deployments, proofs, the local chain (`--data-dir`)",
        shown=(
            "the nearest `.anchor/` above the working directory (or the verified path), else `~/.local/share/anchor` "
            '("Which data dir" above)'
        ),
    )
    rpc_url: Var[str | None] = Var(
        url,
        None,
        "CLI, API",
        "an EVM JSON-RPC URL (`--rpc-url`); unset: the embedded local chain",
        shown="unset",
    )
    read_rpcs: Var[tuple[str, ...]] = Var(
        listed,
        (),
        "verify, lookup",
        (
            "several JSON-RPC URLs, comma-separated (or `--rpc-url` repeated): a verdict needs a quorum of them to "
            "agree (`--quorum`, default a majority) and names any that disagreed"
        ),
        shown="unset: one endpoint",
    )
    local_port: Var[int | None] = Var(
        port,
        None,
        "CLI, API",
        "port for a *new* start of the local chain; a running one is found through its record in the data directory",
        shown="`18545`, then the recorded port",
    )
    journal_url: Var[Secret | None] = Var(
        secret,
        None,
        "journal, research, API",
        (
            "a `postgresql://` URL: the anchoring journal (schema `anchor_journal`) and the research ledger live in "
            "that database, shared by service replicas and researchers on many hosts (docs/deploy.md; "
            'docs/research.md, "The ledger"); a secret (it may carry a password): `config show` masks the password '
            "and no child process gets it"
        ),
        shown="unset: the journal is `<data dir>/journal.sqlite`, the ledger `<workdir>/ledger.jsonl`",
    )
    ledger_name: Var[str | None] = Var(
        text,
        None,
        "research",
        "which ledger in that database: the search's name",
        shown="the work dir's base name (`research` for the default work dir)",
    )
    snapshot_cache_bytes: Var[int] = Var(
        integer,
        0,
        "snapshot",
        (
            "size cap of the snapshot cache (`--max-bytes`): least recently used entries no running mission holds are"
            " evicted first (docs/missions.md)"
        ),
        shown="unset: no cap",
    )
    # -- keys (secrets: never shown, never given to a child)
    private_key: Var[Secret | None] = Var(
        secret,
        None,
        "writes",
        "hex private key that signs anchoring transactions (real chains)",
        shown="unset: anvil's public dev key on the local chain only",
    )
    keystore: Var[Path | None] = Var(
        path,
        None,
        "writes",
        "an eth-account keystore file, instead of `ANCHOR_PRIVATE_KEY`",
        shown="unset",
    )
    keystore_password: Var[Secret | None] = Var(
        secret,
        None,
        "writes",
        "its password",
        shown="unset",
        empty=True,
    )
    researcher_key: Var[Secret | None] = Var(
        secret,
        None,
        "research",
        (
            "the researcher's own key: signs each lineage record (EIP-712), which any relayer carries; the signer, "
            "not the payer, is the record's researcher"
        ),
        shown="unset: records are sent directly, the researcher is the signing key",
    )
    researcher_keystore: Var[Path | None] = Var(
        path,
        None,
        "research",
        "an eth-account keystore file, instead of `ANCHOR_RESEARCHER_KEY`",
        shown="unset",
    )
    researcher_keystore_password: Var[Secret | None] = Var(
        secret,
        None,
        "research",
        "its password",
        shown="unset",
        empty=True,
    )
    # -- research
    attempt_memory_bytes: Var[int] = Var(
        integer,
        8 << 30,
        "research",
        (
            "what an attempt's (and evaluator's) processes and the tmpfs pages they write may hold together: a memory"
            " cgroup; an OOM kill of any of its processes ends the attempt as failed with `limit: memory` in its "
            "ledger entry, whatever it exited with (RLIMIT_AS per process where no memory cgroup can be made: "
            "`memory_bound: rlimit`)"
        ),
        shown="`8589934592` (8 GiB)",
    )
    attempt_file_bytes: Var[int] = Var(
        integer,
        1 << 30,
        "research",
        "the largest file an attempt may write (RLIMIT_FSIZE): `limit: file_size`",
        shown="`1073741824` (1 GiB)",
    )
    attempt_run_dir_bytes: Var[int] = Var(
        integer,
        2 << 30,
        "research",
        (
            "what a sandboxed command may write (its run dir and its copies of the editable files): a tmpfs of its "
            "own of this many bytes and one inode per 4 KiB, bounded by the kernel (`limit: disk`, `limit: inodes`); "
            "where none can be mounted (a harness that is not root), regular files' bytes counted every half second "
            "(`limit: disk`, the entry says `quota: watched`)"
        ),
        shown="`2147483648` (2 GiB)",
    )
    attempt_processes: Var[int] = Var(
        integer,
        512,
        "research, missions",
        (
            "how many processes an attempt (or a mission's command) runs at once: a `pids` cgroup of its own, which "
            "holds under root (RLIMIT_NPROC does not); a fork past it is refused and the attempt fails with `limit: "
            "processes`. Without a writable `pids` cgroup a non-root harness uses RLIMIT_NPROC (bound plus the user's"
            " running processes); root without one has no process bound"
        ),
        shown="`512`",
    )
    signature_ttl_s: Var[int] = Var(
        integer,
        7 * DAY_S,
        "research",
        "how long a signed record stays valid (its EIP-712 deadline)",
        shown="`604800` (7 days)",
    )
    image: Var[str] = Var(
        text,
        "",
        "research",
        (
            "the image (`name@sha256:<64 hex>`) a search runs in, bound as `environment.image` in every record "
            "instead of the host's identity (anything else is ignored)"
        ),
        shown="unset: the host",
    )
    # -- reading and writing the chain
    log_window: Var[int | None] = Var(
        integer,
        None,
        "every log read",
        "blocks per `eth_getLogs` call, halved when the provider says the range is too large",
        shown="`5000`",
    )
    lease_s: Var[float] = Var(
        seconds,
        30.0,
        "journal (PostgreSQL)",
        (
            "seconds a replica's flush lease lasts without renewal; a replica that stalls longer loses it to another "
            "and cannot commit afterwards (its fencing token is stale)"
        ),
        shown="30",
    )
    confirmations: Var[int | None] = Var(
        integer,
        None,
        "journal",
        "blocks an anchoring must be deep before it is confirmed",
        shown="per chain: 0 local, 5 Base Sepolia, 10 Base, 12 others",
    )
    stuck_after_s: Var[float] = Var(
        seconds,
        30.0,
        "journal",
        "seconds without a receipt before a fee-bumped replacement",
        shown="`30`",
    )
    quiet_blocks_s: Var[float] = Var(
        seconds,
        20.0,
        "journal",
        "seconds without a new block while a transaction waits before `stamp`/`flush` say so (with what to do)",
        shown="`20`",
    )
    max_fee_wei: Var[int] = Var(
        integer,
        0,
        "journal",
        "never bump the max fee per gas beyond this",
        shown="unset (no cap)",
    )
    rpc_retries: Var[int] = Var(
        integer,
        4,
        "every RPC read",
        (
            "retries after a failed RPC call (jittered backoff); a host name that does not exist is not retried: "
            "`could not resolve HOST: offline? check --rpc-url` at once"
        ),
        shown="`4`",
    )
    rpc_backoff_s: Var[float] = Var(
        seconds,
        0.1,
        "every RPC read",
        "first backoff, doubled each retry",
        shown="`0.1`",
    )
    rpc_timeout_s: Var[float] = Var(
        seconds,
        10.0,
        "every RPC read",
        "timeout of one RPC call",
        shown="`10`",
    )
    # -- pages, links, the toolchain
    browser_rpc_url: Var[tuple[str, ...]] = Var(
        listed,
        (),
        "API",
        (
            "the RPC URL the `/verify` page gives visitors' browsers (`anchor serve --browser-rpc-url`), or several, "
            "comma-separated: the page then reads each and needs a majority to agree, as `anchor verify` does with "
            "several `--rpc-url`; a URL with a path, query or credentials is never put in a page"
        ),
        shown=(
            "unset: the service's read endpoints (`ANCHOR_READ_RPCS`), else its own RPC URL, when they have none of "
            "those"
        ),
    )
    explorer_url: Var[str | None] = Var(
        url_base,
        None,
        "links",
        "base URL of the built-in explorer pages on the local chain",
        shown="`http://127.0.0.1:8000`",
    )
    env_file: Var[Path | None] = Var(
        path,
        None,
        "every command",
        (
            "a file of `ANCHOR_*=value` lines to read below the process environment (`.env` syntax); read from"
            " the process environment only. None by default: a `.env` in the working directory is anyone's who"
            " handed you the folder, and it could name the key that signs, the chain that answers, or the"
            " toolchain that runs"
        ),
        shown="unset: no file is read",
    )
    project_root: Var[Path | None] = Var(
        path,
        None,
        "toolchain",
        "where `node_modules/` (anvil, solcjs) and `tools/solc` live",
        shown="the source checkout",
    )
    # -- the service
    api_tokens: Var[tuple[str, ...]] = Var(
        listed,
        (),
        "API",
        (
            "accepted bearer tokens, as `sha256:<hex>` hashes only, comma-separated; a token may be scoped: "
            "`sha256:<hex>/submit` (manifests, bundles, missions), `/relay` (signed lineage records), `/admin` (all),"
            " joined with `+`"
        ),
        shown="unset (writes refused); a hash without scopes has them all",
        secret=True,
    )
    api_max_request_bytes: Var[int] = Var(
        integer,
        64 << 20,
        "API",
        "cap on every request body, counted as it streams",
        shown="`67108864` (64 MiB)",
    )
    api_flush: Var[bool] = Var(
        unless_zero,
        True,
        "API",
        "`0`: do not anchor right after each submission (flush with `anchor journal flush`)",
        shown="`1`",
    )
    api_header_timeout_s: Var[float] = Var(
        seconds,
        10.0,
        "API (`anchor serve`)",
        "seconds a connection may take to send a request's headers before it is closed (api/protocol.py)",
        shown="`10`",
    )
    api_body_timeout_s: Var[float] = Var(
        seconds_nonzero,
        30.0,
        "API",
        "seconds a request body may go without a byte before the request ends with 408",
        shown="`30`",
    )
    api_max_connections: Var[int] = Var(
        integer,
        1024,
        "API (`anchor serve`)",
        (
            "open connections; past it the one waiting longest for its headers is closed first, else the one whose "
            "body has gone longest without a byte (kept below the open-file limit, which `serve` raises to its hard "
            "limit)"
        ),
        shown="`1024`",
    )
    api_decode_queue: Var[int] = Var(
        integer,
        8,
        "API",
        "uploads (proofs, archives) waiting for or in the decoder process; past it, 429 with Retry-After at once",
        shown="`8`",
    )
    api_decode_per_client: Var[int] = Var(
        integer,
        2,
        "API",
        "of those, from one client address",
        shown="`2`",
    )
    api_flush_interval_s: Var[float] = Var(
        seconds,
        0.0,
        "API",
        (
            "after a submission, gather more for this long before flushing: more items per transaction, and the wait "
            "a pending receipt has"
        ),
        shown="`0`",
    )
    receipt_key: Var[Secret | None] = Var(
        secret,
        None,
        "API",
        "the key that signs receipts (docs/calendar.md); refused if it is the funded key",
        shown="a key made at first use in `<data dir>/receipt.key` (0600)",
    )
    service_name: Var[str] = Var(
        stripped,
        "",
        "API",
        "the name the service signs its receipts under",
        shown="the public URL `anchor serve` recorded",
    )
    calendar: Var[bool] = Var(
        when_one,
        False,
        "API",
        "`1`: a public calendar, `POST /v1/calendar` without a token (`anchor serve --calendar`)",
        shown="`0`",
    )
    calendar_rate: Var[float] = Var(
        seconds,
        20.0,
        "API",
        "calendar submissions a second per client address (a token bucket)",
        shown="`20`",
    )
    calendar_burst: Var[float] = Var(
        seconds,
        40.0,
        "API",
        "the bucket's size",
        shown="`40`",
    )
    calendar_queue: Var[int] = Var(
        integer,
        100_000,
        "API",
        "items waiting for a batch past which the calendar answers 429",
        shown="`100000`",
    )
    # -- a client of services
    service_urls: Var[tuple[str, ...]] = Var(
        listed,
        (),
        "client",
        (
            "the anchoring services every writer (`stamp`, `bundle --anchor`, `upgrade`, `research run`, `mission "
            "run`, `journal submit`, `anchor.stamp`) uses when no `--service` is given, comma-separated: read once, "
            "by `Stamper.from_settings`"
        ),
        shown="unset (stamp with the local key)",
    )
    upgrade_wait_s: Var[float] = Var(
        seconds,
        60.0,
        "client",
        (
            "how long `research run --service` and `mission run --service` wait at their end for the services' next "
            "batch, to complete their proofs"
        ),
        shown="`60`",
    )
    mlflow_max_artifact_bytes: Var[int] = Var(
        integer,
        64 << 30,
        "client",
        (
            "the largest single artifact `anchor mlflow stamp` and `verify` download and hash; a run holding a larger"
            " one is refused by name (exit 2) before anything is downloaded (docs/mlflow.md)"
        ),
        shown="`68719476736` (64 GiB)",
    )
    service_token: Var[Secret | None] = Var(
        secret_stripped,
        None,
        "client",
        "the token for them: one token, or `URL=TOKEN` pairs separated by commas (never on the command line)",
        shown="unset (public calendars only)",
    )
    # -- debugging and tests
    debug: Var[bool] = Var(
        when_one,
        False,
        "CLI",
        "`1`: show the traceback of an unexpected error",
        shown="unset",
    )
    fault: Var[str | None] = Var(
        text,
        None,
        "tests",
        (
            "`seam:n` crashes (SIGKILL) at a named seam (`tests/faults`); `seam:n:int` sends Ctrl-C there instead, "
            "`seam:n:int-in-del` inside a finalizer (tests/cli/test_interrupts.py); never set it in production"
        ),
        shown="unset",
    )

    def __init__(
        self,
        values: Mapping[str, str] | None = None,
        sources: Mapping[str, str] | None = None,
        dotenv: Path | None = None,
    ) -> None:
        self._raw = {k: v for k, v in (values or {}).items() if k.startswith(PREFIX)}
        self._sources = dict(sources or {})
        self._parsed: dict[str, object] = {}
        self.dotenv = dotenv
        """The `.env` file these values were read from in part, if any."""
        self.no_color = False
        """NO_COLOR (no-color.org) was set: the command line prints no colour."""

    @classmethod
    def load(cls, environ: Mapping[str, str] | None = None, dotenv: Path | None = None) -> Environment:
        """The settings of this process: `environ` (the process environment) over the `.env` file in the
        working directory (or `dotenv`) over the defaults. The one read of the environment a door makes."""
        environ = os.environ if environ is None else environ
        named = environ.get(PREFIX + "ENV_FILE", "")
        file = dotenv if dotenv is not None else Path(named) if named else None
        values, sources = {}, {}
        if file is not None and named and dotenv is None and not file.is_file():
            raise BadInput(f"ANCHOR_ENV_FILE={named!r}: no such file", detail={"variable": PREFIX + "ENV_FILE"})
        if file is not None and file.is_file():
            for name, value in read_dotenv(file).items():
                if name != PREFIX + "ENV_FILE":  # which file is read is the process environment's word alone
                    values[name], sources[name] = value, str(file.resolve())
        for name, value in environ.items():
            if name.startswith(PREFIX):
                values[name], sources[name] = value, "environment"
        from_file = file is not None and any(s != "environment" for s in sources.values())
        loaded = cls(values, sources, file.resolve() if from_file and file is not None else None)
        loaded.no_color = "NO_COLOR" in environ
        return loaded

    @classmethod
    def _fields(cls) -> Iterator[Var[Any]]:
        """Every setting, in the order of the table in docs/configuration.md."""
        for value in vars(cls).values():
            if isinstance(value, Var):
                yield value

    @classmethod
    def variables(cls) -> tuple[str, ...]:
        return tuple(field.variable for field in cls._fields())

    def _value(self, field: Var[T]) -> T:
        """`field`'s value here (parsed once, on first use): its default when unset."""
        if field.name in self._parsed:
            return cast(T, self._parsed[field.name])
        raw = self._raw.get(field.variable)
        parsed = field.default if raw is None or raw == "" and not field.empty else field.parse(field.variable, raw)
        self._parsed[field.name] = parsed
        return parsed

    def raw(self, variable: str) -> str | None:
        """The text a variable was given (None: unset), for `anchor config show`, which shows a secret's
        as set or unset only (anchor.settings.variables)."""
        return self._raw.get(variable)

    def source(self, variable: str) -> str:
        """Where a variable's value came from: "environment", a `.env` file's path, or "default"."""
        return self._sources.get(variable, "environment" if variable in self._raw else "default")

    def unknown(self) -> list[str]:
        """The `ANCHOR_*` names given that no setting has (typos), sorted."""
        known = set(self.variables()) | set(GIVEN_TO_CHILDREN)
        return sorted(name for name in self._raw if name not in known)

    def replace(self, **values: str) -> Environment:
        """A copy with some variables given other values (by field name)."""
        raw = {**self._raw, **{PREFIX + name.upper(): value for name, value in values.items()}}
        return Environment(raw, self._sources, self.dotenv)

    def __repr__(self) -> str:
        shown = {k: "**********" if is_secret(k) else v for k, v in sorted(self._raw.items())}
        return f"Environment({shown})"

    # -- derived --------------------------------------------------------------------------------------
    @property
    def attempt_limits(self) -> tuple[int, int, int, int]:
        """(memory, file size, run dir size in bytes, processes) an attempt may use."""
        return self.attempt_memory_bytes, self.attempt_file_bytes, self.attempt_run_dir_bytes, self.attempt_processes

    @property
    def keystores(self) -> tuple[Path, ...]:
        """The keystore files configured (the signing key's, the researcher's)."""
        return tuple(p for p in (self.keystore, self.researcher_keystore) if p is not None)

    def _key_source(self, key: str) -> tuple[Secret | None, Path | None, Secret | None, str, str]:
        """A signing key's (key in clear, keystore path, its password, the key's variable, the keystore
        password's variable) as configured: `key` is "private_key" or "researcher_key"."""
        keystore = "keystore" if key == "private_key" else "researcher_keystore"
        found = (getattr(self, key), getattr(self, keystore), getattr(self, f"{keystore}_password"))
        return (*found, PREFIX + key.upper(), PREFIX + f"{keystore}_password".upper())

    def held_secrets(self) -> list[str]:
        """The secret variables set here (the environment or a `.env` file), and the keystores named."""
        held = sorted(k for k, v in self._raw.items() if v and is_secret(k))
        return held + [
            f.variable for f in (Environment.keystore, Environment.researcher_keystore) if self.raw(f.variable)
        ]

    @property
    def secret_files(self) -> tuple[Path, ...]:
        """Files that hold a secret of ours, for a sandbox to hide: the keystores, and a `.env` file
        that set a secret variable."""
        dotenv_secret = self.dotenv is not None and any(
            is_secret(k) and s != "environment" for k, s in self._sources.items()
        )
        return self.keystores + ((self.dotenv,) if dotenv_secret and self.dotenv else ())


GIVEN_TO_CHILDREN = ("ANCHOR_EDITABLE", "ANCHOR_ATTEMPT")
"""Set by the research harness for an external proposer; never read by anchor itself."""

_SECRET_WORDS = ("PRIVATE_KEY", "PASSWORD", "SECRET", "MNEMONIC", "TOKEN")
SECRET_VARIABLES = frozenset(field.variable for field in Environment._fields() if field.secret)


def is_secret(name: str) -> bool:
    """Whether an environment variable is one no child process gets and no listing shows: a secret
    setting, or any name that says it is one (a caller's own `…_TOKEN`)."""
    return name in SECRET_VARIABLES or any(word in name.upper() for word in _SECRET_WORDS)


def fault_spec() -> str | None:
    """ANCHOR_FAULT as this process has it now: the one setting read where it is used, not passed down.
    Why: it is a test seam (tests/faults) that must reach every process anchor starts and every layer,
    the journal's store included, which reads no other setting; it is never set in production."""
    return os.environ.get(Environment.fault.variable) or None


def read_dotenv(file: Path) -> dict[str, str]:
    """The `ANCHOR_*` assignments of a `.env` file (`NAME=value`, an optional `export `, `#` comments,
    values in single or double quotes or bare). Every other line is the file's other users' business and
    is not read at all (another tool's multi-line quoted value once stopped every anchor command); a line
    that names an `ANCHOR_*` variable but is no assignment is refused with the file and line, as a
    malformed anchor.toml is."""
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{file}: not a readable .env file ({type(exc).__name__})", detail={"file": str(file)}) from None
    found = {}
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, eq, value = line.removeprefix("export ").partition("=")
        name, value = name.strip(), value.strip()
        if not name.startswith(PREFIX):
            continue
        if not eq or not name.replace("_", "").isalnum():
            raise BadInput(f"{file}:{number}: expected NAME=value", detail={"file": str(file), "line": number})
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        if name.startswith(PREFIX):
            found[name] = value
    return found


def http_url_problem(url: str) -> str | None:
    """What stops `url` from being an http(s) URL a request can be sent to, in words; None when nothing
    does. One rule for every URL we send to (RPC endpoints, anchoring services): no space or control
    character anywhere (a stray one from pasting went on to "could not resolve" or five retries), http or
    https, a host, and a port from 1 to 65535 when there is one (urllib raised a bare ValueError on
    reading one out of range, which surfaced as an internal error)."""
    from urllib.parse import urlsplit

    for at, char in enumerate(url):
        if char.isspace() or not char.isprintable():
            return f"a space or control character at position {at + 1} (a stray one from pasting?)"
    try:
        parts = urlsplit(url)
    except ValueError:  # an unclosed [ of an IPv6 address
        return "expected an http(s) URL, http(s)://host[:port][/path] (an IPv6 host is written [::1])"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "expected an http(s) URL, http(s)://host[:port][/path]"
    after_host = url.find("/", url.find("://") + 3)
    if after_host >= 0 and not url[after_host:].isascii():
        at = after_host + next(i for i, c in enumerate(url[after_host:]) if not c.isascii())
        return f"a character that is not ASCII at position {at + 1}, in the path (percent-encode it)"
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is not None and not 0 < port < 65536:
        return "the port must be a number from 1 to 65535"
    return None


def meant_url(url: str) -> str | None:
    """`http://URL` when only the scheme is missing from `url` (`127.0.0.1:8545`) and that makes a URL
    `http_url_problem` takes; else None: what a refusal suggests."""
    meant = f"http://{url.strip()}"
    return meant if "://" not in url and http_url_problem(meant) is None else None


def redact_url(url: str) -> str:
    """`url` with any password replaced by ***, for display: the userinfo's, and a query parameter's whose
    name says it is one (libpq takes `?password=` and `sslpassword=` as well as `user:pass@`)."""
    import re

    shown = re.sub(r"^([a-z][a-z0-9+.-]*://[^/@:]*:)[^/@]*@", r"\1***@", url)
    return re.sub(r"([?&][^=&#]*(?:pass|token|key|secret|auth|sig)[^=&#]*=)[^&#]*", r"\1***", shown, flags=re.I)
