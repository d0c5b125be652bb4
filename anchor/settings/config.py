"""Where each setting comes from: a command-line option, an ANCHOR_* variable, the project's
anchor.toml (the current directory or the nearest parent that has one), the user's
($XDG_CONFIG_HOME or ~/.config)/anchor/anchor.toml, or the default; in that order.

Why a file at all: a project that always anchors on one chain, into one data directory, should not
need four variables in every shell. Why not secrets: a config file gets committed, copied and
shared; keys come from the environment or an encrypted keystore only, and a file that tries to hold
one is refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from anchor.errors import BadInput

FILE_NAME = "anchor.toml"
KEYS = {
    "data_dir": "ANCHOR_DATA_DIR",
    "rpc_url": "ANCHOR_RPC_URL",
    "local_port": "ANCHOR_LOCAL_PORT",
    "keystore": "ANCHOR_KEYSTORE",
    "journal_url": "ANCHOR_JOURNAL_URL",
}
PATH_KEYS = frozenset({"data_dir", "keystore"})
"""Relative paths in a file are relative to that file's directory."""
SECRETS = frozenset({"private_key", "password", "keystore_password", "mnemonic", "api_tokens", "token"})


@dataclass(frozen=True, slots=True)
class Setting:
    value: str | None
    source: str


def project_file(start: Path | None = None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / FILE_NAME).is_file():
            return folder / FILE_NAME
    return None


def user_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "anchor" / FILE_NAME


def _read(path: Path) -> dict[str, str]:
    import tomllib  # only where an anchor.toml exists: most runs have none (a few ms of every verify)

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BadInput(f"{path}: not a readable TOML file ({exc})", detail={"file": str(path)}) from None
    for key in data:
        if key in SECRETS or "key" in key and key != "keystore":
            raise BadInput(f"{path}: '{key}' looks like a secret; keys come from the environment or a keystore,"
                           " never from a config file", detail={"file": str(path), "field": key})  # fmt: skip
        if key not in KEYS:
            raise BadInput(f"{path}: unknown setting '{key}' (known: {', '.join(KEYS)})",
                           detail={"file": str(path), "field": key})  # fmt: skip
    out = {}
    for key, value in data.items():
        if not isinstance(value, str | int) or isinstance(value, bool):
            raise BadInput(f"{path}: '{key}' must be a string or a number", detail={"file": str(path), "field": key})
        text = str(value)
        out[key] = str((path.parent / text).resolve()) if key in PATH_KEYS else text
    return out


def resolve(given: dict[str, Setting] | None = None) -> dict[str, Setting]:
    """Every setting with its source. `given` holds what the command line set (source "--data-dir" …)."""
    given = given or {}
    layers: list[tuple[str, dict[str, str]]] = []
    for path in (project_file(), user_file()):
        if path is not None and path.is_file():
            layers.append((str(path), _read(path)))
    out = {}
    for key, variable in KEYS.items():
        if key in given and given[key].value is not None:
            out[key] = given[key]
        elif os.environ.get(variable):
            out[key] = Setting(os.environ[variable], variable)
        else:
            found = next(((source, values[key]) for source, values in layers if key in values), None)
            out[key] = Setting(found[1], found[0]) if found else Setting(None, "default")
    return out
