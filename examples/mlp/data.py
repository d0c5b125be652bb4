"""The digits data (bundled with scikit-learn: no download) and its fixed split.

Shared by the training code and the evaluator, and not editable by the search: the evaluator's digest
(`evaluator_files`) covers it, so a search cannot move the validation rows into training."""

import numpy as np
from sklearn.datasets import load_digits

VALIDATION = 400
HOLDOUT = 300
"""Rows no attempt is scored on: the harness's holdout run alone predicts them, once, after the search."""


def split(holdout=False):
    """((train x, y), (scored x, y)): the scored rows are the validation rows, or with `holdout` the
    holdout rows. Neither is ever trained on."""
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float64)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(20261201).permutation(len(y))
    val, held, train = order[:VALIDATION], order[VALIDATION:VALIDATION + HOLDOUT], order[VALIDATION + HOLDOUT:]
    scored = held if holdout else val
    return (x[train], y[train]), (x[scored], y[scored])
