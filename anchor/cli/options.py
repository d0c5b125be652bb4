"""Every option more than one command takes, declared once: a decorator each such command applies.

Grouped by what they are about: the chain and registry a command reads (the root's `--data-dir` and
`--rpc-url`, `--registry`, `--quorum`), what a verdict must show (`verify`, `mlflow verify`:
anchor.library.verifier.Policy), the anchoring services, and the cluster renders."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


class PathType(click.ParamType[Path, Any]):
    """A path, as `pathlib.Path`; an empty one refused (`anchor stamp "$UNSET"` would have stamped the
    working directory: `Path("")` is ".")."""

    name = "path"

    def get_metavar(self, param: click.Parameter, ctx: click.Context) -> str:
        return "PATH"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Path:
        if isinstance(value, Path):
            return value
        if value == "":
            self.fail("an empty path (an unset shell variable?); name a file or folder, or '.'", param, ctx)
        return Path(value)


PATH = PathType()


def both(*decorators: Callable[[F], F]) -> Callable[[F], F]:
    """Several option decorators applied as one, in the order they are listed (as `--help` shows them)."""

    def apply(function: F) -> F:
        for decorator in reversed(decorators):
            function = decorator(function)
        return function

    return apply


json_option = click.option("--json", "json", is_flag=True, help="Print one JSON object for scripts.")

# -- the chain and the registry a command reads -------------------------------------------------------------


def data_dir(**attrs: Any) -> click.Option:
    return click.Option(
        ["--data-dir", "data_dir"],
        type=PATH,
        help="Data directory (else ANCHOR_DATA_DIR, anchor.toml, the nearest .anchor/ above the working directory,"
        " ~/.local/share/anchor; `anchor info` says which).",
        **attrs,
    )


def rpc_url(**attrs: Any) -> click.Option:
    return click.Option(
        ["--rpc-url", "rpc_url"],
        multiple=True,
        help="EVM JSON-RPC URL (else ANCHOR_RPC_URL, anchor.toml, the local chain). Repeat it to read verdicts"
        " from several endpoints: verify and lookup then need a quorum of them to agree.",
        **attrs,
    )


ROOT_OPTIONS = (data_dir, rpc_url)
"""The root's options that every command also takes after its name (anchor.cli.commands.AnchorCommand)."""

registry_option = click.option(
    "--registry",
    "registry",
    multiple=True,
    help="Trust this registry address (default: the deployment recorded for the chain in the data dir); repeat it"
    " for a proof with anchors on several chains.",
)
quorum_option = click.option(
    "--quorum",
    "quorum",
    type=int,
    help="Endpoints (of --rpc-url given several times) that must agree; default a majority.",
)

# -- what a verdict must show: `verify` and `mlflow verify` (anchor.library.verifier.Policy) ---------------


