"""How sure a champion's figure is: the evaluation set's size and a 95% interval, or words saying why not.

Why: "0.82" on 150 validation rows is one row in 150 (0.0067) from "0.813"; a champion that beat its
parent by one row has not shown much. A figure without its sample size and interval reads more
certain than it is, so the report and the champion record carry both, with where each came from:

- **The sample size** (`n`): the contract's `eval_examples` when it declares one (pre-registered, so
  the search cannot shrink it); else the `examples` count in the same JSON object the metric was
  read from (an `evaluator:` line, the `jsonl:`/`json:` row), said to be counted by the evaluator
  (run by the harness) or reported by the attempt's own code (a claim of the code under measurement).
- **The interval**, fitted to what the figure is: a percentile bootstrap (2,000 resamples, seeded by
  the champion's attempt digest, so anyone re-running it gets the same bounds; the seed is printed)
  over `per_example` results when that object gives them, their count is `n` and their mean is the
  metric (else they are not used, and the caveat says so); otherwise the Wilson score interval of a
  binomial proportion, for a metric the contract declares a proportion (`metric_kind`, or a name that
  says accuracy: `AttemptContract.is_proportion`) with a known `n`. Anything else (a macro-F1, an AUC,
  a loss) without per-item results gets no interval over items, in words: the replications' bootstrap
  (anchor.research.final) is then its run-to-run interval.

Pure functions of their inputs: the champion record's `interval` is recomputed by decoders (Wilson)
and by `research verify` from the bound run dir (bootstrap).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anchor.errors import BadInput
from anchor.manifest.champion import bound, wilson
from anchor.record import Value
from anchor.research.ledger import LedgerRow
from anchor.research.resample import STATISTICS

if TYPE_CHECKING:
    from anchor.research.contract import AttemptContract

LEVEL = "0.95"
RESAMPLES = 2000
MAX_PER_EXAMPLE = 10_000
"""Past this many per-example results the bootstrap is not run (2,000 resamples of 10,000 take about
3 s here, of a million minutes, in a report or an audit); at such sizes the binomial interval of a
share differs from it by little, and the report says which was used."""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Sample(Value):
    """What is known of the evaluation behind one measurement."""

    examples: int | None
    source: str | None
    """"contract" (declared, pre-registered), "evaluator" (counted by the harness's evaluator),
    "attempt" (reported by the code under measurement); None when unknown."""
    per_example: tuple[float, ...] | None
    caveat: str | None
    """Why per-example results or a count were set aside, in words; None when nothing was."""
    items: tuple[tuple[object, object], ...] | None = None
    """Per-item (label, prediction or score) pairs of a macro_f1 or auc metric, the statistic recomputed
    from them equal to the metric (anchor.research.resample); None otherwise."""
    statistic: str | None = None
    """The contract's `metric_kind` the items are resampled for ("macro_f1", "auc")."""


def bootstrap(values: tuple[float, ...], seed: str) -> tuple[str, str]:
    """The 95% percentile bootstrap interval of the mean of `values` (RESAMPLES resamples, the RNG
    seeded with `seed`), bounds rounded."""
    rng = random.Random(seed)  # noqa: S311 - reproducible resampling, not secrecy
    n = len(values)
    means = sorted(math.fsum(rng.choices(values, k=n)) / n for _ in range(RESAMPLES))
    return bound(means[int(0.025 * RESAMPLES)]), bound(means[int(0.975 * RESAMPLES) - 1])


def read_sample(terms: AttemptContract, run_dir: Path, holdout: bool = False) -> Sample:
    """The sample behind the measurement bound in `run_dir` (read from its bound files, never trusted
    beyond the comparisons named in the module docstring). `holdout`: the holdout's run, whose size
    the contract declares as `holdout_examples` (not `eval_examples`)."""
    from anchor.research.metrics import metric_record

    record: dict[str, Any] = metric_record(run_dir, terms.metric_source) or {}
    counted = record.get("examples")
    counted = counted if isinstance(counted, int) and not isinstance(counted, bool) and counted > 0 else None
    by = "evaluator" if terms.metric_source.startswith("evaluator:") else "attempt"
    declared = terms.holdout_examples if holdout else terms.eval_examples
    examples, source = (declared, "contract") if declared else (counted, by)
    caveats = []
    if declared and counted is not None and counted != declared:
        caveats.append(f"the {by} counted {counted} examples where the contract declares {declared}")
    if terms.metric_kind in STATISTICS:  # items to recompute the statistic from, not scores to average
        items, why = _items(terms.metric_kind, record, record.get(terms.metric), examples)
        caveats += [why] if why else []
        caveat = "; ".join(caveats) or None
        return Sample(examples, source if examples is not None else None, None, caveat, items, terms.metric_kind)
    per_example = _per_example(record.get("per_example"))
    if per_example is not None and len(per_example) > MAX_PER_EXAMPLE:
        caveats.append(f"{len(per_example):,} per-example results: past {MAX_PER_EXAMPLE:,}, no bootstrap is run")
        per_example = None
    if per_example is not None:
        metric = record.get(terms.metric)
        if examples is None or len(per_example) != examples:
            given = len(per_example)
            caveats.append(f"{given} per-example results for {examples or 'an unknown number of'} examples: not used")
            per_example = None
        elif not isinstance(metric, int | float) or abs(math.fsum(per_example) / len(per_example) - metric) > 1e-6:
            caveats.append("the per-example results do not average to the metric: not used")  # a claim, compared
            per_example = None
    caveat = "; ".join(caveats) or None
    return Sample(examples, source if examples is not None else None, per_example, caveat)


def _items(
    kind: str, record: dict[str, Any], metric: object, examples: int | None
) -> tuple[tuple[tuple[object, object], ...] | None, str | None]:
    """The per-item pairs of a macro_f1 or auc metric when they give it (recomputed here), else None and why."""
    from anchor.research.resample import ITEMS, parse_items, statistic

    if record.get("per_example") is None:
        return None, None
    items = parse_items(kind, record.get("per_example"))
    if items is None:
        return None, f"per_example is not a list of {ITEMS[kind]} pairs: not used"
    if len(items) > MAX_PER_EXAMPLE:
        return None, f"{len(items):,} per-item results: past {MAX_PER_EXAMPLE:,}, no bootstrap is run"
    if examples is not None and len(items) != examples:
        return None, f"{len(items)} per-item results for {examples} examples: not used"
    recomputed = statistic(kind, items)
    if not isinstance(metric, int | float) or math.isnan(recomputed) or abs(recomputed - metric) > 1e-6:
        said = f"{STATISTICS[kind]} recomputed: {recomputed:.6g}"
        return None, f"the per-item results do not give the metric ({said}): not used"
    return items, None


def _per_example(value: object) -> tuple[float, ...] | None:
    if not isinstance(value, list) or not value or len(value) > 100 * MAX_PER_EXAMPLE:
        return None  # not results at all (or too many even to count them here)
    if not all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in value):
        return None
    return tuple(float(v) for v in value)


