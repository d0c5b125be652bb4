"""A tiny, deterministic model to search over: logistic regression by gradient descent, pure Python.

Reads params.json (the only editable file), trains on data.csv (in an order shuffled
by the run name, so a re-run of the same code differs a little, as real training does) and appends
{"val_accuracy": ..., "val_loss": ...} to <run_dir>/metrics.jsonl. With --holdout it scores fresh
draws from the same distribution, which no attempt ever saw. One run takes well under a second.
"""

import json
import math
import random
import sys
from pathlib import Path


def features(x, y):
    return (x, y, x * y, x * x - y * y)


def dataset():
    """data.csv (600 rows: x, y, label), the data the contract declares as its input: 450 to train on,
    150 to validate on."""
    lines = Path("data.csv").read_text().splitlines()[1:]
    rows = [(features(float(x), float(y)), int(label)) for x, y, label in (line.split(",") for line in lines)]
    return rows[: len(rows) * 3 // 4], rows[len(rows) * 3 // 4 :]


def holdout_rows(n=2000, seed=4242):
    """Fresh draws from the same distribution, which no attempt ever saw."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        label = i % 2
        cx, cy = (1.0, 0.6) if label else (-0.4, -0.9)
        x, y = rng.gauss(cx, 1.1), rng.gauss(cy, 1.1)
        rows.append((features(x, y), label))
    return rows[: n * 3 // 4]


def train(params, rows, order_seed):
    rows = list(rows)
    random.Random(order_seed).shuffle(rows)
    w, b = [0.0] * 4, 0.0
    lr, l2 = params["learning_rate"], params["l2"]
    for _ in range(int(params["epochs"])):
        for features, label in rows:
            z = sum(wi * xi for wi, xi in zip(w, features)) + b
            p = 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))
            g = p - label
            w = [wi - lr * (g * xi + l2 * wi) for wi, xi in zip(w, features)]
            b -= lr * g
    return w, b


def evaluate(w, b, rows):
    correct, loss = 0, 0.0
    for features, label in rows:
        z = sum(wi * xi for wi, xi in zip(w, features)) + b
        p = min(1 - 1e-9, max(1e-9, 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))))
        correct += (p >= 0.5) == bool(label)
        loss -= label * math.log(p) + (1 - label) * math.log(1 - p)
    return correct / len(rows), loss / len(rows)


def main():
    run_dir, run_name = Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else ""
    params = json.loads(Path("params.json").read_text())
    train_rows, val_rows = dataset()
    w, b = train(params, train_rows, run_name)
    if "--holdout" in sys.argv[3:]:
        val_rows = holdout_rows()
    accuracy, loss = evaluate(w, b, val_rows)
    with open(run_dir / "metrics.jsonl", "a") as out:
        out.write(json.dumps({"val_accuracy": round(accuracy, 6), "val_loss": round(loss, 6)}) + "\n")


if __name__ == "__main__":
    main()
