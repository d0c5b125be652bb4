"""The evaluator: scores an attempt's predictions against the validation labels it loads itself.

Run by the harness after the attempt, in a sandbox of its own, with the attempt's run dir read-only.
Prints one JSON object; the harness binds it as the attempt's metric."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from data import split  # noqa: E402

run_dir = Path(sys.argv[1])
_, (_, y_val) = split()
predictions = json.loads((run_dir / "predictions.json").read_text())
if not isinstance(predictions, list) or len(predictions) != len(y_val) or not all(
    isinstance(p, int) and 0 <= p <= 9 for p in predictions
):
    sys.exit("predictions.json: expected one digit 0..9 per validation row")
correct = sum(int(p == int(t)) for p, t in zip(predictions, y_val, strict=True))
print(json.dumps({"val_accuracy": correct / len(y_val)}))
