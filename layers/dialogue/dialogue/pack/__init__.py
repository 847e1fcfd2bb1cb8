"""The domain pack: a desk as data. The frame, programs, patterns, fixed texts and handbook, validated
at load (`schema`), read from a folder (`loader`), its patterns compiled once (`patterns`); scripted
conversations to replay against it (`scripted`)."""

from dialogue.pack.loader import PACK_DIR_ENV, PackError, default_pack_dir, get_pack, load_pack, read_csv_rows
from dialogue.pack.patterns import CompiledPatterns
from dialogue.pack.schema import (
    UNKNOWN,
    ActionSpec,
    DomainPack,
    DomainSpec,
    Frame,
    HandbookRow,
    IntentRule,
    Program,
    ScreenRule,
    SlotRule,
    SlotSpec,
)
from dialogue.pack.scripted import ScriptedTurn, read_scripted_turns, scripted_turns_by_conversation

__all__ = [
    "PACK_DIR_ENV",
    "UNKNOWN",
    "ActionSpec",
    "CompiledPatterns",
    "DomainPack",
    "DomainSpec",
    "Frame",
    "HandbookRow",
    "IntentRule",
    "PackError",
    "Program",
    "ScreenRule",
    "ScriptedTurn",
    "SlotRule",
    "SlotSpec",
    "default_pack_dir",
    "get_pack",
    "load_pack",
    "read_csv_rows",
    "read_scripted_turns",
    "scripted_turns_by_conversation",
]
