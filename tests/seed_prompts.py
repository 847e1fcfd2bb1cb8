"""The seed's printed "State realizer prompt for C1 turn 3": its user message, and the whole prompt as
Qwen2.5-Instruct's chat template renders it (what the seed printed)."""

SEED_C1_T3_SYSTEM = (
    "Write one brief enrollment-assistant reply. Use only the action, slots, and handbook facts supplied. "
    "Do not promise approval, payment, or a staff decision."
)
SEED_C1_T3_USER = (
    "ACTION: inform\n"
    "ACTION MEANING: Answer only from the handbook facts. Do not add enrollment status.\n"
    "SLOTS:\n"
    "program=data_support\n"
    "childcare_needed=unknown\n"
    "contact_channel=email\n"
    "HANDBOOK FACTS:\n"
    "H06: Data Support Certificate classes meet on Monday and Wednesday evenings from 6 p.m. to 9 p.m. "
    "The course lasts 12 weeks."
)
SEED_C1_T3_PROMPT = (
    f"<|im_start|>system\n{SEED_C1_T3_SYSTEM}<|im_end|>\n"
    f"<|im_start|>user\n{SEED_C1_T3_USER}<|im_end|>\n"
    "<|im_start|>assistant\n"
)
