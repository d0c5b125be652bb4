"""The MLflow run manifest (`kind: "mlflow_run"`): what a tracked run held when it was stamped.

Why a kind of its own, not a file tree of an export: a run is two things MLflow keeps apart, its
artifacts (files in an artifact store) and its record (params, every logged metric value, tags, times,
in the tracking database), and either can be changed after the fact: an artifact overwritten, a metric
logged again with another value. The identity binds both: the artifacts by their file tree's root (per-
file proofs as for any tree), the record inline, so that a verifier who re-reads the run can say which
param, tag, metric value or file differs.

No MLflow import here: the format is pure data (anchor.mlflow reads a run into it), so the core and
its verifiers need no MLflow to check a run's proof.

Metric values are IEEE 754 doubles; canonical JSON has no floats, so each is written as the text
ECMAScript's Number::toString gives it (RFC 8785's number form: the shortest digits that read back as
the same double), with `NaN`, `Infinity`, `-Infinity` and `-0` spelled out: two values differ in the
manifest exactly when they are different doubles (every NaN is one value, as MLflow stores it).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from anchor.manifest.identity import HasIdentity

HEX64 = r"^[0-9a-f]{64}$"
MAX_PARAMS = 10_000
MAX_TAGS = 10_000
MAX_METRIC_ENTRIES = 100_000
"""Bounds on what one run's identity binds inline (a proof file stays a few MiB at most): a run past
them is refused by name, never bound in part."""
MAX_LOGGED_MODELS = 1_000
MAX_MODEL_FILES = 10_000
MAX_CHANGES = 100_000
RUN_STATUSES = ("RUNNING", "SCHEDULED", "FINISHED", "FAILED", "KILLED")


def metric_text(value: float) -> str:
    """The canonical text of a metric value: ECMAScript's Number::toString of the double (shortest
    round-trip digits; exponent form below 1e-6 and from 1e21), `-0` for negative zero, and `NaN`,
    `Infinity`, `-Infinity`. `String(x)` in JavaScript gives the same text for every double but -0."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign = "-" if value < 0 else ""
    # repr gives the shortest digit string that reads back as the same double (as ECMAScript requires)
    _, digit_tuple, exponent = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    trailing = len("".join(map(str, digit_tuple))) - len(digits)
    k = len(digits)
    n = int(exponent) + trailing + k  # value = 0.d1…dk × 10^n
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        text = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + text


