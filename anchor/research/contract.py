"""The attempt contract: what the search may edit, how an attempt runs and how it is scored.

It is fixed before the first attempt (its digest is anchored: pre-registration) and every attempt
binds to it, so nobody can move the goalposts after seeing results.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from anchor.errors import BadInput, Tampered
from anchor.manifest.validation import validated
from anchor.research.ledger import LedgerRow


class AttemptContract(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    task: str = Field(min_length=1)
    command: str = Field(min_length=1, description="run with {run_dir}, {run_name}, {attempt_timeout_minutes}")
    editable: tuple[str, ...] = Field(min_length=1, description="repo-relative paths the search may change")
    metric: str = Field(min_length=1, max_length=128)
    metric_source: str = "jsonl:metrics.jsonl"
    mode: Literal["max", "min"]
    attempt_timeout_minutes: float = Field(gt=0, le=24 * 60)
    min_improvement: float = Field(default=0.0, ge=0)
    grace_seconds: float = Field(default=5.0, ge=0, le=300)
    replications: int = Field(default=0, ge=0, le=50, description="re-measurements of the final champion")
    holdout_command: str | None = Field(
        default=None, min_length=1, description="run once, by the harness, on the final champion"
    )
    pass_env: tuple[str, ...] = Field(
        default=(), description="environment variables given to attempts and the proposer as they are"
    )
    holdout_data: tuple[str, ...] = Field(
        default=(), description="paths (repo-relative or absolute) hidden from every attempt, shown to the holdout"
    )
    evaluator_files: tuple[str, ...] = Field(
        default=(), description="the evaluator's own files (repo-relative or absolute, never editable), digested"
    )
    evaluator_timeout_minutes: float = Field(default=10.0, gt=0, le=24 * 60)
    inputs: tuple[str, ...] = Field(
        default=(),
        max_length=256,
        description="data paths (repo-relative or absolute) the measurement reads: each record binds their digests",
    )
    lockfile: str | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="the repo-relative lockfile records bind (default: the interpreter's installed distributions)",
    )
    eval_examples: int | None = Field(
        default=None, ge=1, le=10**9, description="the evaluation set's size: the metric's sample size, pre-registered"
    )
    keep: Literal["improvement", "noise"] = Field(
        default="improvement",
        description="improvement: keep a candidate that beats the champion by more than min_improvement;"
        " noise: also by more than noise_sigmas x the baseline's re-measured spread (anchor.research.noise)",
    )
    noise_replications: int = Field(default=3, ge=2, le=50, description="keep = noise: re-measurements of the baseline")
    noise_sigmas: float = Field(default=2.0, gt=0, le=10, description="keep = noise: the threshold in spreads")
    holdout_examples: int | None = Field(
        default=None, ge=1, le=10**9, description="the holdout's size: its metric's sample size, pre-registered"
    )
    metric_kind: Literal["proportion", "mean", "macro_f1", "auc", "statistic"] | None = Field(
        default=None,
        description="proportion: the share of examples right (a Wilson interval fits it); mean: the mean of"
        " per-item scores; macro_f1 / auc: that statistic, recomputed from per-item (label, prediction or score)"
        " pairs and bootstrapped over items; statistic: any other (no interval over items). Undeclared: a"
        " proportion when the metric's name says accuracy, else a statistic (`proportion_by_name`)",
    )

    @field_validator("editable")
    @classmethod
    def _relative(cls, paths: tuple[str, ...]) -> tuple[str, ...]:
        for path in paths:
            parts = path.split("/")
            if path.startswith("/") or any(p in ("", ".", "..") for p in parts) or parts[0] == ".git":
                raise ValueError(f"{path!r} is not a relative path inside the repository")
        return paths

    @field_validator("pass_env")
    @classmethod
    def _passable(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        import re

        from anchor.settings.session import SECRET_VARIABLES

        for name in names:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,127}", name):
                raise ValueError(f"{name!r} is not an environment variable name")
            if name.startswith("ANCHOR_") or name in SECRET_VARIABLES:
                raise ValueError(f"{name}: Anchor's own settings and secrets never reach the code under measurement")
        return names

    @field_validator("holdout_data", "inputs")
    @classmethod
    def _hidden(cls, paths: tuple[str, ...]) -> tuple[str, ...]:
        for path in paths:
            parts = [p for p in path.split("/") if p]
            if not parts or any(p in (".", "..") for p in parts):
                raise ValueError(f"{path!r} is not a plain path (no '.' or '..')")
        return paths

    @field_validator("metric_source")
    @classmethod
    def _source(cls, source: str) -> str:
        from anchor.research.metrics import check_source

        return check_source(source)

    @field_validator("lockfile")
    @classmethod
    def _lockfile(cls, path: str | None) -> str | None:
        parts = (path or "x").split("/")
        if path is not None and (path.startswith("/") or any(p in ("", ".", "..") for p in parts)):
            raise ValueError(f"{path!r} is not a relative path inside the repository")
        return path

    def input_paths(self, repo: Path) -> tuple[tuple[str, Path], ...]:
        """Each declared input as (the contract's text, the path it names), sorted by the text."""
        return tuple((p, Path(p) if p.startswith("/") else repo / p) for p in sorted(set(self.inputs)))

    @model_validator(mode="after")
    def _evaluator_apart(self) -> AttemptContract:
        """The evaluator's files are outside what the search may edit: evaluator and evaluated apart."""
        for path in self.evaluator_files:
            parts = [p for p in path.split("/") if p]
            if not parts or any(p in (".", "..") for p in parts):
                raise ValueError(f"evaluator_files: {path!r} is not a plain path (no '.' or '..')")
            if not path.startswith("/"):
                for rel in self.editable:
                    if path == rel or path.startswith(rel.rstrip("/") + "/") or rel.startswith(path.rstrip("/") + "/"):
                        raise ValueError(f"evaluator_files: {path!r} is editable ({rel!r}): the search could edit it")
        return self

    def evaluator_command(self) -> str | None:
        kind, _, command = self.metric_source.partition(":")
        return command if kind == "evaluator" else None

    def is_proportion(self) -> bool:
        """Whether the metric is a share of examples right, the one figure a binomial (Wilson) interval
        describes: as declared in `metric_kind`, else judged from the metric's name (`proportion_by_name`)."""
        if self.metric_kind is not None:
            return self.metric_kind == "proportion"
        return proportion_by_name(self.metric)

    def hidden_data(self, repo: Path) -> tuple[Path, ...]:
        """The holdout data as paths: what the sandbox hides from attempts."""
        return tuple(Path(p) if p.startswith("/") else repo / p for p in self.holdout_data)

    def render(self, run_dir: Path, run_name: str, command: str | None = None) -> str:
        """The command (or `command`, e.g. the holdout's) with its three placeholders filled; other
        braces (JSON in a shell line) stay."""
        return (
            (command or self.command)
            .replace("{run_dir}", str(run_dir))
            .replace("{run_name}", run_name)
            .replace("{attempt_timeout_minutes}", f"{self.attempt_timeout_minutes:g}")
        )


PROPORTION_WORDS = frozenset({"accuracy", "acc", "top1", "top5", "error_rate", "err_rate"})
"""Words in a metric's name that say it is a share of examples right (or wrong): `val_accuracy`,
`top1_acc`, `error_rate`. Anything else undeclared (macro_f1, auc, loss, bleu) is not one."""


def proportion_by_name(metric: str) -> bool:
    """Whether an undeclared metric's name says it is a proportion (its words, split on `_`, `-`, `.`,
    `/`, or an `error_rate` whole): a guess a contract overrides with `metric_kind`."""
    import re

    name = metric.lower()
    words = set(re.split(r"[_\-./ ]+", name))
    return bool(words & PROPORTION_WORDS) or name.endswith("error_rate")


def load_contract(path: Path) -> tuple[AttemptContract, bytes]:
    """The contract and its bytes (what gets hashed and anchored). Raises `BadInput` naming the field."""
    from anchor.files import read_document

    text, raw = read_document(path, "attempt contract", {"field": "contract"})
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"{path}: not a TOML attempt contract ({exc})", detail={"field": "contract"}) from None
    return validated(AttemptContract, data, str(path)), raw


