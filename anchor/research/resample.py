"""A bootstrap over items for a metric that is not a mean: macro-F1 from each item's (label, prediction),
AUC from each item's (label, score).

Why: resampling per-item scores and averaging them describes a mean (an accuracy); a macro-F1 or an
AUC is a function of the whole set, so its interval comes from resampling the items and recomputing
the statistic on each resample. The harness computes the statistic itself from the items the
evaluator printed and compares it with the metric (a claim, never adopted). Each resample is a weight
per item (how many times it was drawn), so one pass over the items recomputes the statistic.
"""

from __future__ import annotations

import math
import random
from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

Item = tuple[object, object]
STATISTICS = {"macro_f1": "macro-F1", "auc": "AUC"}
"""The statistics a contract's `metric_kind` may name, and how the report calls each."""
ITEMS = {"macro_f1": "(label, prediction)", "auc": "(label, score)"}


def parse_items(kind: str, value: object) -> tuple[Item, ...] | None:
    """The items of a `per_example` list for `kind`: pairs [label, prediction] (labels and predictions
    integers or strings) for macro_f1, [label 0 or 1, finite score] for auc; None if it is not that."""
    if not isinstance(value, list) or not value:
        return None
    items = []
    for pair in value:
        if not isinstance(pair, list) or len(pair) != 2:
            return None
        label, other = pair
        if kind == "macro_f1":
            if not all(isinstance(v, int | str) and not isinstance(v, bool) for v in (label, other)):
                return None
        elif label not in (0, 1) or isinstance(label, bool) or not _finite(other):
            return None
        items.append((label, other))
    return tuple(items)


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def statistic(kind: str, items: Sequence[Item], weights: Sequence[int] | None = None) -> float:
    """`kind` of the items, each counted `weights[i]` times (once without weights); NaN where undefined
    (an AUC without a positive or a negative)."""
    counts = weights if weights is not None else [1] * len(items)
    return _macro_f1(items, counts) if kind == "macro_f1" else _auc(items, counts)


def _macro_f1(items: Sequence[Item], counts: Sequence[int]) -> float:
    """The unweighted mean over classes (every label or prediction seen among the drawn items) of
    2 tp / (2 tp + fp + fn): scikit-learn's f1_score(average="macro")."""
    tp: Counter[object] = Counter()
    fp: Counter[object] = Counter()
    fn: Counter[object] = Counter()
    for (label, predicted), w in zip(items, counts, strict=True):
        if not w:
            continue
        if label == predicted:
            tp[label] += w
        else:
            fp[predicted] += w
            fn[label] += w
    classes = set(tp) | set(fp) | set(fn)
    return math.fsum(2 * tp[c] / (2 * tp[c] + fp[c] + fn[c]) for c in classes) / len(classes) if classes else math.nan


def _auc(items: Sequence[Item], counts: Sequence[int]) -> float:
    """The probability that a positive scores above a negative, ties counted half (Mann-Whitney)."""
    order = sorted(range(len(items)), key=lambda i: float(items[i][1]))  # type: ignore[arg-type]
    below = wins = 0.0
    i = 0
    while i < len(order):
        j, pos, neg = i, 0, 0
        while j < len(order) and items[order[j]][1] == items[order[i]][1]:
            if items[order[j]][0] == 1:
                pos += counts[order[j]]
            else:
                neg += counts[order[j]]
            j += 1
        wins += pos * (below + 0.5 * neg)
        below += neg
        i = j
    positives = sum(c for (label, _), c in zip(items, counts, strict=True) if label == 1)
    negatives = sum(counts) - positives
    return wins / (positives * negatives) if positives and negatives else math.nan


def bootstrap_items(kind: str, items: Sequence[Item], seed: str, resamples: int) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of `kind` recomputed on `resamples` resamples of the items (the
    RNG seeded with `seed`); resamples where it is undefined are left out."""
    rng = random.Random(seed)  # noqa: S311 - reproducible resampling, not secrecy
    n = len(items)
    values = []
    for _ in range(resamples):
        drawn = Counter(rng.choices(range(n), k=n))
        value = statistic(kind, items, [drawn[i] for i in range(n)])
        if not math.isnan(value):
            values.append(value)
    values.sort()
    return values[int(0.025 * len(values))], values[max(int(0.975 * len(values)) - 1, 0)]
