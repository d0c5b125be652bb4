"""The attempt manifest: one trial of the research loop, bound to its commit, parent, diff, metric and
the attempt contract it ran under.

The metric hash is the value the registry's lineage record stores:
keccak256(abi.encode(string name, uint8 mode, int256 value)) with mode min = 0, max = 1 and value
scaled to 18 decimals (round half to even); non-finite values have no hash and are refused.
"""

from __future__ import annotations

import math
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation, localcontext
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from anchor.errors import BadInput
from anchor.manifest.environment import Environment
from anchor.manifest.identity import HasIdentity

HEX64 = r"^[0-9a-f]{64}$"
COMMIT = r"^([0-9a-f]{40}|[0-9a-f]{64})$"
SCALE = 18
MODE_CODES = {"min": 0, "max": 1}
ZERO_HASH = "0" * 64
_DIGITS = 100
"""Decimal precision for metric arithmetic: an int256 at 18 decimals has at most 77 digits."""


def canonical_decimal(value: object, field: str = "metric.value") -> str:
    """The canonical text of a metric value: rounded to 18 decimals, no exponent, no trailing zeros.

    Floats are read by their shortest repr (0.1 is "0.1"). Raises `BadInput` for non-finite values,
    booleans and magnitudes that do not fit an int256 once scaled.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str, Decimal)):
        raise BadInput(f"{field}: expected a number, got {type(value).__name__}", detail={"field": field})
    if isinstance(value, float) and not math.isfinite(value):
        raise BadInput(f"{field}: {value} is not finite and has no metric hash", detail={"field": field})
    try:
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
        if not number.is_finite():
            raise BadInput(f"{field}: {value} is not finite and has no metric hash", detail={"field": field})
        # an int256 at 18 decimals has at most 77 digits; the default context keeps only 28
        with localcontext(prec=_DIGITS):
            rounded = number.quantize(Decimal(1).scaleb(-SCALE), rounding=ROUND_HALF_EVEN)
    except InvalidOperation:
        raise BadInput(f"{field}: {value!r} is not a number in range", detail={"field": field}) from None
    with localcontext(prec=_DIGITS):
        scaled = int(rounded.scaleb(SCALE))
        text = format(rounded.normalize(), "f")
    if abs(scaled) >= 2**255:
        raise BadInput(f"{field}: {value} does not fit an int256 at 18 decimals", detail={"field": field})
    return "0" if text in ("-0", "0") else text


class Metric(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=128)
    mode: Literal["max", "min"]
    value: str

    @model_validator(mode="after")
    def _canonical(self) -> Metric:
        if canonical_decimal(self.value) != self.value:
            raise ValueError(f"value {self.value!r} is not canonical; expected {canonical_decimal(self.value)!r}")
        return self

    @classmethod
    def of(cls, name: str, mode: str, value: object) -> Metric:
        from anchor.manifest.validation import validated

        return validated(cls, {"name": name, "mode": mode, "value": canonical_decimal(value)}, "metric")

    def scaled(self) -> int:
        with localcontext(prec=_DIGITS):
            return int(Decimal(self.value).scaleb(SCALE))

    def hash(self) -> bytes:
        from eth_abi.abi import encode
        from eth_hash.auto import keccak

        return keccak(encode(["string", "uint8", "int256"], [self.name, MODE_CODES[self.mode], self.scaled()]))


class MeasuredBy(BaseModel):
    """Which metric source produced an attempt's number (`jsonl`, `json`, `regex`, `evaluator`, or a
    plug-in's name) and the digest of its definition (docs/manifest.md, "Evaluator digest")."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    source: str = Field(pattern=r"^[a-z][a-z0-9_.-]{0,63}$")
    digest: str = Field(pattern=HEX64)


