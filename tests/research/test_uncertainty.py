"""A champion's figure comes with its sample size and a 95% interval, or words saying why not; the
champion record carries them and the team's trial count, and nothing there is taken on the run's say-so."""

from __future__ import annotations

import json
import random
from pathlib import Path
from statistics import NormalDist

import pytest

from anchor.errors import BadInput
from anchor.manifest.champion import ChampionManifest, Z, wilson
from anchor.manifest.decode import validate_identity
from anchor.research.contract import AttemptContract
from anchor.research.uncertainty import bootstrap, describe, interval, read_sample


def _terms(**overrides: object) -> AttemptContract:
    fields: dict[str, object] = dict(
        task="t",
        command="python3 t.py {run_dir}",
        editable=("p.json",),
        metric="acc",
        mode="max",
        attempt_timeout_minutes=1,
    )
    return AttemptContract.model_validate(fields | overrides)


def _run(tmp_path: Path, row: dict[str, object], name: str = "metrics.jsonl") -> Path:
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    (run / name).write_text(json.dumps(row) + "\n")
    return run


def test_the_wilson_interval_matches_the_textbook_values() -> None:
    # Wilson 95% for 50/100: 0.4038-0.5962; for 150 rows at 0.82: 0.7508-0.8732
    assert wilson(0.5, 100) == ("0.403832", "0.596168")
    assert NormalDist().inv_cdf(0.975) == Z  # the constant decoders use is the standard normal's quantile
    z2 = NormalDist().inv_cdf(0.975) ** 2
    assert wilson(0.0, 10) == ("0", f"{z2 / (10 + z2):.6f}")  # p = 0: the upper bound is z^2 / (n + z^2)
    low, high = wilson(0.82, 150)
    assert (float(low), float(high)) == pytest.approx((0.7508, 0.8732), abs=1e-4)


def test_a_declared_sample_size_gives_a_wilson_interval_and_says_where_n_came_from(tmp_path: Path) -> None:
    run = _run(tmp_path, {"acc": 0.82})
    sample = read_sample(_terms(eval_examples=150), run)
    assert (sample.examples, sample.source, sample.per_example) == (150, "contract", None)
    bounds = interval("0.82", sample, "seed", proportion=True)
    assert bounds == {"method": "wilson", "level": "0.95", "low": "0.750777", "high": "0.873242"}
    line = describe(sample.examples, sample.source, bounds, sample.caveat)
    assert "n=150 examples (declared in the contract; one example = 0.006667)" in line
    assert "[0.750777, 0.873242] (Wilson score interval" in line


def test_per_example_results_give_a_reproducible_bootstrap_interval(tmp_path: Path) -> None:
    right = [1] * 371 + [0] * 29
    random.Random(7).shuffle(right)
    run = _run(tmp_path, {"acc": 371 / 400, "examples": 400, "per_example": right}, "evaluator.out")
    terms = _terms(metric_source="evaluator:python3 score.py {run_dir}")
    sample = read_sample(terms, run)
    assert (sample.examples, sample.source, len(sample.per_example or ())) == (400, "evaluator", 400)
    first = interval("0.9275", sample, "ab" * 32, proportion=True)
    assert first is not None and first["method"] == "bootstrap"
    again = interval("0.9275", sample, "ab" * 32, proportion=True)
    assert first == again  # the same seed, the same bounds: anyone re-derives them
    assert float(first["low"]) < 0.9275 < float(first["high"])
    # binomial standard error at 0.9275 on 400 rows is 0.013: the bootstrap's 95% lies within about 2 of it
    assert float(first["high"]) - float(first["low"]) == pytest.approx(2 * 1.96 * 0.01297, rel=0.15)
    assert bootstrap((1.0,) * 5, "x") == ("1", "1")


