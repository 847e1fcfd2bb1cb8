"""Client retries: the `Idempotency-Key` header, and what a key may be.

A turn posted again with the same key never makes a second turn: the turn's own transaction writes a
REQUEST item for the key, conditional on the key being unused in the conversation, and a retry meets
it and gets the turn the key made, as it stands now (dialogue.aws.turns commit_turn,
dialogue.conversation.take_turn). That one receipt covers every way a first attempt can end: its answer
lost after the write, a twin racing it on the same state, a limit reached since. The item holds a hash
of the key and the turn id, nothing the user typed. A failed attempt writes nothing, so the client may
retry it with the same key.
"""

from __future__ import annotations

import re

IDEMPOTENCY_HEADER = "idempotency-key"
KEY_PATTERN = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


def valid_key(key: str) -> bool:
    return KEY_PATTERN.fullmatch(key) is not None
