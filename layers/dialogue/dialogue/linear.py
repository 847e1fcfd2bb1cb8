"""Labels a turn by a logistic regression over the desk's TF-IDF features, fitted offline: the opt-in
`scorer = "linear"` of examples.toml (`dialogue.pack.examples`). Standard library only, as
`dialogue.similarity`, whose features it reuses unchanged.

The model is a multinomial logistic regression with an L2 penalty over exactly the features of
`similarity.ExampleIndex`. Its weights lie in the span of the examples' vectors, so it is kept in its
dual form: a label's logit is the turn's cosine with every example (what `ExampleIndex` computes for
its nearest example, pruning included) times that example's coefficient for the label, plus the
label's bias. `python -m devstack fit-examples DIR` fits the coefficients with numpy on a developer's
machine and writes them beside examples.toml as `examples.weights.json` (`WEIGHTS_FILE`), with the
sha256 of the examples.toml they were fitted from; nothing here fits or needs numpy. bench/readers/
RESULTS.md measured this model ("tfidf_linear") against the nearest example; bench/readers/LINEAR.md
measures it inside the desk.

`match(text)` has `ExampleIndex.match`'s shape, with other meanings: `score` is the top label's
predicted probability (0..1, the labels' probabilities sum to 1) and `margin` its lead over the
runner-up's probability; `example` is -1 (no single example decides). A turn that shares no feature
with any example matches nothing (None), as with the nearest example, so "far from every example"
reads the same under both scorers.

The weights file (JSON, written by the fitter only; `format` 1):

    {"format": 1, "scorer": "linear", "examples_sha256": "<hex>", "l2": 0.001, "steps": 400,
     "prune": 0.0001, "examples": <count>,
     "labels": [{"label": "topic:hours", "examples": 9, "bias": 0.12,
                 "coef": [<the label's coefficient for each example, in build order>, ...]}, ...]}

one label a line, in the examples' order. Coefficients smaller than `prune` times the largest are
written as 0, the rest with 5 significant digits. The turn's text is user text: nothing here logs it or
keeps it.

Cost: a turn's cosines with every example, as the nearest example computes them, then one product per
label over all the examples (`math.sumprod` on Python 3.12): for Riverton's 1361 examples and 21 labels
about 0.45 ms more than the nearest example's 0.5 ms (bench/readers/LINEAR.md). The coefficients are
dense (an L2 logistic regression gives every example a say in every label), so pruning saves little.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from operator import mul
from typing import Any

from dialogue.similarity import ExampleIndex, Match

__all__ = ["FORMAT", "WEIGHTS_FILE", "LinearIndex", "LinearWeights", "WeightsError"]

WEIGHTS_FILE = "examples.weights.json"
FORMAT = 1

_sumprod = getattr(math, "sumprod", None)  # Python 3.12 (the Lambda runtime); 3.11 sums products


class WeightsError(ValueError):
    """A weights file that is malformed, or that does not fit the examples it is used with."""


@dataclass(frozen=True)
class LinearWeights:
    """A fitted model: per label (in the examples' order), how many examples it has, its bias and its
    coefficient for every example (in build order, all labels' examples)."""

    labels: tuple[str, ...]
    counts: tuple[int, ...]
    bias: tuple[float, ...]
    coef: tuple[tuple[float, ...], ...]
    examples_sha256: str
    l2: float
    steps: int = 0
    prune: float = 0.0

    @property
    def size(self) -> int:
        """How many examples the model was fitted on."""
        return sum(self.counts)

    @classmethod
    def from_json(cls, data: Any) -> LinearWeights:
        """The weights in a parsed weights file; WeightsError saying what is wrong."""
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("scorer") != "linear":
            raise WeightsError(f'not a weights file of format {FORMAT} for scorer "linear"')
        try:
            sha = data["examples_sha256"]
            l2 = float(data["l2"])
            steps = int(data.get("steps", 0))
            prune = float(data.get("prune", 0.0))
            entries = data["labels"]
            if not isinstance(sha, str) or len(sha) != 64 or not isinstance(entries, list) or not entries:
                raise TypeError
            labels, counts, bias, coef = [], [], [], []
            for entry in entries:
                labels.append(str(entry["label"]))
                counts.append(int(entry["examples"]))
                bias.append(float(entry["bias"]))
                coef.append(tuple(float(weight) for weight in entry["coef"]))
        except (KeyError, TypeError, ValueError):
            raise WeightsError(
                "malformed: expected examples_sha256, l2 and labels with label, examples, bias, coef"
            ) from None
        size = sum(counts)
        if min(counts) < 1 or len(set(labels)) != len(labels):
            raise WeightsError("malformed: every label once, each with at least one example")
        if any(len(column) != size for column in coef):
            raise WeightsError(f"malformed: every label needs one coefficient per example ({size})")
        if not all(map(math.isfinite, (*bias, *(weight for column in coef for weight in column)))):
            raise WeightsError("malformed: a weight is not a finite number")
        return cls(tuple(labels), tuple(counts), tuple(bias), tuple(coef), sha, l2, steps, prune)

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> LinearWeights:
        """The weights in a file; OSError if it cannot be read, WeightsError if it is malformed."""
        with open(path, encoding="utf-8") as handle:
            try:
                data = json.load(handle)
            except json.JSONDecodeError as error:
                raise WeightsError(f"not valid JSON (line {error.lineno})") from None
        return cls.from_json(data)

    def to_json(self) -> str:
        """The weights file's text: deterministic (keys and labels in order, one label a line)."""
        head = {
            "format": FORMAT,
            "scorer": "linear",
            "examples_sha256": self.examples_sha256,
            "l2": self.l2,
            "steps": self.steps,
            "prune": self.prune,
            "examples": self.size,
        }
        lines = [json.dumps(head, separators=(",", ":"))[:-1] + ',"labels":[']
        for position, label in enumerate(self.labels):
            entry = {
                "label": label,
                "examples": self.counts[position],
                "bias": self.bias[position],
                "coef": [weight if weight else 0 for weight in self.coef[position]],
            }
            comma = "," if position < len(self.labels) - 1 else ""
            lines.append(json.dumps(entry, separators=(",", ":")) + comma)
        lines.append("]}")
        return "\n".join(lines) + "\n"


class LinearIndex:
    """The desk's examples' TF-IDF index with a fitted logistic regression over it. Build it once per pack
    load (`build`): it builds the same `ExampleIndex` the nearest example uses, plus the weights."""

    __slots__ = ("_bias", "_columns", "_index", "_labels", "_weights")

    def __init__(self, index: ExampleIndex, weights: LinearWeights) -> None:
        if index.labels != weights.labels or len(index) != weights.size:
            raise WeightsError("the weights were fitted on other examples (labels or example counts differ)")
        self._index = index
        self._weights = weights
        self._labels = weights.labels
        self._bias = weights.bias
        self._columns = tuple(list(column) for column in weights.coef)  # lists: the fastest to sumprod

    @classmethod
    def build(cls, examples: Mapping[str, Sequence[str]], weights: LinearWeights) -> LinearIndex:
        """The index of `examples` (as `ExampleIndex.build` reads them) scored by `weights`, which must have
        been fitted on the same labels and example counts (WeightsError otherwise)."""
        return cls(ExampleIndex.build(examples), weights)

    @property
    def labels(self) -> tuple[str, ...]:
        return self._labels

    @property
    def weights(self) -> LinearWeights:
        return self._weights

    def __len__(self) -> int:
        """How many examples the index holds."""
        return len(self._index)

    def probabilities(self, text: str) -> list[float] | None:
        """Every label's probability, in the labels' order; None when the turn shares no feature with any
        example."""
        found = self._index._scores(text)
        if found is None:
            return None
        scores, scale = found
        if max(scores) <= 0.0:
            return None
        # The logits are the cosines (scores times scale) times each label's column: one C-level product
        # per label over every example beats gathering the examples the turn touches (most of them).
        # Cosines are not clamped at 1 here (the fit's kernel is): only rounding can put one above.
        if _sumprod is not None:
            logits = [
                bias + scale * _sumprod(scores, column) for bias, column in zip(self._bias, self._columns, strict=True)
            ]
        else:
            logits = [
                bias + scale * sum(map(mul, scores, column))
                for bias, column in zip(self._bias, self._columns, strict=True)
            ]
        top = max(logits)
        exps = [math.exp(logit - top) for logit in logits]
        total = sum(exps)
        return [value / total for value in exps]

    def match(self, text: str) -> Match | None:
        """The most probable label, its probability and its lead over the runner-up's; None when the turn
        has no feature in common with any example (empty or whitespace text included)."""
        found = self.probabilities(text)
        if found is None:
            return None
        best = max(range(len(found)), key=found.__getitem__)  # the first of equals
        score = found[best]
        if len(found) == 1:
            return Match(self._labels[best], score, None, score, -1)
        other = max((p for p in range(len(found)) if p != best), key=found.__getitem__)
        return Match(self._labels[best], score, self._labels[other], score - found[other], -1)