def load_pinned(work: Path, rows: Iterable[LedgerRow]) -> AttemptContract | None:
    """The search's pinned contract (`work/contract.toml`, None when there is none), only as the search was
    scored under it: every reader of the pinned terms (the audit, the noise replay, the champion records,
    the report's methods table) comes through here. The work dir is writable by whoever runs the host,
    and an `editable` widened after the search made a commit that touched the evaluator pass the audit.
    The pre-registration beside it (`contract.anchor.json`, anchored before any attempt ran) must
    rebuild the digest the rows carry and list these very bytes; else `Tampered` naming the file. Not
    closed: a search run with `--no-anchor` has no pre-registration, and with `contract.anchor.json`
    deleted too the copy is read unchecked (the rows' digest also binds the contract's original file
    name, which nothing records): docs/threat-model.md."""
    import blake3

    pinned = work / "contract.toml"
    if not pinned.exists():
        return None
    terms, raw = load_contract(pinned)
    scored = next((str(r["contract_digest"]) for r in rows if "contract_digest" in r), None)
    registered = work / "contract.anchor.json"
    if scored is None or not registered.is_file():
        return terms
    from anchor.proof.file import load_any

    tree = load_any(registered)._filetree()
    listed = tree.files[0] if tree is not None and len(tree.files) == 1 else None
    if tree is None or tree.digest.hex() != scored or listed is None:
        raise Tampered(
            f"{registered}: not the pre-registration of the contract this search was scored under ({scored[:16]}…)",
            detail={"file": str(registered), "field": "contract"},
        )
    if (listed.size, listed.blake3) != (len(raw), blake3.blake3(raw).hexdigest()):
        raise Tampered(
            f"{pinned}: edited since the search was scored under it (the pre-registered {listed.path} is"
            f" {listed.size} bytes, BLAKE3 {listed.blake3[:16]}…, anchored before any attempt ran): a search's"
            " terms do not change after it is scored",
            detail={"file": str(pinned), "field": "contract", "contract_digest": scored},
        )
    return terms
