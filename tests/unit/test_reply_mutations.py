"""The desk profile on disguised drafts: every draft of `data/riverton/drafts.csv` under each mutation.

A draft reaches the screens as the model wrote it, and a model (or a resident's words it echoes) may
write "You\\u2019re enrolled" with a typographic apostrophe, hide a zero-width space inside a word, use
a Cyrillic "\\u043e" for an "o", write in full-width letters, break lines, shout, or pad spaces. Each
mutation below keeps what a resident reads: the screens read the reply normalized
(`dialogue.normalize.normalize_reply`), so every bad draft must still be held (100%), by every screen
that holds it as written, and every good draft must still be shown (goal 95%; the figures are
printed with `-s`, like test_draft_corpus's).

Every mutation counts as harmless for the good drafts, upper case included: a reply in capitals says
the same to the resident, and the screens read it as they read it in sentence case (the
unknown-program screen, which needs capitals to find a name, reads a reply with no lower-case
letter in title case). A bad draft in capitals may fire one screen more than as written: "A FORKLAMP COURSE"
reads "A Forklamp Course", a name the desk does not run.
The mutations are deterministic (no random draw), so the figures are the same on every run.
"""

from __future__ import annotations

import csv
import itertools
import re
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import pytest

from dialogue.actions import Action, ScreenProfile
from dialogue.pack import DomainPack, get_pack
from dialogue.realize import RealizedReply, build_realize_job
from dialogue.screens import decide, screen_reply
from dialogue.state import DialogueState

DATA = Path(__file__).resolve().parents[2] / "data" / "riverton"
GOAL = 0.95

_WORD = re.compile(r"[A-Za-z]{2,}")
# Invisible characters: zero-width space, non-joiner and joiner, word joiner, byte-order mark, soft
# hyphen, and bidi marks, embeddings and isolates.
_INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad\u200e\u200f\u202a\u202c\u2066\u2069"
# Cyrillic and Greek letters that look like Latin ones, small and capital ("\u0430" for "a", ...).
_CYRILLIC = str.maketrans(
    "aceijopsxyACEHIJKMOPSTXBY",
    "\u0430\u0441\u0435\u0456\u0458\u043e\u0440\u0455\u0445\u0443\u0410\u0421"
    "\u0415\u041d\u0406\u0408\u041a\u041c\u041e\u0420\u0405\u0422\u0425\u0412\u04ae",
)
_GREEK = str.maketrans(
    "oiupkvAEIKMNOPTXYZ",
    "\u03bf\u03b9\u03c5\u03c1\u03ba\u03bd\u0391\u0395\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a7\u03a5\u0396",
)


def typographic(text: str) -> str:
    """Curly apostrophes and quotes, and typographic hyphens, as a word processor writes them."""
    quotes = itertools.cycle("\u201c\u201d")
    text = re.sub('"', lambda _match: next(quotes), text)
    return text.replace("'", "\u2019").replace("-", "\u2010")


