"""The seed's token table comes out exactly with the Qwen2.5 vocabulary."""

from __future__ import annotations

from devstack.token_accounting import count_tokens, naive_messages, prompt_text, qwen_tokenizer
from dialogue.pack import DomainPack, ScriptedTurn, scripted_turns_by_conversation
from dialogue.policy import next_state, turn_topic
from dialogue.realize import build_realizer_messages
from dialogue.state import DialogueState
from dialogue.understanding import understand

SEED_NAIVE = [41, 50, 60, 72, 37, 53, 61, 43, 59, 71, 36, 48, 62]
# The seed's state-prompt column. The confirm rows (185, 157, 185) depend on the wording of H03, H11
# and H13, which the seed does not show; this pack's rows were written to give the same counts.
SEED_STATE = [98, 185, 125, 157, 102, 97, 185, 88, 88, 98, 91, 89, 91]

SEED_NAIVE_C1_T4 = """<|im_start|>system
You are a helpful enrollment assistant. Use the conversation so far to answer the user.<|im_end|>
<|im_start|>user
I want to sign up for the Data Support Certificate.<|im_end|>
<|im_start|>user
Email is best.<|im_end|>
<|im_start|>user
When does it meet?<|im_end|>
<|im_start|>user
Actually make that forklift.<|im_end|>
<|im_start|>assistant
"""


def token_columns(pack: DomainPack, turns: list[ScriptedTurn]) -> tuple[list[int], list[int]]:
    naive, state_counts = [], []
    for conversation in scripted_turns_by_conversation(turns).values():
        state = DialogueState.new(pack.frame)
        for index, turn in enumerate(conversation):
            understood = understand(turn.user_utterance, pack)
            state, action = next_state(state, understood, pack)
            utterances = [t.user_utterance for t in conversation[: index + 1]]
            naive.append(count_tokens(naive_messages(pack.spec.prompts.naive_system, utterances)))
            topic = turn_topic(understood, action)
            state_counts.append(count_tokens(build_realizer_messages(state, action, pack, topic)))
    return naive, state_counts


def test_naive_and_state_counts_are_the_seeds(lesson_pack: DomainPack, scripted_turns: list[ScriptedTurn]) -> None:
    naive, state_counts = token_columns(lesson_pack, scripted_turns)
    assert naive == SEED_NAIVE
    assert state_counts == SEED_STATE


def test_naive_prompt_text_is_the_seeds(pack: DomainPack, scripted_turns: list[ScriptedTurn]) -> None:
    c1 = [turn.user_utterance for turn in scripted_turns if turn.conversation_id == "C1"]
    assert prompt_text(naive_messages(pack.spec.prompts.naive_system, c1)) == SEED_NAIVE_C1_T4


def test_special_tokens_count_as_one() -> None:
    tokenizer = qwen_tokenizer()
    assert tokenizer("<|im_start|><|im_end|>", add_special_tokens=False)["input_ids"] == [151644, 151645]


def test_default_system_prompt_is_qwens() -> None:
    assert prompt_text([{"role": "user", "content": "hi"}]).startswith(
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
    )
