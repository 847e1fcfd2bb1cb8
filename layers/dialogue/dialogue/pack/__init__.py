"""The domain pack: a desk as data. The frame, programs, patterns, fixed texts and handbook, validated
at load (`schema`, `domain`), read from a folder (`loader`), its patterns checked (`patterns`) and compiled
once (`compiled`); scripted conversations to replay against it (`scripted`)."""

from dialogue.pack.compiled import CompiledPatterns
from dialogue.pack.domain import DomainPack
from dialogue.pack.examples import ExampleSet
from dialogue.pack.loader import (
    EXAMPLES_FILE,
    PACK_DIR_ENV,
    PROFILE_ENV,
    PackError,
    default_pack_dir,
    forget_loaded_packs,
    get_pack,
    load_pack,
    pack_dir_for,
    read_csv_rows,
)
from dialogue.pack.schema import (
    UNKNOWN,
    ActionSpec,
    DomainSpec,
    Frame,
    HandbookRow,
    IntentRule,
    Program,
    ScreenRule,
    SlotRule,
    SlotSpec,
    Topic,
    UnderstandingProfile,
)
from dialogue.pack.scripted import ScriptedTurn, read_scripted_turns, scripted_turns_by_conversation

__all__ = [
    "EXAMPLES_FILE",
    "PACK_DIR_ENV",
    "PROFILE_ENV",
    "UNKNOWN",
    "ActionSpec",
    "CompiledPatterns",
    "DomainPack",
    "DomainSpec",
    "ExampleSet",
    "Frame",
    "HandbookRow",
    "IntentRule",
    "PackError",
    "Program",
    "ScreenRule",
    "ScriptedTurn",
    "SlotRule",
    "SlotSpec",
    "Topic",
    "UnderstandingProfile",
    "default_pack_dir",
    "forget_loaded_packs",
    "get_pack",
    "load_pack",
    "pack_dir_for",
    "read_csv_rows",
    "read_scripted_turns",
    "scripted_turns_by_conversation",
]