def metric_value(text: str) -> float:
    """The double a canonical metric text stands for (the inverse of `metric_text`)."""
    return float({"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}.get(text, text))


class KeyValue(BaseModel):
    """A param or a tag: MLflow keys are free text (`batch-size`, `Learning Rate`), so they are values
    here, not object keys (canonical JSON keys are [a-z0-9_])."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    key: str = Field(min_length=1, max_length=1000)
    value: str = Field(max_length=65_536)


class MetricEntry(BaseModel):
    """One logged value of a metric: MLflow keeps every one (its history), not only the last."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    key: str = Field(min_length=1, max_length=1000)
    step: int = Field(ge=-(2**63 - 1), le=2**63 - 1)
    timestamp: int = Field(ge=0, lt=2**53)
    """Milliseconds since the epoch, as the client logged it."""
    value: str

    @field_validator("value")
    @classmethod
    def _canonical_value(cls, value: str) -> str:
        try:
            number = metric_value(value)
        except ValueError:
            raise ValueError(f"{value!r} is not a metric value (docs/manifest.md, MLflow run)") from None
        if metric_text(number) != value:
            raise ValueError(f"{value!r} is not canonical; expected {metric_text(number)!r}")
        return value

    def sort_key(self) -> tuple[bytes, int, int, str]:
        return (self.key.encode("utf-8"), self.step, self.timestamp, self.value)


class ArtifactTree(BaseModel):
    """The run's artifacts as a file tree (docs/manifest.md section 3), the `anchor/` folder left out."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    files_root: str = Field(pattern=HEX64)
    file_count: int = Field(ge=0, lt=2**53)
    total_size: int = Field(ge=0, lt=2**53)


class ModelFile(BaseModel):
    """One file of a logged model, as a file tree's entry (docs/manifest.md section 3)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    path: str = Field(min_length=1, max_length=4096)
    size: int = Field(ge=0, lt=2**53)
    blake3: str = Field(pattern=HEX64)


class LoggedModel(BaseModel):
    """An MLflow 3 logged model of the run (`models:/m-…`): it lives outside the run's artifact root, so
    it is bound here by its id, its name, the run MLflow says produced it, and every file inline (few,
    and a verifier names the one that changed)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    model_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,255}$")
    name: str = Field(min_length=1, max_length=1000)
    source_run_id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,255}$")
    files: list[ModelFile] = Field(max_length=MAX_MODEL_FILES)

    @field_validator("files")
    @classmethod
    def _paths_sorted(cls, files: list[ModelFile]) -> list[ModelFile]:
        paths = [f.path.encode("utf-8") for f in files]
        if paths != sorted(set(paths)):
            raise ValueError("files: sorted by the UTF-8 bytes of path, each once")
        return files


class Restamp(BaseModel):
    """A re-stamp of a run stamped before: the digest of the proof it supersedes and every change between
    the two, as `anchor mlflow verify` names them, bound on chain with the new contents."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    supersedes: str = Field(pattern=r"^0x[0-9a-f]{64}$")
    changes: list[str] = Field(min_length=1, max_length=MAX_CHANGES)

    @field_validator("changes")
    @classmethod
    def _lines(cls, changes: list[str]) -> list[str]:
        for line in changes:
            if not 0 < len(line) <= 8192 or "\n" in line:
                raise ValueError("changes: one line each, 1-8192 characters")
        return changes


def _sorted_unique(items: list[KeyValue], what: str) -> list[KeyValue]:
    keys = [item.key.encode("utf-8") for item in items]
    if keys != sorted(keys):
        raise ValueError(f"{what}: sorted by the UTF-8 bytes of key")
    if len(set(keys)) != len(keys):
        raise ValueError(f"{what}: a key appears twice")
    return items


class MlflowRunManifest(HasIdentity, BaseModel):
    """Version 1: a run's identity, its record and its artifacts' tree."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")

    kind: Literal["mlflow_run"] = "mlflow_run"
    version: Literal[1] = 1
    run_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,255}$")
    experiment_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,255}$")
    status: Literal["RUNNING", "SCHEDULED", "FINISHED", "FAILED", "KILLED"]
    start_time: int = Field(ge=0, lt=2**53)
    end_time: int | None = Field(default=None, ge=0, lt=2**53)
    params: list[KeyValue] = Field(default_factory=list, max_length=MAX_PARAMS)
    metrics: list[MetricEntry] = Field(default_factory=list, max_length=MAX_METRIC_ENTRIES)
    tags: list[KeyValue] = Field(default_factory=list, max_length=MAX_TAGS)
    """The user's tags: none of MLflow's own (`mlflow.*`) nor Anchor's (`anchor.*`)."""
    source_commit: str | None = Field(default=None, pattern=r"^([0-9a-f]{40}|[0-9a-f]{64})$")
    """The git commit MLflow recorded for the run's source (its tag `mlflow.source.git.commit`)."""
    artifacts: ArtifactTree
    logged_models: list[LoggedModel] | None = Field(default=None, max_length=MAX_LOGGED_MODELS)
    """MLflow 3's logged models of the run, sorted by id; absent when it has none (a run read before
    logged models existed keeps its digest)."""
    restamp: Restamp | None = None
    """Present on a re-stamp: what it supersedes and what changed since."""

    @field_validator("logged_models")
    @classmethod
    def _models_sorted(cls, models: list[LoggedModel] | None) -> list[LoggedModel] | None:
        if models is not None:
            ids = [m.model_id.encode("utf-8") for m in models]
            if not ids or ids != sorted(set(ids)):
                raise ValueError("logged_models: sorted by the UTF-8 bytes of model_id, each once, absent when none")
        return models

    @field_validator("params", "tags")
    @classmethod
    def _keys_sorted(cls, items: list[KeyValue], info: Any) -> list[KeyValue]:
        return _sorted_unique(items, info.field_name)

    @field_validator("tags")
    @classmethod
    def _user_tags(cls, items: list[KeyValue]) -> list[KeyValue]:
        for item in items:
            if item.key.startswith(("mlflow.", "anchor.")):
                raise ValueError(f"tag {item.key!r}: MLflow's and Anchor's own tags are not bound")
        return items

    @field_validator("metrics")
    @classmethod
    def _history_sorted(cls, items: list[MetricEntry]) -> list[MetricEntry]:
        keys = [item.sort_key() for item in items]
        if keys != sorted(keys):
            raise ValueError("metrics: sorted by key (UTF-8 bytes), then step, timestamp and value")
        return items

    @model_validator(mode="after")
    def _times(self) -> MlflowRunManifest:
        if (self.end_time is None) != (self.status in ("RUNNING", "SCHEDULED")):
            raise ValueError("end_time: present exactly when the run has ended (status not RUNNING or SCHEDULED)")
        if self.end_time is not None and self.end_time < self.start_time:
            raise ValueError("end_time: before start_time")
        return self

    def identity(self) -> dict[str, Any]:
        """Absent fields omitted, never null; empty lists kept (an empty record is a record)."""
        return self.model_dump(mode="json", exclude_none=True)

    @classmethod
    def of(
        cls,
        *,
        run_id: str,
        experiment_id: str,
        status: str,
        start_time: int,
        end_time: int | None,
        params: dict[str, str],
        metrics: list[tuple[str, int, int, float]],
        tags: dict[str, str],
        source_commit: str | None,
        artifacts: dict[str, Any],
        logged_models: list[dict[str, Any]] | None = None,
        restamp: dict[str, Any] | None = None,
    ) -> MlflowRunManifest:
        """The manifest of a run as read (anchor.mlflow): sorts, drops MLflow's and Anchor's own tags,
        writes each metric value canonically. Raises `BadInput` naming the field (a run past the bounds)."""
        from anchor.manifest.validation import validated

        ordered = sorted(
            (key.encode("utf-8"), step, timestamp, metric_text(float(value)), key)
            for key, step, timestamp, value in metrics
        )
        entries = [
            {"key": key, "step": step, "timestamp": timestamp, "value": text}
            for _, step, timestamp, text, key in ordered
        ]

        def listed(mapping: dict[str, str]) -> list[dict[str, str]]:
            return [{"key": k, "value": v} for k, v in sorted(mapping.items(), key=lambda kv: kv[0].encode("utf-8"))]

        data = {
            "run_id": run_id,
            "experiment_id": experiment_id,
            "status": status,
            "start_time": start_time,
            "end_time": end_time,
            "params": listed(params),
            "metrics": entries,
            "tags": listed({k: v for k, v in tags.items() if not k.startswith(("mlflow.", "anchor."))}),
            "source_commit": source_commit,
            "artifacts": artifacts,
            "logged_models": sorted(logged_models or [], key=lambda m: m["model_id"].encode("utf-8")) or None,
            "restamp": restamp,
        }
        return validated(cls, data, f"mlflow run {run_id}")

    def restamped(self, supersedes: str, changes: list[str]) -> MlflowRunManifest:
        """This run's manifest as a re-stamp of the proof `supersedes` (0x digest), `changes` recorded."""
        from anchor.manifest.validation import validated

        data = {**self.identity(), "restamp": {"supersedes": supersedes, "changes": changes}}
        return validated(type(self), data, f"mlflow run {self.run_id}")


def contents(identity: dict[str, Any]) -> dict[str, Any]:
    """What a run held, from a manifest's identity: its re-stamp record left out, so that a run stamped
    anew compares equal to the same run read again."""
    return {k: v for k, v in identity.items() if k != "restamp"}
