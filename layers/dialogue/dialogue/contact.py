"""The chat's contact form: a phone number, an email address or a note a resident writes to a person.

It is kept apart from the dialogue (DESIGN.md invariant 1). Understanding never reads it; it never reaches
a prompt, a queue, a log line, a metric, an error or the retained record. The detail is checked against
the pack's format (`[contact]` in domain.toml), sealed with the stack's key (a `Sealer`, KMS in AWS) into
the conversation's one CONTACT item, and read back only by staff on the conversation's hand-off item,
each read audited. It is deleted when that item closes, or at its TTL (`keep_days`).

Leaving a contact is a turn of its own: a hand-off with the fixed `received_text`, so the resident sees
that a person will use it and staff find it in their hand-off queue. The turn keeps what every turn
keeps (slots, action, flags), never the detail. A number or address typed into the chat instead is not
kept: the desk answers with `typed_in_chat_text`, pointing at the form.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol
from uuid import UUID

from dialogue import handoffs
from dialogue.actions import Action
from dialogue.errors import (
    ContactFormUnavailable,
    ContactNotAccepted,
    ConversationNotFound,
    NothingToLeave,
    TurnLimitReached,
)
from dialogue.handoffs import handoff_fields
from dialogue.pack import UNKNOWN, DomainPack
from dialogue.pack.schema import ContactForm
from dialogue.ports import ConversationStore, SealedContact, TurnCommit
from dialogue.records import ConversationRecord, TurnRecord, desk_turn
from dialogue.replies import reply_fields
from dialogue.understanding import CONTACT_TYPED

CONTACT_LEFT = "contact_left"
"""The intent of the hand-off turn a contact form makes."""


class Sealer(Protocol):
    """Seals a conversation's contact with a key only the stack holds (KMS in AWS, dialogue.aws.sealing).
    The conversation id is bound to the sealed bytes: they open for that conversation only."""

    def seal(self, conversation_id: UUID, plaintext: bytes) -> bytes: ...

    def unseal(self, conversation_id: UUID, sealed: bytes) -> bytes: ...


@dataclass(frozen=True)
class OpenedContact:
    channel: str
    detail: str | None
    note: str | None
    left_at: datetime


def _form(pack: DomainPack) -> ContactForm:
    if pack.spec.contact is None:
        raise ContactFormUnavailable()
    return pack.spec.contact


def checked(pack: DomainPack, channel: str, detail: str | None, note: str | None) -> tuple[str | None, str | None]:
    """The detail and note as kept (trimmed; empty is none). ContactNotAccepted for a detail the chosen
    channel does not take or whose format is not the pack's, or a note over its length; NothingToLeave
    when both are empty."""
    form = _form(pack)
    detail = (detail or "").strip() or None
    note = (note or "").strip() or None
    if detail is None and note is None:
        raise NothingToLeave()
    if detail is not None:
        spec = form.details.get(channel)
        if spec is None or len(detail) > spec.max_chars or re.fullmatch(spec.pattern, detail) is None:
            raise ContactNotAccepted()
    if note is not None and len(note) > form.note_max_chars:
        raise ContactNotAccepted()
    return detail, note


def leave_contact(
    conversation_id: UUID,
    detail: str | None,
    note: str | None,
    *,
    store: ConversationStore,
    sealer: Sealer,
    pack: DomainPack,
    now: datetime,
    max_turns: int,
) -> tuple[TurnRecord, str]:
    """Seal the detail and note into the conversation's CONTACT item (replacing any earlier one) and hand
    the conversation to staff with one turn, written together; returns the turn and the desk's reply."""
    form = _form(pack)
    before = store.load_conversation(conversation_id)
    if before is None:
        raise ConversationNotFound()
    if before.turn_count >= max_turns:
        raise TurnLimitReached()
    channel = before.state.slots.get(form.slot, UNKNOWN)
    detail, note = checked(pack, channel, detail, note)
    plaintext = json.dumps({"channel": channel, "detail": detail, "note": note}, ensure_ascii=False).encode()
    sealed = SealedContact(
        sealed=sealer.seal(conversation_id, plaintext),
        channel=channel,
        has_detail=detail is not None,
        has_note=note is not None,
        left_at=now,
        expires_at=now + timedelta(days=form.keep_days),
    )
    _, turn = handoffs.commit(store, TurnCommit(before, before.state, contact_turn(before, now), contact=sealed))
    reply = contact_reply(turn, pack)
    assert reply is not None
    return turn, reply


def contact_turn(before: ConversationRecord, now: datetime) -> TurnRecord:
    """The hand-off turn a contact form makes: the state's slots, unchanged, and a new hand-off item, or
    the conversation's open one joined (dialogue.handoffs)."""
    return desk_turn(
        before, before.state, intent=CONTACT_LEFT, action=Action.HAND_OFF, now=now, **handoff_fields(before, now)
    )


def contact_reply(turn: TurnRecord, pack: DomainPack) -> str | None:
    """The desk's fixed reply to a turn the contact form made, or to a number typed into the chat; None
    for any other turn."""
    form = pack.spec.contact
    if form is None or turn.intent not in (CONTACT_LEFT, CONTACT_TYPED):
        return None
    text = form.received_text if turn.intent == CONTACT_LEFT else form.typed_in_chat_text
    return text.format_map(reply_fields(turn.slots, pack))


def open_contact(sealed: SealedContact, conversation_id: UUID, sealer: Sealer) -> OpenedContact:
    """What the resident left, for a member of staff on the conversation's item (the caller audits it)."""
    plain = json.loads(sealer.unseal(conversation_id, sealed.sealed))
    return OpenedContact(channel=plain["channel"], detail=plain["detail"], note=plain["note"], left_at=sealed.left_at)