def interval(value: str, sample: Sample, seed: str, *, proportion: bool) -> dict[str, str] | None:
    """The champion's 95% interval as the record carries it ({method, level, low, high}), or None.
    `proportion`: whether the metric is a share of examples right (the only figure Wilson describes);
    keyword-only and required, so no caller gets a binomial interval by default."""
    if sample.items is not None and sample.statistic is not None:
        from anchor.research.resample import bootstrap_items

        lowest, highest = bootstrap_items(sample.statistic, sample.items, seed, RESAMPLES)
        return {"method": "bootstrap", "level": LEVEL, "low": bound(lowest), "high": bound(highest)}
    if sample.per_example is not None:
        low, high = bootstrap(sample.per_example, seed)
        return {"method": "bootstrap", "level": LEVEL, "low": low, "high": high}
    p = float(Decimal(value))
    if proportion and sample.examples is not None and 0.0 <= p <= 1.0:
        low, high = wilson(p, sample.examples)
        return {"method": "wilson", "level": LEVEL, "low": low, "high": high}
    return None


METHODS = {
    "bootstrap": f"percentile bootstrap over per-example results, {RESAMPLES:,} resamples",  # + n and seed
    "wilson": "Wilson score interval, binomial: the metric read as the share of examples right",
}
SOURCES = {
    "contract": "declared in the contract",
    "evaluator": "counted by the evaluator",
    "attempt": "reported by the attempt's own code",
}