def zero_width(text: str) -> str:
    """An invisible character in the middle of every word."""
    marks = itertools.cycle(_INVISIBLE)
    return _WORD.sub(lambda m: m[0][: len(m[0]) // 2] + next(marks) + m[0][len(m[0]) // 2 :], text)


def cyrillic(text: str) -> str:
    return text.translate(_CYRILLIC)


def greek(text: str) -> str:
    return text.translate(_GREEK)


def full_width(text: str) -> str:
    """Full-width forms of every printable ASCII character, and the ideographic space."""
    return "".join(
        "\u3000" if char == " " else chr(ord(char) + 0xFEE0) if "!" <= char <= "~" else char for char in text
    )


def line_breaks(text: str) -> str:
    """Every third space a line break (a blank line after a sentence), with a Windows one now and then."""
    spaces = itertools.count()

    def space(match: re.Match[str]) -> str:
        number = next(spaces)
        if match[0] != " ":
            return "\n\n"
        return ("\r\n" if number % 6 == 2 else "\n") if number % 3 == 2 else " "

    return re.sub(r"(?<=[.!?]) |(?<![.!?]) ", space, text)


def upper_case(text: str) -> str:
    return text.upper()


def extra_spaces(text: str) -> str:
    """Doubled spaces, spaces of other widths (no-break, thin, narrow, ideographic), a tab, and
    spaces at both ends."""
    widths = itertools.cycle(["  ", "\u00a0", " \u2009", "\u202f ", "   ", "\t"])
    return "  " + re.sub(" ", lambda _match: next(widths), text) + " \u3000"


def everything(text: str) -> str:
    """Every mutation but upper case at once."""
    for mutation in (typographic, cyrillic, zero_width, line_breaks, extra_spaces):
        text = mutation(text)
    return text


MUTATIONS: dict[str, Callable[[str], str]] = {
    "typographic": typographic,
    "zero_width": zero_width,
    "cyrillic": cyrillic,
    "greek": greek,
    "full_width": full_width,
    "line_breaks": line_breaks,
    "upper_case": upper_case,
    "extra_spaces": extra_spaces,
    "all_but_case": everything,
}


def drafts() -> list[dict[str, str]]:
    with (DATA / "drafts.csv").open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def fired(pack: DomainPack, row: dict[str, str], text: str) -> set[str]:
    """The desk screens that fire on `text`, written for the draft's state and action."""
    state = {slot: row[slot] for slot in pack.frame.slot_names}
    action = Action(row["action"])
    rows = pack.passage_ids_for(action, state[pack.program_slot], row["topic"] or None)
    return {str(screen) for screen in screen_reply(text, action, state, pack, rows, ScreenProfile.DESK).fired}


def held(pack: DomainPack, row: dict[str, str], text: str) -> bool:
    """Whether the desk profile keeps `text` back by every screen that keeps the draft as written back
    (a draft in capitals may fire one more: "A FORKLAMP COURSE" reads as a name)."""
    screens = fired(pack, row, text)
    return bool(screens) and screens >= fired(pack, row, row["text"])


def test_every_mutation_changes_every_draft_it_can() -> None:
    for name, mutation in MUTATIONS.items():
        rows = [row for row in drafts() if name != "typographic" or re.search("['\"-]", row["text"])]
        unchanged = [row["draft_id"] for row in rows if mutation(row["text"]) == row["text"]]
        assert len(rows) >= 30 and not unchanged, (name, unchanged)


def test_disguised_bad_drafts_stay_held_and_good_ones_stay_shown(capsys: pytest.CaptureFixture[str]) -> None:
    pack = get_pack(DATA)
    rows = drafts()
    bad = [row for row in rows if row["class"] != "good"]
    good = [row for row in rows if row["class"] == "good"]
    lines = [f"{'mutation':<13} {'bad held':>13} {'good shown':>13}"]
    figures: dict[str, tuple[float, float]] = {}
    misses: dict[str, list[str]] = {}
    for name, mutation in MUTATIONS.items():
        kept = [row["draft_id"] for row in bad if held(pack, row, mutation(row["text"]))]
        shown = [row["draft_id"] for row in good if not held(pack, row, mutation(row["text"]))]
        figures[name] = (len(kept) / len(bad), len(shown) / len(good))
        misses[name] = sorted({row["draft_id"] for row in bad} - set(kept))
        misses[name] += sorted({row["draft_id"] for row in good} - set(shown))
        lines.append(
            f"{name:<13} {len(kept):>4}/{len(bad):<3} {len(kept) / len(bad):>4.0%} "
            f"{len(shown):>4}/{len(good):<3} {len(shown) / len(good):>4.0%}"
        )
    with capsys.disabled():
        print(f"\nriverton/drafts.csv under each mutation, desk profile ({len(bad)} bad, {len(good)} good):")
        print("\n".join(lines))
    failing = {name: misses[name] for name, (kept, shown) in figures.items() if kept < 1 or shown < GOAL}
    assert not failing, "\n".join(lines)


def test_a_disguised_good_draft_is_shown_as_the_model_wrote_it_and_a_bad_one_kept_as_written() -> None:
    """The screens read the normalized reply; the resident sees, and the review queue keeps, the text."""
    pack = get_pack(DATA)
    for row in drafts():
        if row["draft_id"] not in {"W017", "W044"}:  # a good confirm and a bad request, each with an apostrophe
            continue
        text = everything(row["text"])
        state = DialogueState.from_slots(pack.frame, {slot: row[slot] for slot in pack.frame.slot_names})
        job = build_realize_job(
            conversation_id=UUID(int=1), turn_id=1, state=state, action=Action(row["action"]), pack=pack,
            now=datetime(2026, 1, 5, 9, 0, tzinfo=UTC),
        )  # fmt: skip
        reply = RealizedReply(job=job, text=text, engine="canned", ended_by_eos=True, hit_token_cap=False)
        outcome = decide(reply, pack)
        assert outcome.draft is not None and outcome.draft.text == text
        if row["class"] == "good":
            assert not outcome.fallback_used and outcome.final_reply == text
        else:
            assert outcome.fallback_used and outcome.final_reply != text
