"""Where each setting comes from: a command-line option, an ANCHOR_* variable, the project's
anchor.toml (the current directory or the nearest parent that has one), the user's
($XDG_CONFIG_HOME or ~/.config)/anchor/anchor.toml, or the default; in that order.

The data directory is found as git finds `.git`: after the option, the variable and the project's
anchor.toml comes the nearest `.anchor/` folder walking up (from a path being verified, then from the
working directory), then the user's anchor.toml, then a per-user default ($XDG_DATA_HOME or
~/.local/share)/anchor. Why: a data dir relative to the working directory made the same command mean
two chains from two folders (a stamp in `outside/`, then `anchor verify outside/results` from its
parent, found no chain, and its advice led to an empty one).

Why a file at all: a project that always anchors on one chain, into one data directory, should not
need four variables in every shell. Why not secrets: a config file gets committed, copied and
shared; keys come from the environment or an encrypted keystore only, and a file that tries to hold
one is refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from anchor.errors import BadInput
from anchor.record import Value

if TYPE_CHECKING:
    from anchor.settings.model import Environment

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
URL_KEYS = frozenset({"rpc_url", "journal_url"})
"""Settings holding a URL, which may carry a password or token: refused in a file when they do."""


DATA_DIR_NAME = ".anchor"
"""The folder a project's data dir is found by, walking up, as git finds `.git`."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Setting(Value):
    value: str | None
    source: str


def nearest_data_dir(start: Path) -> Path | None:
    """The nearest `.anchor/` folder in `start` (a folder, or a file's folder) or one of its parents that
    belongs to this user. The path is made absolute without following links: a proof lies beside the name
    it was given. One of another user's is passed over, as git passes over another user's `.git`
    (safe.directory): a `/tmp/.anchor` someone else made must not hold our journal, chain and registry."""
    here = Path(os.path.abspath(start))
    if not here.is_dir():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / DATA_DIR_NAME
        try:
            if candidate.is_dir() and candidate.stat().st_uid == os.getuid():
                return candidate
        except OSError:
            continue
    return None


def user_data_dir() -> Path:
    """The per-user data dir, where no `.anchor/` is found: $XDG_DATA_HOME/anchor (an absolute
    XDG_DATA_HOME only, as the XDG spec says), else ~/.local/share/anchor."""
    base = os.environ.get("XDG_DATA_HOME") or ""
    return (Path(base) if os.path.isabs(base) else Path.home() / ".local" / "share") / "anchor"


def found_data_dir(project: dict[str, str], user: dict[str, str], near: Path | None = None) -> Setting:
    """The data dir when neither `--data-dir` nor ANCHOR_DATA_DIR names one, with the rule that chose it:
    the project's anchor.toml, the nearest `.anchor/` above `near` (a path being verified) or above the
    working directory, the user's anchor.toml, the per-user default. `project` and `user` are the files'
    settings (their "source" key names the file)."""
    if "data_dir" in project:
        return Setting(project["data_dir"], project["source"])
    starts = [] if near is None else [(near, f"the nearest {DATA_DIR_NAME}/ above {near}")]  # the local chain's
    for start, rule in [*starts, (Path.cwd(), f"the nearest {DATA_DIR_NAME}/ above the working directory")]:
        found = nearest_data_dir(start)
        if found is not None:
            return Setting(str(found), rule)
    if "data_dir" in user:
        return Setting(user["data_dir"], user["source"])
    return Setting(
        str(user_data_dir()),
        f"the per-user default: no {DATA_DIR_NAME}/ above the working directory"
        + ("" if near is None else f" or above {near}"),
    )


def project_file(start: Path | None = None) -> Path | None:
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / FILE_NAME).is_file():
            return folder / FILE_NAME
    return None


def cache_home() -> Path:
    """$XDG_CACHE_HOME, else ~/.cache: where a toolchain installed on first use and compiled builds live."""
    return Path(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache"))


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
            raise BadInput(
                f"{path}: '{key}' looks like a secret; keys come from the environment or a keystore,"
                " never from a config file",
                detail={"file": str(path), "field": key},
            )
        if key not in KEYS:
            from anchor.errors import did_you_mean

            raise BadInput(
                f"{path}: unknown setting '{key}'{did_you_mean(key, KEYS)} (known: {', '.join(KEYS)})",
                detail={"file": str(path), "field": key},
            )
    out = {}
    for key, value in data.items():
        if not isinstance(value, str | int) or isinstance(value, bool):
            raise BadInput(f"{path}: '{key}' must be a string or a number", detail={"file": str(path), "field": key})
        text = str(value)
        if key in URL_KEYS and _holds_a_credential(text):
            raise BadInput(
                f"{path}: '{key}' holds a password or token; a config file gets committed and shared: give the URL"
                f" with it in {KEYS[key]} (or libpq's ~/.pgpass for a journal)",
                detail={"file": str(path), "field": key},
            )
        out[key] = str((path.parent / text).resolve()) if key in PATH_KEYS else text
    return out


def _holds_a_credential(url: str) -> bool:
    """Whether `url` carries a password or token: what `redact_url` would hide for display."""
    from anchor.settings.model import redact_url

    return redact_url(url) != url


def resolve(
    given: dict[str, Setting] | None = None, near: Path | None = None, env: Environment | None = None
) -> dict[str, Setting]:
    """Every setting with its source. `given` holds what the command line set (source "--data-dir" …);
    `env`, the `ANCHOR_*` variables (anchor.settings.model; the process's when None); `near`, a path
    being verified: on the local chain, its nearest `.anchor/` comes before the working directory's."""
    from anchor.settings.model import Environment

    given = given or {}
    env = Environment.load() if env is None else env
    project, user = project_file(), user_file()
    files = {
        "project": {} if project is None else {**_read(project), "source": str(project)},
        "user": {**_read(user), "source": str(user)} if user.is_file() and user != project else {},
    }
    out = {}
    for key, variable in KEYS.items():
        if key in given and given[key].value is not None:
            out[key] = given[key]
        elif env.raw(variable):
            where = env.source(variable)  # the environment, or a .env file: named
            out[key] = Setting(str(env.raw(variable)), variable if where == "environment" else f"{variable} in {where}")
        elif key != "data_dir":
            found = next((values for values in files.values() if key in values), None)
            out[key] = Setting(found[key], found["source"]) if found else Setting(None, "default")
    if "data_dir" not in out:
        # a verified path's own data dir only locates the local chain it was stamped on (its port, its
        # record); on a chain named by URL it would be a trust root that came with the path: a `.anchor/`
        # beside a downloaded result, recording a lookalike registry, must not be what vouches for it
        local = not (out["rpc_url"].value or env.read_rpcs)
        out["data_dir"] = found_data_dir(files["project"], files["user"], near if local else None)
    return {key: out[key] for key in KEYS}