def test_per_example_results_that_do_not_add_up_to_the_metric_are_set_aside_and_said_so(tmp_path: Path) -> None:
    terms = _terms(metric_source="evaluator:python3 score.py {run_dir}")
    # the claimed results average 0.5, the metric says 0.9: a claim compared, not adopted
    lying = read_sample(
        terms, _run(tmp_path, {"acc": 0.9, "examples": 4, "per_example": [1, 0, 1, 0]}, "evaluator.out")
    )
    assert (
        lying.per_example is None and lying.caveat == "the per-example results do not average to the metric: not used"
    )
    assert interval("0.9", lying, "s", proportion=True) == {
        "method": "wilson",
        "level": "0.95",
        **dict(zip(("low", "high"), wilson(0.9, 4), strict=True)),
    }
    short = read_sample(_terms(eval_examples=10), _run(tmp_path, {"acc": 0.5, "per_example": [1, 0]}))
    assert short.per_example is None and "2 per-example results for 10 examples: not used" in (short.caveat or "")
    differs = read_sample(_terms(eval_examples=150), _run(tmp_path, {"acc": 0.5, "examples": 120}))
    assert differs.examples == 150
    assert "the attempt counted 120 examples where the contract declares 150" in (differs.caveat or "")


def test_without_a_sample_size_or_for_a_loss_there_is_no_interval_in_words(tmp_path: Path) -> None:
    unknown = read_sample(_terms(), _run(tmp_path, {"acc": 0.8}))
    assert (unknown.examples, interval("0.8", unknown, "s", proportion=True)) == (None, None)
    assert describe(None, None, None, None) == (
        "sample size unknown (declare `eval_examples` in the contract, or have the evaluator print `examples`);"
        " no interval: the sample size is unknown"
    )
    loss = read_sample(_terms(mode="min", eval_examples=500), _run(tmp_path, {"acc": 2.3}))
    assert interval("2.3", loss, "s", proportion=True) is None
    assert "no interval: the metric is not a share in [0, 1]" in describe(500, "contract", None, None)


def _v2(**overrides: object) -> dict[str, object]:
    metric = {"name": "acc", "mode": "max", "value": "0.82"}
    identity: dict[str, object] = {
        "kind": "champion",
        "version": 2,
        "researcher": "r0",
        "contract_digest": "55" * 32,
        "commit": "a1" * 20,
        "attempt_digest": "88" * 32,
        "metric": metric,
        "trials": 6,
        "team_trials": 20,
        "ledger_head": "99" * 32,
        "ledger_length": 40,
        "replications": [],
        "examples": 150,
        "examples_source": "contract",
        "interval": {"method": "wilson", "level": "0.95", "low": "0.750777", "high": "0.873242"},
        "environment": {
            "interpreter": "CPython 3.11.7",
            "lock": {"source": "requirements.lock", "digest": "4c" * 32},
            "host": "40" * 32,
            "inputs": [],
        },
    }
    return identity | overrides


def test_a_champion_record_whose_team_count_or_interval_does_not_follow_is_refused() -> None:
    assert ChampionManifest.model_validate(validate_identity(_v2())).team_trials == 20
    for bad, why in (
        (_v2(team_trials=5), "team_trials"),  # fewer than the researcher's own
        (_v2(team_trials=41), "team_trials"),  # more than the ledger holds
        ({k: v for k, v in _v2().items() if k != "team_trials"}, "team_trials"),
        (_v2(interval={"method": "wilson", "level": "0.95", "low": "0.79", "high": "0.873242"}), "Wilson bounds"),
        (_v2(examples_source=None), "come together"),
        (_v2(version=1), "version 2 fields"),
        ({k: v for k, v in _v2().items() if k != "environment"}, "environment: required"),
    ):
        with pytest.raises(BadInput, match=why):
            validate_identity({k: v for k, v in bad.items() if v is not None})


def test_past_ten_thousand_per_example_results_no_bootstrap_is_run_and_the_report_says_so(tmp_path: Path) -> None:
    """2,000 resamples of a million results took minutes in a report or an audit (a hang to the user):
    past MAX_PER_EXAMPLE the results are set aside, named, and a share gets the binomial interval."""
    from anchor.research.uncertainty import MAX_PER_EXAMPLE

    right = [1] * (MAX_PER_EXAMPLE + 1)
    right[0] = 0
    value = sum(right) / len(right)
    run = _run(tmp_path, {"acc": value, "examples": len(right), "per_example": right}, "evaluator.out")
    sample = read_sample(_terms(metric_source="evaluator:python3 score.py {run_dir}"), run)
    assert sample.per_example is None and "10,001 per-example results: past 10,000, no bootstrap" in (
        sample.caveat or ""
    )
    bounds = interval(repr(value), sample, "s", proportion=True)
    assert bounds is not None and bounds["method"] == "wilson"


