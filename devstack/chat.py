"""Talk to the assistant in the terminal, through the same pipeline as a deployment, on moto.

Each line you type is one turn. You see the reply, the action, the slots and whether a screen fired.
"""

from __future__ import annotations

from typing import TextIO

from devstack.stack import local_stack
from dialogue.pack import get_pack

PROMPT = "you> "
HELP = "Type a message and press Enter. An empty line or Ctrl-D ends the chat."


def run_chat(
    realizer: str, stdin: TextIO, stdout: TextIO, *, model: str | None = None, revision: str | None = None
) -> int:
    with local_stack(realizer=realizer, model=model, revision=revision) as stack:
        conversation_id = stack.call_api("POST", "/conversations").body["conversation_id"]
        print(f"{get_pack().spec.domain.name} (realizer: {realizer}). {HELP}", file=stdout)
        while True:
            print(PROMPT, end="", file=stdout, flush=True)
            line = stdin.readline()
            if not line or not line.strip():
                print("", file=stdout)
                return 0
            posted = stack.call_api("POST", f"/conversations/{conversation_id}/turns", {"text": line.strip()})
            if posted.status not in (200, 202):
                print(f"desk> ({posted.body['message']})", file=stdout)
                continue
            stack.drain()
            shown = stack.call_api("GET", f"/conversations/{conversation_id}/turns/{posted.body['turn_id']}").body
            print(f"desk> {shown['reply']}", file=stdout)
            turn = stack.stored_turn(conversation_id, posted.body["turn_id"])
            slots = ", ".join(f"{name}={value}" for name, value in turn["slots"].items())
            if turn["reply_source"] == "model":
                fired = ", ".join(turn["screens_fired"]) or "none"
                screen = f"screens fired: {fired}; {turn['reply_screen']}; human check {turn['human_review']}"
            else:
                screen = "fixed text, no model call"
            print(f"      [{turn['action']}] {slots} | {screen}", file=stdout)
