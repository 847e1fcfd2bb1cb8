"""A desk's example utterances (`examples.toml`): what its residents say, by what it means.

The desk profile of understanding (`[understanding] profile = "desk"`, or UNDERSTANDING_PROFILE) reads
a turn by its rules first and then by its nearest example (`dialogue.similarity`), so an author can
teach the desk a phrasing by adding a sentence instead of editing a regular expression. The lesson
profile never reads this file: the rules alone keep the seed's tables exact.

The file's tables name what each example means, by the pack's own names:

- `[topics]`: per topic, questions that ask about it. A topic may have no `pattern` in domain.toml
  and be written from examples alone.
- `[intents]`: per intent, turns that mean it ("can I talk to someone" for a hand-off intent).
- `[screens]`: `injection` and `staff_only`, turns the desk refuses.
- `[values.<slot>]`: per value of a slot, turns that give it.
- `other`: turns that are none of the above (other desks' questions, chit-chat, public text): they
  give the desk's labels something to lose to, so a turn from elsewhere is not read as the closest
  topic.

And how sure the nearest example must be before it counts (cosines, 0..1):

- `min_score` and `min_margin`: the best label's cosine, and its lead over the next label. Below
  either no example is sure and the rules' reading stands (which abstains on a question no rule
  answers): below the margin the desk abstains, never guesses. Only the nearest label's kind still
  counts there (dialogue.understanding): a request for a person nearest a hand-off by a wide margin, a
  statement far from every example (`far_score`), values in a turn nearest another desk's turn.
- `screen_min_score`: a refusal from examples alone needs this much (refusing a benign turn costs a
  resident more than handing an injection to staff).
- `inform_min_score`: an answer from the handbook needs the turn to be at least this close to some
  example of any label, or it is abstained on ("how much has the dow changed today" shares "how
  much" with the fees rule, and little else with the desk).
- `far_score`: a statement that names no value, answers no question the desk asked and is less like
  every example than this is out of scope ("mute the music"): abstained on, never asked for a slot. A
  turn of function words alone ("ok", "hi there") is small talk, not out of scope.
- `screen_min_score = 1.0` means no refusal from examples at all, whatever the rounding.

And which scorer reads a turn against the examples:

- `scorer = "nearest"` (the default): the nearest example (`dialogue.similarity.ExampleIndex`); the
  thresholds above are cosines.
- `scorer = "linear"`: a logistic regression over the same features, fitted offline with
  `python -m devstack fit-examples DIR` into `examples.weights.json` beside this file
  (`dialogue.linear.LinearIndex`); `score` is then the top label's probability and `margin` its lead
  over the runner-up's, so the thresholds above are probabilities and need choosing again. The
  weights record this file's sha256: after any change to it, fit again, or the pack fails to load.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

if TYPE_CHECKING:  # imported where used: the realizer's image ships the pack, not the scorer
    from dialogue.linear import LinearIndex, LinearWeights
    from dialogue.similarity import ExampleIndex

Example = Annotated[str, StringConstraints(min_length=1, max_length=1000, strip_whitespace=True)]
Examples = tuple[Example, ...]
Name = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$", max_length=40)]
Cosine = Annotated[float, Field(ge=0.0, le=1.0)]

ScreenKind = Literal["injection", "staff_only"]

INDEX_CACHE_ENV = "EXAMPLE_INDEX_CACHE_DIR"
"""A folder to keep the nearest example's built index in between processes (`ExampleIndex.kept`), or unset
(the functions' setting: SnapStart's snapshot holds it) or `off`: built afresh by each process."""

TOPIC, INTENT, SCREEN, VALUE, OTHER = "topic", "intent", "screen", "value", "other"
"""The kinds of label in the index: `topic:<name>`, `intent:<name>`, `screen:<kind>`,
`value:<slot>:<value>` and `other`."""


class ExampleSet(BaseModel):
    """The contents of `examples.toml`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    min_score: Cosine
    min_margin: Cosine
    screen_min_score: Cosine = 1.0
    inform_min_score: Cosine = 0.0
    far_score: Cosine = 0.0
    scorer: Literal["nearest", "linear"] = "nearest"
    topics: dict[Name, Examples] = Field(default_factory=dict)
    intents: dict[Name, Examples] = Field(default_factory=dict)
    screens: dict[ScreenKind, Examples] = Field(default_factory=dict)
    values: dict[Name, dict[Name, Examples]] = Field(default_factory=dict)
    other: Examples = ()

    def labelled(self) -> dict[str, Examples]:
        """Every label of the index with its examples, in the file's order; labels with none left out."""
        labels: dict[str, Examples] = {}
        labels.update({f"{TOPIC}:{name}": examples for name, examples in self.topics.items()})
        labels.update({f"{INTENT}:{name}": examples for name, examples in self.intents.items()})
        labels.update({f"{SCREEN}:{kind}": examples for kind, examples in self.screens.items()})
        for slot, values in self.values.items():
            labels.update({f"{VALUE}:{slot}:{value}": examples for value, examples in values.items()})
        labels[OTHER] = self.other
        return {label: examples for label, examples in labels.items() if examples}

    def check(self) -> None:
        """Raise ValueError, naming the label, for an example nothing could match (as `build_index` would)."""
        from dialogue.similarity import ExampleIndex

        ExampleIndex.check(self.labelled())

    def build_index(self, weights: LinearWeights | None = None) -> ExampleIndex | LinearIndex:
        """The scorer `scorer` names: the nearest example's index, or (for "linear") the index scored by
        `weights`, which the loader reads from examples.weights.json; ValueError if they are missing. The
        nearest example's index is kept in the folder INDEX_CACHE_ENV names, if it names one."""
        from dialogue.similarity import ExampleIndex

        if self.scorer == "linear":
            from dialogue.linear import WEIGHTS_FILE, LinearIndex

            if weights is None:
                raise ValueError(f'scorer = "linear" needs {WEIGHTS_FILE}: run python -m devstack fit-examples DIR')
            return LinearIndex.build(self.labelled(), weights)
        folder = os.environ.get(INDEX_CACHE_ENV, "").strip()
        if folder and folder.lower() != "off":
            return ExampleIndex.kept(self.labelled(), Path(folder))
        return ExampleIndex.build(self.labelled())
