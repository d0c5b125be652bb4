"""A small numpy MLP (one hidden layer, ReLU, softmax) trained on the digits data.

Writes its predictions for the validation rows to <run_dir>/predictions.json; the evaluator
(eval/score.py, run by the harness apart from this code) turns them into the metric. The accuracy this
script computes itself goes to metrics.jsonl, where it is recorded as a claim, never the record.
"""

import json
import sys
from pathlib import Path

import numpy as np

from data import split


def train(params, x, y, seed):
    rng = np.random.default_rng(seed)
    hidden = max(1, int(params["hidden"]))
    lr, l2, epochs, batch = params["learning_rate"], params["l2"], max(1, int(params["epochs"])), 32
    w1 = rng.normal(0, np.sqrt(2 / x.shape[1]), (x.shape[1], hidden))
    b1 = np.zeros(hidden)
    w2 = rng.normal(0, np.sqrt(2 / hidden), (hidden, 10))
    b2 = np.zeros(10)
    onehot = np.eye(10)[y]
    for _ in range(epochs):
        order = rng.permutation(len(y))
        for start in range(0, len(y), batch):
            idx = order[start : start + batch]
            h = np.maximum(0, x[idx] @ w1 + b1)
            logits = h @ w2 + b2
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            g = (p - onehot[idx]) / len(idx)
            gw2, gb2 = h.T @ g + l2 * w2, g.sum(axis=0)
            gh = (g @ w2.T) * (h > 0)
            gw1, gb1 = x[idx].T @ gh + l2 * w1, gh.sum(axis=0)
            w1, b1, w2, b2 = w1 - lr * gw1, b1 - lr * gb1, w2 - lr * gw2, b2 - lr * gb2
    return lambda inputs: (np.maximum(0, inputs @ w1 + b1) @ w2 + b2).argmax(axis=1)


def main():
    run_dir = Path(sys.argv[1])
    params = json.loads(Path("params.json").read_text())
    (x_train, y_train), (x_val, y_val) = split(holdout="--holdout" in sys.argv[2:])
    predict = train(params, x_train, y_train, int(params.get("seed", 0)))
    predictions = predict(x_val)
    (run_dir / "predictions.json").write_text(json.dumps([int(p) for p in predictions]))
    own = float((predictions == y_val).mean())
    with open(run_dir / "metrics.jsonl", "a") as out:
        out.write(json.dumps({"val_accuracy": own}) + "\n")
    print(f"trained: hidden={params['hidden']} lr={params['learning_rate']} epochs={params['epochs']} -> {own:.4f}")


if __name__ == "__main__":
    main()