def test_a_macro_f1_in_zero_one_gets_no_wilson_interval_and_the_report_says_why(tmp_path: Path) -> None:
    """A macro-F1 of 0.82 on 150 rows is not 123 rows right of 150: a binomial interval around it
    describes nothing. Only a proportion gets Wilson; a statistic without resampleable items gets words."""
    run = _run(tmp_path, {"macro_f1": 0.82})
    terms = _terms(metric="macro_f1", eval_examples=150)
    assert not terms.is_proportion()
    sample = read_sample(terms, run)
    assert interval("0.82", sample, "seed", proportion=terms.is_proportion()) is None
    line = describe(sample.examples, sample.source, None, sample.caveat, proportion=False)
    assert "Wilson" not in line and "not a proportion" in line and "replications" in line
    # the same figure declared a proportion (the contract's word, pre-registered) gets its Wilson interval
    declared = _terms(metric="macro_f1", eval_examples=150, metric_kind="proportion")
    assert declared.is_proportion()
    assert interval("0.82", read_sample(declared, run), "seed", proportion=True) == {
        "method": "wilson",
        "level": "0.95",
        "low": "0.750777",
        "high": "0.873242",
    }


def test_an_undeclared_metric_is_a_proportion_only_when_its_name_says_accuracy_or_error_rate() -> None:
    for name in ("val_accuracy", "acc", "top1_acc", "error_rate", "test-accuracy"):
        assert _terms(metric=name).is_proportion(), name
    for name in ("macro_f1", "auc", "loss", "score", "f1", "bleu", "accuracy_gain_ratio_x"):
        assert _terms(metric=name).is_proportion() == ("accuracy" in name), name
    assert not _terms(metric="val_accuracy", metric_kind="statistic").is_proportion()  # declared wins
    with pytest.raises(ValueError, match="metric_kind"):
        _terms(metric_kind="ratio")


def test_a_bootstrap_names_its_method_resamples_and_seed(tmp_path: Path) -> None:
    right = [1] * 90 + [0] * 10
    run = _run(tmp_path, {"score": 0.9, "examples": 100, "per_example": right}, "evaluator.out")
    terms = _terms(metric="score", metric_source="evaluator:python3 score.py {run_dir}")
    sample = read_sample(terms, run)
    bounds = interval("0.9", sample, "cd" * 32, proportion=False)
    assert bounds is not None and bounds["method"] == "bootstrap"
    line = describe(sample.examples, sample.source, bounds, None, seed="cd" * 32)
    assert "percentile bootstrap over 100 per-example results, 2,000 resamples, seed " + "cd" * 32 in line


def test_the_methods_paragraph_names_the_chain_registry_transactions_and_ledger_head() -> None:
    """A paper's methods said "anchored on chain" and nothing a reader could look up; now it names where,
    in markdown and in LaTeX, and the command that re-derives the figures."""
    from anchor.research.tables import render

    at = {
        "chain_id": 31337,
        "chain": "chain 31337",
        "registry": "0x" + "ab" * 20,
        "tx_hash": "0x" + "cd" * 32,
        "root": "0x" + "ef" * 32,
        "head": "12" * 32,
        "length": 24,
    }
    final = {"digest": "34" * 32, "record_anchor": {"tx_hash": "0x" + "56" * 32, "root": "0x" + "78" * 32}}
    stats = {"attempts": 12, "champion_metric": {"name": "macro_f1", "value": "0.8"}, "final": final}
    data = {"researchers": {"r0": stats}, "anchored_trials": 12, "anchored_at": at}
    terms = _terms(metric="macro_f1")
    markdown = render(data, terms, "markdown")
    for needle in (
        "chain 31337",
        "0x" + "ab" * 20,
        "0x" + "cd" * 32,
        "0x" + "ef" * 32,
        "12" * 32,
        "(24 rows)",
        "0x" + "34" * 32,
        "0x" + "56" * 32,
        "anchor research check CLAIM --offline",
    ):
        assert needle in markdown, needle
    latex = render(data, terms, "latex")
    assert "0x" + "cd" * 32 in latex and "anchor research check CLAIM" in latex
    # the chain out of reach: nothing is named that was not read back
    assert "registry" not in render({**data, "anchored_at": None}, terms, "markdown").split("|---|---|")[1]


