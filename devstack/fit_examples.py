"""`python -m devstack fit-examples DIR`: fit the linear scorer of a desk's examples offline.

Reads DIR/examples.toml, fits a multinomial logistic regression (L2) over the TF-IDF features of
`dialogue.similarity` (in dual form, on the examples' cosines: see `dialogue.linear`) and writes
DIR/examples.weights.json, with the sha256 of the examples.toml it was fitted from. The desk reads the
file only where examples.toml says `scorer = "linear"`; a desk that changes examples.toml (any byte:
an example, a threshold, the scorer line) must fit again, or its pack fails to load.

Needs numpy (the dev venv has it; the Lambda layer never does). The fit is deterministic (no random
start, a fixed number of steps) and the file is written deterministically: coefficients under
`PRUNE` times the largest are left out and the rest rounded to `DIGITS` significant digits, so a refit
of the same file on the same machine gives the same bytes.

The algorithm and its setting are bench/readers/scorers.py's `fit_kernel_logreg` and `TfidfLinear`:
L2 = 1e-3, chosen there by 2-fold CV on the desks' tuning parts (bench/readers/RESULTS.md), 400
Nesterov steps, class-balanced example weights so the many `other` examples do not drown the topics.
"""

from __future__ import annotations

import hashlib
import tomllib
from pathlib import Path
from typing import Any

from dialogue.linear import WEIGHTS_FILE, LinearWeights
from dialogue.pack.examples import ExampleSet
from dialogue.pack.loader import EXAMPLES_FILE
from dialogue.similarity import ExampleIndex

L2 = 1e-3
STEPS = 400
PRUNE = 1e-4
DIGITS = 5


def kernel_of(index: ExampleIndex, texts: list[str]) -> Any:
    """The examples' cosines with each other as the index computes them (pruning included), made
    symmetric (pruning leaves it a hair asymmetric)."""
    import numpy as np

    rows = []
    for text in texts:
        found = index._scores(text)
        if found is None:
            rows.append([0.0] * len(index))
            continue
        scores, scale = found
        rows.append([min(score * scale, 1.0) for score in scores])
    kernel = np.array(rows, dtype=np.float64)
    return (kernel + kernel.T) / 2


def fit_kernel_logreg(kernel: Any, owner: list[int], classes: int, *, l2: float, steps: int) -> tuple[Any, Any]:
    """Multinomial logistic regression with an L2 penalty, in dual form: logits = K @ A + b.

    Minimizes mean_i w_i CE(softmax(K_i A + b), y_i) + l2/2 * tr(A' K A) by functional gradient descent
    (P - Y + l2 A) with Nesterov momentum; w_i class-balanced. As bench/readers/scorers.py's, in float64."""
    import numpy as np

    n = kernel.shape[0]
    y = np.asarray(owner)
    onehot = np.zeros((n, classes), dtype=np.float64)
    onehot[np.arange(n), y] = 1.0
    counts = np.bincount(y, minlength=classes).astype(np.float64)
    weight = (1.0 / counts[y]) * (n / classes)
    weight /= weight.sum()
    rate = 1.0 / (float(np.linalg.eigvalsh(kernel).max()) * float(weight.max()) + l2)
    coef = np.zeros((n, classes))
    bias = np.zeros(classes)
    velocity_coef = np.zeros_like(coef)
    velocity_bias = np.zeros_like(bias)
    for _ in range(steps):
        look_coef = coef + 0.9 * velocity_coef
        look_bias = bias + 0.9 * velocity_bias
        logits = kernel @ look_coef + look_bias
        logits -= logits.max(axis=1, keepdims=True)
        prob = np.exp(logits)
        prob /= prob.sum(axis=1, keepdims=True)
        residual = (prob - onehot) * weight[:, None]
        velocity_coef = 0.9 * velocity_coef - rate * (residual + l2 * look_coef / n)
        velocity_bias = 0.9 * velocity_bias - rate * residual.sum(axis=0)
        coef += velocity_coef
        bias += velocity_bias
    return coef, bias


def _rounded(value: float) -> float:
    return float(f"{value:.{DIGITS}g}")


def fit(
    examples: ExampleSet, sha256: str, *, l2: float = L2, steps: int = STEPS, prune: float = PRUNE
) -> LinearWeights:
    """The weights of `examples`' linear scorer, recording `sha256` as the examples file's."""
    import numpy as np

    labelled = examples.labelled()
    labels = list(labelled)
    texts = [text for label in labels for text in labelled[label]]
    owner = [position for position, label in enumerate(labels) for _ in labelled[label]]
    index = ExampleIndex.build(labelled)
    coef, bias = fit_kernel_logreg(kernel_of(index, texts), owner, len(labels), l2=l2, steps=steps)
    floor = prune * float(np.abs(coef).max())
    kept = np.where(np.abs(coef) >= floor, coef, 0.0)
    columns = tuple(tuple(_rounded(float(value)) for value in kept[:, position]) for position in range(len(labels)))
    return LinearWeights(
        labels=tuple(labels),
        counts=tuple(len(labelled[label]) for label in labels),
        bias=tuple(_rounded(float(value)) for value in bias),
        coef=columns,
        examples_sha256=sha256,
        l2=l2,
        steps=steps,
        prune=prune,
    )


def fit_pack(directory: Path, *, l2: float = L2) -> tuple[Path, LinearWeights]:
    """Fit DIR/examples.toml and write DIR/examples.weights.json; returns the file and the weights.
    ValueError (naming the file) if examples.toml is missing or malformed."""
    source = directory / EXAMPLES_FILE
    try:
        raw = source.read_bytes()
    except OSError as error:
        raise ValueError(f"{source}: cannot be read ({error.strerror})") from None
    try:
        examples = ExampleSet.model_validate(tomllib.loads(raw.decode("utf-8")))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError) as error:
        raise ValueError(f"{source}: not a valid examples file ({str(error).splitlines()[0]})") from None
    weights = fit(examples, hashlib.sha256(raw).hexdigest(), l2=l2)
    target = directory / WEIGHTS_FILE
    target.write_text(weights.to_json(), encoding="utf-8")
    return target, weights
