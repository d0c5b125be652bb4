"""The champion manifest: a search's final numbers, measured by the harness after the search stopped.

Why: the champion's metric is the best of N noisy measurements, so it overstates what the change is
worth (the more trials, the more it does). The honest figures are the ones taken after selection,
which the search could not optimise against: `replications` re-measure the champion with the
contract's own command (their mean and spread), and `holdout` runs the contract's `holdout_command`
once. The manifest binds them to the champion's commit and attempt, to the number of trials it was
selected from and to the ledger head at selection, so that "0.93 after 200 trials, 0.91 on
replication, 0.88 on the holdout" is one anchored record, not three claims.

`mean` and `stdev` (sample, n - 1) are derived from the completed replications and checked on
decoding: a manifest whose statistics do not follow from its values is refused.

Version 2 adds what the figure's honesty needs beside it: `team_trials` (every researcher's measured
attempts in the shared ledger, not one researcher's), the evaluation set's size `examples` with its
source, a 95% `interval` for the champion's metric with its method (anchor.research.uncertainty), and
the `environment` the final runs ran in (anchor.manifest.environment).
A Wilson interval is recomputed on decoding; a bootstrap one by `research verify`, from the bound run
dir of the champion's attempt.

Version 3 gives the holdout what version 2 gave the selection metric: its sample size
`holdout_examples` with its source, a 95% `holdout_interval`, and `holdout_data`, the file-tree
digest of each path the contract hides from attempts and shows to the holdout: "held out on which
data" is a digest anyone can compare with the files, not a sentence.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from anchor.manifest.attempt import COMMIT, HEX64, Metric, canonical_decimal
from anchor.manifest.environment import Environment
from anchor.manifest.identity import HasIdentity

MAX_REPLICATIONS = 50


class Run(BaseModel):
    """One measurement after selection: its status, the metric the harness read, its bound run dir."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    status: Literal["completed", "failed", "timed_out"]
    metric: Metric | None = None
    evidence: str = Field(pattern=HEX64)

    @model_validator(mode="after")
    def _consistent(self) -> Run:
        if (self.status == "completed") != (self.metric is not None):
            raise ValueError("a completed run has a metric, and only a completed run")
        return self


def statistics(values: list[str]) -> tuple[str | None, str | None]:
    """(mean, sample standard deviation) of canonical decimals, each canonical; None where undefined."""
    if not values:
        return None, None
    with localcontext(prec=100):
        numbers = [Decimal(v) for v in values]
        mean = sum(numbers, Decimal(0)) / len(numbers)
        if len(numbers) < 2:
            return canonical_decimal(mean), None
        variance = sum(((x - mean) ** 2 for x in numbers), Decimal(0)) / (len(numbers) - 1)
        return canonical_decimal(mean), canonical_decimal(variance.sqrt())


Z = 1.9599639845400536
"""Φ⁻¹(0.975), as docs/manifest.md gives it (`statistics.NormalDist().inv_cdf(0.975)`; a constant here:
decoding a manifest imports nothing it does not need)."""
PLACES = 6
"""Interval bounds are rounded to 6 decimal places: finer than any evaluation set here resolves."""


def bound(value: float) -> str:
    """An interval bound as the record carries it: rounded to PLACES, then canonical."""
    return canonical_decimal(f"{value:.{PLACES}f}", "interval")


def wilson(p: float, n: int) -> tuple[str, str]:
    """The 95% Wilson score interval of a proportion `p` observed on `n` examples, bounds rounded
    (docs/manifest.md gives the formula; decoders recompute it)."""
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z / (1 + Z * Z / n) * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n))
    return bound(max(0.0, centre - half)), bound(min(1.0, centre + half))


class Interval(BaseModel):
    """A 95% interval of the champion's metric, bounds as canonical decimals (6 places)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    method: Literal["wilson", "bootstrap"]
    level: Literal["0.95"] = "0.95"
    low: str
    high: str

    @model_validator(mode="after")
    def _ordered(self) -> Interval:
        if Decimal(self.low) > Decimal(self.high):
            raise ValueError("interval: low exceeds high")
        return self


class HeldOutData(BaseModel):
    """One of the contract's `holdout_data` paths (as the contract names it) and its file-tree digest."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    path: str = Field(min_length=1, max_length=4096)
    digest: str = Field(pattern=HEX64)


def check_wilson(interval: Interval | None, value: str, examples: int | None, what: str) -> None:
    """A Wilson interval follows from its value and n (recomputed here): else `ValueError` naming it."""
    if interval is None or interval.method != "wilson":
        return
    p = Decimal(value)
    if examples is None or not 0 <= p <= 1:
        raise ValueError(f"{what}: a Wilson interval needs examples and a metric in [0, 1]")
    if (interval.low, interval.high) != wilson(float(p), examples):
        raise ValueError(f"{what}: the Wilson bounds are {wilson(float(p), examples)}")