def _macro_f1_by_hand(pairs: list[tuple[int, int]]) -> float:
    """Macro-F1 as scikit-learn's f1_score(average="macro") gives it, written apart from the code under test."""
    classes = sorted({c for pair in pairs for c in pair})
    scores = []
    for c in classes:
        tp = sum(1 for y, p in pairs if y == c and p == c)
        fp = sum(1 for y, p in pairs if y != c and p == c)
        fn = sum(1 for y, p in pairs if y == c and p != c)
        scores.append(0.0 if 2 * tp + fp + fn == 0 else 2 * tp / (2 * tp + fp + fn))
    return sum(scores) / len(scores)


def test_a_macro_f1_with_per_item_labels_and_predictions_gets_a_bootstrap_over_items(tmp_path: Path) -> None:
    """Per-item scores of a macro-F1 cannot average to it, so they were set aside; given each item's label
    and prediction, the harness recomputes the macro-F1 itself (a claim compared, never adopted) and
    resamples the items, recomputing it each time."""
    rng = random.Random(3)
    labels = [rng.choice([0, 1, 2]) for _ in range(300)]
    pairs = [(y, y if rng.random() < 0.8 else rng.choice([0, 1, 2])) for y in labels]
    f1 = round(_macro_f1_by_hand(pairs), 6)
    record = {"macro_f1": f1, "examples": 300, "per_example": [list(p) for p in pairs]}
    run = _run(tmp_path, record, "evaluator.out")
    terms = _terms(metric="macro_f1", metric_kind="macro_f1", metric_source="evaluator:python3 s.py {run_dir}")
    sample = read_sample(terms, run)
    assert sample.caveat is None and sample.items is not None and len(sample.items) == 300
    bounds = interval(str(f1), sample, "ef" * 32, proportion=terms.is_proportion())
    assert bounds is not None and bounds["method"] == "bootstrap"
    assert bounds == interval(str(f1), sample, "ef" * 32, proportion=False)  # seeded
    assert float(bounds["low"]) < f1 < float(bounds["high"]) and float(bounds["high"]) - float(bounds["low"]) < 0.2
    line = describe(300, "evaluator", bounds, None, seed="ef" * 32, statistic="macro_f1")
    assert "percentile bootstrap over 300 items (label, prediction), macro-F1 recomputed on each of 2,000" in line
    assert "seed " + "ef" * 32 in line and "Wilson" not in line
    # a claimed figure the items do not give is set aside, and said so
    lying = _run(tmp_path, {**record, "macro_f1": 0.99}, "evaluator.out")
    said = read_sample(terms, lying)
    assert said.items is None and "do not give the metric" in str(said.caveat)


def test_an_auc_with_per_item_labels_and_scores_gets_a_bootstrap_over_items(tmp_path: Path) -> None:
    rng = random.Random(5)
    items = [(1, rng.gauss(1.0, 1.0)) for _ in range(120)] + [(0, rng.gauss(0.0, 1.0)) for _ in range(180)]
    positives = [s for y, s in items if y == 1]
    negatives = [s for y, s in items if y == 0]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in positives for n in negatives)
    auc = round(wins / (len(positives) * len(negatives)), 6)
    record = {"auc": auc, "examples": 300, "per_example": [list(i) for i in items]}
    terms = _terms(metric="auc", metric_kind="auc", metric_source="evaluator:python3 s.py {run_dir}")
    sample = read_sample(terms, _run(tmp_path, record, "evaluator.out"))
    assert sample.caveat is None and sample.items is not None
    bounds = interval(str(auc), sample, "12" * 32, proportion=False)
    assert bounds is not None and float(bounds["low"]) < auc < float(bounds["high"])
