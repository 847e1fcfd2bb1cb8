"""Understanding a user turn: the injection and staff-only screens, the intent and slot updates.

The text is read here and nowhere else; what leaves is coarse: flags, an intent name, slot values.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from dialogue.pack import DomainPack, IntentRule


class Understanding(BaseModel):
    """What the rules read from one user turn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    intent: str
    route: str
    injection_screen: bool
    privileged_request: bool
    slot_updates: dict[str, str]

    @property
    def must_refuse(self) -> bool:
        return self.injection_screen or self.privileged_request


def classify_intent(text: str, pack: DomainPack) -> IntentRule:
    """The first intent whose pattern matches, else the pack's default intent."""
    for rule, pattern in pack.compiled.intents:
        if pattern is None or pattern.search(text):
            return rule
    return pack.spec.understanding.default_intent


def extract_slot_updates(text: str, pack: DomainPack) -> dict[str, str]:
    """Per slot, the value of the first matching rule; slots with no match are absent."""
    updates: dict[str, str] = {}
    for rule, pattern in pack.compiled.slot_rules:
        if rule.slot not in updates and pattern.search(text):
            updates[rule.slot] = rule.value
    return updates


def understand(text: str, pack: DomainPack) -> Understanding:
    """Screen and read one turn. A screened turn yields no slot updates."""
    patterns = pack.compiled
    injection = patterns.injection.search(text) is not None
    privileged = patterns.staff_only.search(text) is not None
    intent = classify_intent(text, pack)
    updates = {} if injection or privileged else extract_slot_updates(text, pack)
    return Understanding(
        intent=intent.name,
        route=intent.route,
        injection_screen=injection,
        privileged_request=privileged,
        slot_updates=updates,
    )