def finality_word(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """The Policy's own reading of the word (one rule), told as a usage error before any proof is read or
    any chain is asked (it took 2.4 s to say so)."""
    if value is None:
        return None
    from anchor.errors import BadInput
    from anchor.library.verifier import Policy

    try:
        Policy(min_finality=value)
    except BadInput as exc:
        raise click.BadParameter(exc.message.removeprefix("min_finality "), ctx=ctx, param=param) from None
    return value


expect_submitter_option = click.option(
    "--expect-submitter", "expect_submitter", help="Require that this account anchored it (exit 10 otherwise)."
)
policy_options = both(
    click.option(
        "--require",
        "require",
        default="any",
        show_default=True,
        help="any, all, or N of the proof's anchors (services) must verify; more than it holds: exit 10.",
    ),
    expect_submitter_option,
    click.option(
        "--anchored-before", "anchored_before", help="Require anchoring before this ISO date/time, UTC unless given."
    ),
    click.option(
        "--min-finality",
        "min_finality",
        callback=finality_word,
        help="Require safe, finalized, or N confirmations (exit 11 otherwise).",
    ),
)
"""`--require`, `--expect-submitter`, `--anchored-before`, `--min-finality`: the Policy's fields."""

# -- what is hashed: `hash`, `stamp`, `journal submit` ------------------------------------------------------

exclude_option = click.option(
    "--exclude", "exclude", multiple=True, help="Leave out paths matching this gitignore-style pattern (repeatable)."
)
no_defaults_option = click.option(
    "--no-default-excludes", "no_default_excludes", is_flag=True, help="Hash .git/ too (left out by default)."
)


symlinks_option = click.option(
    "--symlinks",
    "symlinks",
    type=click.Choice(["refuse", "record", "follow-inside"]),
    default="refuse",
    show_default=True,
    help="Symbolic links: refuse (stop, naming the link), record (bind the link itself, never follow),"
    " follow-inside (hash what it points to, if inside PATH). Recorded in the manifest.",
)

# -- the anchoring services ---------------------------------------------------------------------------------

service_option = click.option(
    "--service",
    "service",
    multiple=True,
    help="Stamp through this anchoring service (repeatable; else ANCHOR_SERVICE_URLS): no key here, a pending"
    " proof with its signed receipt at once, `anchor upgrade` later. Token: ANCHOR_SERVICE_TOKEN.",
)
insecure_token_option = click.option(
    "--allow-insecure-token",
    "allow_insecure_token",
    is_flag=True,
    help="Send the service token over plain http to a host that is not this machine (it can be read on the way).",
)
sandbox_runtime_option = click.option(
    "--sandbox-runtime",
    "sandbox_runtime",
    default="auto",
    show_default=True,
    help="auto (gvisor where runsc runs here, else bubblewrap), gvisor, or bubblewrap (docs/research.md).",
)

# -- the cluster renders: `anchor render`, `research render`, `mission render` ------------------------------

chain_rpc_url_option = click.option(
    "--chain-rpc-url", "chain_rpc_url", help="The chain's RPC URL as the pods reach it (their ANCHOR_RPC_URL)."
)
service_url_option = click.option(
    "--service-url", "service_url", help="The anchoring service as the pods reach it: it holds the funded key."
)
"""For the rendered Jobs (research, mission): where their pods anchor (docs/calendar.md)."""
egress_cidr_option = click.option(
    "--egress-cidr",
    "egress_cidr",
    multiple=True,
    help="A CIDR the pods may reach besides DNS and the anchoring service (the snapshot's host, the git remote,"
    " the chain's RPC); repeatable. Their NetworkPolicy denies everything else.",
)
"""For the rendered Jobs' NetworkPolicy (anchor.anchoring.k8s.network_policy)."""
gone_keys_secret_option = click.option(
    "--keys-secret",
    "keys_secret",
    hidden=True,
    help="Gone: the funded key stays in the service (--service-url, --token-secret).",
)
"""`--keys-secret` of the renders of earlier releases: still parsed, to say what replaced it."""

# -- a model's fields as options: `anchor serve` (api.server.ServeOptions), `anchor index` (IndexOptions) -----


def options_of(model: type) -> Callable[[F], F]:
    """One option per field of the dataclass `model`, in its order: `--field-name` (or the field's `flag`),
    its type, default and bounds, and its `help`; the command hands what it was given to `model(**given)`.
    The model is the one declaration: a field added there is an option here."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(model)
    made = []
    for field in dataclasses.fields(model):
        kind, meta = hints[field.name], field.metadata
        leaf = next((arg for arg in typing.get_args(kind) if arg is not type(None)), kind)
        attrs: dict[str, Any] = {"help": meta["help"]}
        if typing.get_origin(kind) is tuple:  # tuple[str, ...]: repeatable
            attrs["multiple"] = True
        elif leaf is bool:
            attrs["is_flag"] = True
        else:
            attrs["default"], attrs["show_default"] = field.default, field.default is not None
            bounds = {k: meta[k] for k in ("min", "max") if k in meta}
            attrs["type"] = PATH if leaf is Path else click.IntRange(**bounds) if bounds else leaf
        flag = meta.get("flag", "--" + field.name.replace("_", "-"))
        made.append(click.option(flag, field.name, **attrs))
    return both(*made)