class ChampionManifest(HasIdentity, BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    kind: Literal["champion"] = "champion"
    version: Literal[1, 2, 3] = 3
    researcher: str = Field(min_length=1, max_length=128)
    contract_digest: str = Field(pattern=HEX64)
    commit: str = Field(pattern=COMMIT)
    attempt_digest: str = Field(pattern=HEX64)
    """The champion's attempt manifest (the measurement it was selected on)."""
    metric: Metric
    """The metric it was selected on."""
    trials: int = Field(ge=1, lt=2**53)
    """The researcher's measured attempts when the search stopped: what the champion was selected from."""
    ledger_head: str = Field(pattern=HEX64)
    ledger_length: int = Field(ge=1, lt=2**53)
    replications: tuple[Run, ...] = Field(default=(), max_length=MAX_REPLICATIONS)
    mean: str | None = None
    stdev: str | None = None
    holdout: Run | None = None
    team_trials: int | None = Field(default=None, ge=1, lt=2**53)
    """Version 2: every researcher's measured attempts in the ledger when the search stopped."""
    examples: int | None = Field(default=None, ge=1, le=10**9)
    """Version 2: the evaluation set's size behind `metric`, when known."""
    examples_source: Literal["contract", "evaluator", "attempt"] | None = None
    interval: Interval | None = None
    """Version 2: a 95% interval of `metric`, when one can be given."""
    environment: Environment | None = None
    """Version 2, required: where the replications and the holdout ran (anchor.manifest.environment)."""
    holdout_examples: int | None = Field(default=None, ge=1, le=10**9)
    """Version 3: the holdout's size, when known (a completed holdout only)."""
    holdout_examples_source: Literal["contract", "evaluator", "attempt"] | None = None
    holdout_interval: Interval | None = None
    """Version 3: a 95% interval of the holdout's metric, when one can be given."""
    holdout_data: tuple[HeldOutData, ...] = Field(default=(), max_length=64)
    """Version 3: the contract's holdout data, each path with its file-tree digest, in the contract's order."""

    @model_validator(mode="after")
    def _consistent(self) -> ChampionManifest:
        if self.trials > self.ledger_length:
            raise ValueError(f"trials ({self.trials}) exceed the ledger's length ({self.ledger_length})")
        added = (self.team_trials, self.examples, self.examples_source, self.interval, self.environment)
        if self.version == 1 and any(v is not None for v in added):
            raise ValueError("team_trials, examples, examples_source, interval and environment are version 2 fields")
        held = (self.holdout_examples, self.holdout_examples_source, self.holdout_interval)
        if self.version < 3 and (any(v is not None for v in held) or self.holdout_data):
            raise ValueError("holdout_examples, holdout_examples_source, holdout_interval, holdout_data: version 3")
        if self.version == 3:
            if (self.holdout_examples is None) != (self.holdout_examples_source is None):
                raise ValueError("holdout_examples and holdout_examples_source come together")
            measured = self.holdout is not None and self.holdout.metric is not None
            if not measured and (self.holdout_examples is not None or self.holdout_interval is not None):
                raise ValueError("holdout_examples and holdout_interval describe a completed holdout only")
            if self.holdout_data and self.holdout is None:
                raise ValueError("holdout_data: only with a holdout")
            if measured:
                assert self.holdout is not None and self.holdout.metric is not None
                check_wilson(
                    self.holdout_interval, self.holdout.metric.value, self.holdout_examples, "holdout_interval"
                )
        if self.version >= 2:
            if self.team_trials is None or not self.trials <= self.team_trials <= self.ledger_length:
                raise ValueError("team_trials: required, between trials and ledger_length")
            if self.environment is None:
                raise ValueError("environment: required in version 2")
            if (self.examples is None) != (self.examples_source is None):
                raise ValueError("examples and examples_source come together")
            check_wilson(self.interval, self.metric.value, self.examples, "interval")
        for run in (*self.replications, *([self.holdout] if self.holdout else [])):
            if run.metric is not None and (run.metric.name, run.metric.mode) != (self.metric.name, self.metric.mode):
                raise ValueError("a replication or the holdout measures another metric than the champion's")
        values = [run.metric.value for run in self.replications if run.metric is not None]
        if (self.mean, self.stdev) != statistics(values):
            raise ValueError(f"mean and stdev must be {statistics(values)} for the completed replications")
        return self

    @classmethod
    def build(cls, **fields: Any) -> ChampionManifest:
        """Compute `mean` and `stdev` ourselves; a caller never supplies them."""
        from anchor.manifest.validation import validated

        runs = [Run.model_validate(r) if isinstance(r, dict) else r for r in fields.get("replications", ())]
        fields["mean"], fields["stdev"] = statistics([r.metric.value for r in runs if r.metric is not None])
        return validated(cls, fields, "champion")

    def identity(self) -> dict[str, Any]:
        found: dict[str, Any] = self.model_dump(mode="json", exclude_none=True)
        if not self.holdout_data:
            found.pop("holdout_data", None)  # absent, not empty: versions 1 and 2 never had it
        return found
