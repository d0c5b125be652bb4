"""The one reader of the process environment: every `ANCHOR_*` variable anchor reads, typed, with its
default.

Why one reader: a variable read in the module that uses it is a setting nobody can list, test or pass
on explicitly; here each has a type, a default and a docstring, `anchor config show` lists them all
(anchor.settings.variables), and a test holds that nothing outside anchor/settings reads `ANCHOR_*`.

Why properties read on each access, not one snapshot at start: a bad value of a variable a command
does not use must not stop that command (a typo in ANCHOR_CALENDAR_RATE says nothing to `anchor
verify`), and each read raises `BadInput` naming its variable (not a traceback from int()).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from pathlib import Path

from anchor.errors import BadInput

DAY_S = 24 * 3600

SECRET_VARIABLES = frozenset({
    "ANCHOR_PRIVATE_KEY", "ANCHOR_KEYSTORE_PASSWORD", "ANCHOR_RESEARCHER_KEY", "ANCHOR_RESEARCHER_KEYSTORE_PASSWORD",
    "ANCHOR_API_TOKENS", "ANCHOR_JOURNAL_URL", "ANCHOR_RECEIPT_KEY", "ANCHOR_SERVICE_TOKEN",
})  # fmt: skip
_SECRET_WORDS = ("PRIVATE_KEY", "PASSWORD", "SECRET", "MNEMONIC", "TOKEN")


@functools.lru_cache(maxsize=4096)
def is_secret(name: str) -> bool:
    """Whether an environment variable is one child_env never passes on (cached: every process the
    harness starts asks this of each of our variables)."""
    return name in SECRET_VARIABLES or any(word in name.upper() for word in _SECRET_WORDS)


class Env:
    """`Env()` reads `os.environ`; `Env(mapping)` reads a mapping (a child's environment, a test's)."""

    __slots__ = ("_environ",)

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self._environ = os.environ if environ is None else environ

    # -- how each kind is read ------------------------------------------------------------------------
    def text(self, name: str) -> str | None:
        """The raw value, None when unset or empty."""
        value = self._environ.get(name)
        return value if value else None

    def _number(self, name: str, default: float, kind: type[int] | type[float]) -> float:
        raw = self._environ.get(name)
        if raw is None or raw == "":
            return default
        try:
            value = kind(raw)
        except ValueError:
            raise BadInput(f"{name}={raw!r}: expected {'an integer' if kind is int else 'a number'}",
                           detail={"variable": name}) from None  # fmt: skip
        if value < 0:
            raise BadInput(f"{name}={raw!r}: must not be negative", detail={"variable": name})
        return value

    def integer(self, name: str, default: int) -> int:
        return int(self._number(name, default, int))

    def seconds(self, name: str, default: float) -> float:
        return float(self._number(name, default, float))

    def listed(self, name: str) -> tuple[str, ...]:
        """A comma-separated list, blanks dropped."""
        return tuple(part.strip() for part in (self._environ.get(name) or "").split(",") if part.strip())

    def path(self, name: str) -> Path | None:
        value = self.text(name)
        return None if value is None else Path(value)

    # -- reading and writing the chain ----------------------------------------------------------------
    @property
    def rpc_retries(self) -> int:
        """Retries of a failed JSON-RPC call (connection, 429, 5xx) before it is an error."""
        return self.integer("ANCHOR_RPC_RETRIES", 4)

    @property
    def rpc_backoff_s(self) -> float:
        return self.seconds("ANCHOR_RPC_BACKOFF_S", 0.1)

    @property
    def rpc_timeout_s(self) -> float:
        """Each JSON-RPC exchange ends by this deadline, however slowly the answer comes."""
        return self.seconds("ANCHOR_RPC_TIMEOUT_S", 10.0)

    @property
    def read_rpcs(self) -> tuple[str, ...]:
        return self.listed("ANCHOR_READ_RPCS")

    def log_window(self, default: int) -> int:
        """Blocks per eth_getLogs call (providers cap it)."""
        return max(1, self.integer("ANCHOR_LOG_WINDOW", default))

    @property
    def lease_s(self) -> float:
        return self.seconds("ANCHOR_LEASE_S", 30.0)

    @property
    def confirmations(self) -> int | None:
        """Confirmations before a transaction counts as final; None: the chain preset's."""
        return None if self.text("ANCHOR_CONFIRMATIONS") is None else self.integer("ANCHOR_CONFIRMATIONS", 0)

    @property
    def stuck_after_s(self) -> float:
        return self.seconds("ANCHOR_STUCK_AFTER_S", 30.0)

    @property
    def max_fee_wei(self) -> int:
        return self.integer("ANCHOR_MAX_FEE_WEI", 0)

    @property
    def quiet_blocks_s(self) -> float:
        return self.seconds("ANCHOR_QUIET_BLOCKS_S", 20.0)

    @property
    def signature_ttl_s(self) -> int:
        """How long a researcher's lineage signature stays valid (a week: a flush next week takes it)."""
        return self.integer("ANCHOR_SIGNATURE_TTL_S", 7 * DAY_S)

    # -- keys (secrets: read here, never shown, never given to a child) --------------------------------
    def key_source(self, key_var: str, keystore_var: str) -> tuple[str | None, Path | None, str | None]:
        """(a key in clear, a keystore path, its password) as configured under these names."""
        return self.text(key_var), self.path(keystore_var), self._environ.get(f"{keystore_var}_PASSWORD")

    @property
    def keystores(self) -> tuple[Path, ...]:
        """The keystore files configured (the signing key's, the researcher's)."""
        found = (self.path("ANCHOR_KEYSTORE"), self.path("ANCHOR_RESEARCHER_KEYSTORE"))
        return tuple(p for p in found if p is not None)

    def held_secrets(self) -> list[str]:
        """The secret ANCHOR_* variables set in this environment, and the keystores named."""
        held = sorted(k for k, v in self._environ.items() if v and k.startswith("ANCHOR_") and is_secret(k))
        return held + [name for name in ("ANCHOR_KEYSTORE", "ANCHOR_RESEARCHER_KEYSTORE") if self.text(name)]

    # -- a client of services ---------------------------------------------------------------------------
    @property
    def service_urls(self) -> tuple[str, ...]:
        """ANCHOR_SERVICE_URLS: stamp through these services (every writer; `--service` overrides)."""
        return self.listed("ANCHOR_SERVICE_URLS")

    @property
    def service_token(self) -> str:
        return (self._environ.get("ANCHOR_SERVICE_TOKEN") or "").strip()

    @property
    def upgrade_wait_s(self) -> float:
        """How long a run through services waits for their batch before it ends with pending proofs."""
        return self.seconds("ANCHOR_UPGRADE_WAIT_S", 60.0)

    @property
    def mlflow_max_artifact_bytes(self) -> int:
        """The largest single artifact `anchor mlflow stamp` downloads and hashes (a run holding a larger
        one is refused by name before anything is downloaded). Default 64 GiB."""
        return self.integer("ANCHOR_MLFLOW_MAX_ARTIFACT_BYTES", 64 << 30)

    # -- research and missions ----------------------------------------------------------------------------
    @property
    def attempt_limits(self) -> tuple[int, int, int, int]:
        """(memory, file size, run dir size in bytes, processes) an attempt may use."""
        return (
            self.integer("ANCHOR_ATTEMPT_MEMORY_BYTES", 8 << 30),
            self.integer("ANCHOR_ATTEMPT_FILE_BYTES", 1 << 30),
            self.integer("ANCHOR_ATTEMPT_RUN_DIR_BYTES", 2 << 30),
            self.integer("ANCHOR_ATTEMPT_PROCESSES", 512),
        )

    @property
    def image(self) -> str:
        """The image digest the command runs in (set in the rendered Jobs); empty on a host."""
        return self.text("ANCHOR_IMAGE") or ""

    @property
    def ledger_name(self) -> str | None:
        return self.text("ANCHOR_LEDGER_NAME")

    @property
    def snapshot_cache_bytes(self) -> int:
        return self.integer("ANCHOR_SNAPSHOT_CACHE_BYTES", 0)

    # -- the service ---------------------------------------------------------------------------------------
    @property
    def api_tokens(self) -> tuple[str, ...]:
        return self.listed("ANCHOR_API_TOKENS")

    @property
    def api_max_request_bytes(self) -> int:
        return self.integer("ANCHOR_API_MAX_REQUEST_BYTES", 64 << 20)

    @property
    def api_flush(self) -> bool:
        return self._environ.get("ANCHOR_API_FLUSH", "1") != "0"

    @property
    def api_flush_interval_s(self) -> float:
        return self.seconds("ANCHOR_API_FLUSH_INTERVAL_S", 0.0)

    @property
    def api_header_timeout_s(self) -> float:
        return self.seconds("ANCHOR_API_HEADER_TIMEOUT_S", 10.0)

    @property
    def api_body_timeout_s(self) -> float:
        return self.seconds("ANCHOR_API_BODY_TIMEOUT_S", 30.0) or 30.0

    @property
    def api_max_connections(self) -> int:
        return self.integer("ANCHOR_API_MAX_CONNECTIONS", 1024)

    @property
    def api_decode(self) -> tuple[int, int]:
        """(decodes queued in all, per client) before 503."""
        return self.integer("ANCHOR_API_DECODE_QUEUE", 8), self.integer("ANCHOR_API_DECODE_PER_CLIENT", 2)

    @property
    def calendar(self) -> bool:
        return self._environ.get("ANCHOR_CALENDAR", "0") == "1"

    @property
    def calendar_rate(self) -> float:
        return self.seconds("ANCHOR_CALENDAR_RATE", 20.0)

    @property
    def calendar_burst(self) -> float:
        return self.seconds("ANCHOR_CALENDAR_BURST", 40.0)

    @property
    def calendar_queue(self) -> int:
        return self.integer("ANCHOR_CALENDAR_QUEUE", 100_000)

    @property
    def receipt_key(self) -> str | None:
        return self.text("ANCHOR_RECEIPT_KEY")

    @property
    def service_name(self) -> str:
        return (self._environ.get("ANCHOR_SERVICE_NAME") or "").strip()

    # -- pages, links, the toolchain, debugging ----------------------------------------------------------
    @property
    def browser_rpc_urls(self) -> tuple[str, ...]:
        return self.listed("ANCHOR_BROWSER_RPC_URL")

    @property
    def explorer_url(self) -> str | None:
        value = self.text("ANCHOR_EXPLORER_URL")
        return None if value is None else value.rstrip("/")

    @property
    def project_root(self) -> Path | None:
        return self.path("ANCHOR_PROJECT_ROOT")

    @property
    def debug(self) -> bool:
        return self._environ.get("ANCHOR_DEBUG") == "1"

    @property
    def fault(self) -> str | None:
        """A fault to inject (tests/faults): never set outside the tests."""
        return self.text("ANCHOR_FAULT")


def env() -> Env:
    """The process environment, read through `Env`."""
    return Env()