def describe(
    examples: int | None,
    examples_source: str | None,
    interval: dict[str, str] | None,
    caveat: str | None,
    seed: str | None = None,
    proportion: bool | None = None,
    statistic: str | None = None,
) -> str:
    """One line: n and its source, the interval and its method (a bootstrap's resamples and `seed`),
    or what is missing, in words (`proportion` False: the metric is not a share, so it gets no Wilson)."""
    if examples is None:
        size = "sample size unknown (declare `eval_examples` in the contract, or have the evaluator print `examples`)"
    else:
        where = SOURCES.get(examples_source or "", "source unknown")
        size = f"n={examples} examples ({where}; one example = {1 / examples:.4g})"
    if interval is None and proportion is False:
        why = (
            "no interval over items: the metric is not a proportion (a binomial interval does not describe it)"
            " and no per-example results were kept to resample; the replications' bootstrap, where there are"
            " replications, is its run-to-run interval"
        )
    elif interval is None:
        why = "no interval: " + (
            "the metric is not a share in [0, 1] and no per-example results were given"
            if examples is not None
            else "the sample size is unknown"
        )
    elif interval["method"] == "bootstrap" and statistic in STATISTICS:
        from anchor.research.resample import ITEMS

        what = (
            f"percentile bootstrap over {examples} items {ITEMS[statistic]}, {STATISTICS[statistic]} recomputed"
            f" on each of {RESAMPLES:,} resamples"
        )
        why = f"95% interval [{interval['low']}, {interval['high']}] ({what}" + (f", seed {seed})" if seed else ")")
    elif interval["method"] == "bootstrap":
        what = f"percentile bootstrap over {examples} per-example results, {RESAMPLES:,} resamples"
        why = f"95% interval [{interval['low']}, {interval['high']}] ({what}" + (f", seed {seed})" if seed else ")")
    else:
        why = f"95% interval [{interval['low']}, {interval['high']}] ({METHODS[interval['method']]})"
    return f"{size}; {why}" + (f"; note: {caveat}" if caveat else "")


def of_champion(terms: AttemptContract, workdir: Path, entry: LedgerRow) -> dict[str, Any]:
    """The champion's sample and interval, from the run dir its attempt binds: {examples,
    examples_source, interval, caveat} (None where unknown), as the record and the report carry them."""
    from anchor.research.evidence import evidence_dir_of

    sample = read_sample(terms, evidence_dir_of(workdir, entry))
    proportion = terms.is_proportion()
    metric = entry["metric"]
    if metric is None:
        raise BadInput(
            f"ledger entry {entry['seq']}: a champion with no metric has no interval", detail={"seq": entry["seq"]}
        )
    return {
        "examples": sample.examples,
        "examples_source": sample.source,
        "interval": interval(metric["value"], sample, entry["attempt_digest"], proportion=proportion),
        "caveat": sample.caveat,
    }


def of_holdout(terms: AttemptContract, run_dir: Path, run: dict[str, Any]) -> dict[str, Any]:
    """The holdout's sample and interval, from its bound run dir, as the record (version 3) carries them:
    {holdout_examples, holdout_examples_source, holdout_interval, holdout_caveat}; the interval's
    bootstrap is seeded by the run's evidence digest. Nothing for a holdout that did not complete."""
    if run.get("metric") is None:
        return {
            "holdout_examples": None,
            "holdout_examples_source": None,
            "holdout_interval": None,
            "holdout_caveat": "the holdout did not complete",
        }
    sample = read_sample(terms, run_dir, holdout=True)
    return {
        "holdout_examples": sample.examples,
        "holdout_examples_source": sample.source,
        "holdout_interval": interval(run["metric"]["value"], sample, run["evidence"], proportion=terms.is_proportion()),
        "holdout_caveat": sample.caveat,
    }


def held_out_data(terms: AttemptContract, repo: Path) -> list[dict[str, str]]:
    """Each `holdout_data` path of the contract with the file-tree digest of what is there now (the
    digest the record binds: "held out on which data" made checkable). A path that is not there is
    refused by name: a record must not say a holdout ran on data it cannot digest."""
    from anchor.manifest.filetree import hash_tree

    return [
        {"path": named, "digest": hash_tree(path).digest.hex()}
        for named, path in zip(terms.holdout_data, terms.hidden_data(repo), strict=True)
    ]