class KeepRule(BaseModel):
    """Version 5: the pre-registered noise-aware keep rule an attempt was judged by: the
    baseline re-measured `replications` times, their sample standard deviation `spread`, and the
    `threshold` (`sigmas` x `spread`, at least the contract's `min_improvement`) a candidate had to beat
    the champion by to be kept. The same figures in every attempt of the search after the calibration."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    rule: Literal["noise"] = "noise"
    replications: int = Field(ge=2, le=50)
    spread: str
    sigmas: str
    threshold: str

    @model_validator(mode="after")
    def _follows(self) -> KeepRule:
        for name in ("spread", "sigmas", "threshold"):
            value = getattr(self, name)
            if canonical_decimal(value) != value or Decimal(value) < 0:
                raise ValueError(f"keep_rule.{name}: a canonical, non-negative decimal")
        if Decimal(self.threshold) < Decimal(self.sigmas) * Decimal(self.spread):
            raise ValueError("keep_rule.threshold: below sigmas x spread")
        return self


class AttemptManifest(HasIdentity, BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    kind: Literal["attempt"] = "attempt"
    version: Literal[1, 2, 3, 4, 5] = 1
    """2 binds the evidence and how the attempt ran; 3 also what measured it (`measured_by`), a timed-out
    attempt's last number (`partial`) and the `interrupted` status; 4 also the environment it ran in
    (`environment`); 1 (ledgers from before) has none."""
    commit: str = Field(pattern=COMMIT)
    parent: str = Field(pattern=COMMIT)
    diff_blake3: str = Field(pattern=HEX64)
    metric: Metric | None = None
    metric_hash: str = Field(pattern=HEX64)
    kept: bool
    status: Literal["completed", "failed", "timed_out", "interrupted"]
    researcher: str = Field(min_length=1, max_length=128)
    contract_digest: str = Field(pattern=HEX64)
    evidence: str | None = Field(default=None, pattern=HEX64)
    """Version 2: digest of the run dir's file-tree manifest (metric file, logs, claims, code.diff)."""
    sandbox: Literal["bubblewrap", "gvisor", "none"] | None = None
    """Version 2: how the attempt ran; "none" only when the search was told to run unconfined."""
    measured_by: MeasuredBy | None = None
    """Version 3: the metric source that produced the number and the digest of its definition."""
    partial: Metric | None = None
    """Version 3, timed_out only: the last value the attempt wrote before its deadline; never kept, and
    not the metric (the metric hash on chain stays the zero hash)."""
    environment: Environment | None = None
    """Version 4: interpreter, lock, host or image, and the contract's inputs (anchor.manifest.environment)."""
    keep_rule: KeepRule | None = None
    """Version 5, required there: the noise-aware keep rule it was judged by (a `keep = "noise"` search)."""

    @model_validator(mode="after")
    def _consistent(self) -> AttemptManifest:
        if (self.version >= 2) != (self.evidence is not None) or (self.version >= 2) != (self.sandbox is not None):
            raise ValueError("versions 2 to 5 have evidence and sandbox; version 1 has neither")
        if (self.version >= 3) != (self.measured_by is not None):
            raise ValueError("versions 3 to 5, and only they, have measured_by")
        if (self.version >= 4) != (self.environment is not None):
            raise ValueError("versions 4 and 5, and only they, have environment")
        if (self.version == 5) != (self.keep_rule is not None):
            raise ValueError("version 5, and only version 5, has keep_rule")
        if self.version < 3 and self.status == "interrupted":
            raise ValueError("the interrupted status is version 3")
        if self.partial is not None and self.status != "timed_out":
            raise ValueError("only a timed-out attempt has a partial metric")
        if self.partial is not None and self.metric is not None:
            raise ValueError("a partial metric is never the metric")
        if self.status == "completed" and self.metric is None:
            raise ValueError("a completed attempt has a metric")
        if self.kept and self.status != "completed":
            raise ValueError("only a completed attempt can be kept")
        expected = self.metric.hash().hex() if self.metric else ZERO_HASH
        if self.metric_hash != expected:
            raise ValueError(f"metric_hash {self.metric_hash} is not the hash of the metric ({expected})")
        return self

    @classmethod
    def build(cls, **fields: Any) -> AttemptManifest:
        """Compute `metric_hash` from `metric` ourselves; a caller never supplies it."""
        from anchor.manifest.validation import validated

        metric = fields.get("metric")
        metric_obj = Metric.model_validate(metric) if isinstance(metric, dict) else metric
        fields["metric_hash"] = metric_obj.hash().hex() if metric_obj else ZERO_HASH
        return validated(cls, fields, "attempt")

    def identity(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)
