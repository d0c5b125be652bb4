"""The evaluator: scores an attempt's predictions against the validation labels it loads itself.

Run by the harness after the attempt, in a sandbox of its own, with the attempt's run dir read-only.
Prints one JSON object; the harness binds it as the attempt's metric, with the number of rows scored
and each row's result (1 right, 0 wrong), from which `research report` bootstraps an interval."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from data import split  # noqa: E402

run_dir = Path(sys.argv[1])
# the harness names the holdout's run dir `holdout` (anchor.research.final): that run is scored on the
# holdout rows, every other on the validation rows; the code under measurement does not choose
_, (_, y_val) = split(holdout=run_dir.name == "holdout")
predictions = json.loads((run_dir / "predictions.json").read_text())
if not isinstance(predictions, list) or len(predictions) != len(y_val) or not all(
    isinstance(p, int) and 0 <= p <= 9 for p in predictions
):
    sys.exit("predictions.json: expected one digit 0..9 per validation row")
right = [int(p == int(t)) for p, t in zip(predictions, y_val, strict=True)]
# how many rows were scored and each one's result: the report's sample size and bootstrap interval
print(json.dumps({"val_accuracy": sum(right) / len(y_val), "examples": len(right), "per_example": right}))
