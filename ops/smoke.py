"""`make smoke`: one resident turn through the public turn API, read until its reply is final.

A deployed stack's API is reached as residents reach it, at its PagesUrl (CloudFront and its WAF): the
execute-api endpoint behind it answers only requests that came through CloudFront.

    python -m ops.smoke --stack enrollment-desk [--region us-east-1] [--pack NAME] [--timeout 1200] [--require-model]
    python -m ops.smoke --api-url http://127.0.0.1:3000 [--pack NAME] [--timeout 1200] [--require-model]

It does what the resident chat does: creates a conversation, posts the desk's first scripted turn that
expects a generated action (with its own Idempotency-Key), then reads the turn until it is final. Exit
0 once a final reply arrives; exit 1 with one sentence on an HTTP error, a network error, a turn the
desk answered with fixed text, or no final reply within --timeout. With --require-model
(`make smoke REQUIRE_MODEL=1`) a final reply the model did not word fails too: the fixed fallback, or a
reply whose kind the slots cannot tell; so a broken realizer fails the smoke instead of passing it.

What a client can tell: a turn's answer (api_models.TurnDetail) holds its status and reply and nothing
else, so a draft the screens held and a deadline that passed before the realizer answered look the
same: both show the desk's fixed fallback. The smoke compares the reply with that text (the pack's, for
the turn's action and the conversation's slots): a different reply was worded by the model and passed
the screens; the same text is a fallback, or a realizer that words it exactly so (devstack's `template`
engine does, for requests and confirms).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO, TypeVar

from pydantic import BaseModel, ValidationError

from api_models import ConversationCreated, ConversationDetail, TurnAccepted, TurnDetail
from dialogue.actions import Action, TurnStatus
from dialogue.pack import DomainPack, PackError, default_pack_dir, get_pack, pack_dir_for, read_scripted_turns
from dialogue.replies import cold_reply_line, fixed_reply
from dialogue.state import DialogueState
from ops.aws import AWS_ERRORS, aws_reason, report_failure

DEFAULT_TIMEOUT_S = 1200.0
REQUEST_TIMEOUT_S = 15.0
FIRST_POLL_S = 1.0
LONGEST_POLL_S = 10.0
SCRIPTED_TURNS_FILE = "scripted_turns.csv"

Body = TypeVar("Body", bound=BaseModel)


class SmokeFailure(Exception):
    """Why no final reply was seen, as one sentence without its full stop."""


@dataclass(frozen=True)
class Outcome:
    """The final reply, and whether it is the desk's fixed fallback (None: the slots did not say)."""

    reply: str
    action: Action
    is_fallback: bool | None


class TurnApi:
    """The public turn API at a base URL, called as the chat page calls it: JSON in, JSON out."""

    def __init__(self, base_url: str, timeout_s: float = REQUEST_TIMEOUT_S) -> None:
        self.base_url = base_url.rstrip("/")
        self._timeout_s = timeout_s

    def call(
        self,
        method: str,
        path: str,
        answer: type[Body],
        body: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> tuple[int, Body]:
        """The status and the parsed body of a 2xx answer; any other answer is a SmokeFailure."""
        url = self.base_url + path
        sent = {"Accept": "application/json", **(headers or {})}
        data = None
        if body is not None:
            sent["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        request = urllib.request.Request(url, data=data, method=method, headers=sent)
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:
                status, text = response.status, response.read()
        except urllib.error.HTTPError as error:
            raise SmokeFailure(f"{method} {url} answered HTTP {error.code}{_error_code(error.read())}") from None
        except (urllib.error.URLError, OSError) as error:
            raise SmokeFailure(f"{method} {url} did not answer ({_network_reason(error)})") from None
        try:
            return status, answer.model_validate_json(text)
        except ValidationError:
            shape = answer.__name__
            raise SmokeFailure(f"{method} {url} answered HTTP {status} with a body that is no {shape}") from None


def _error_code(text: bytes) -> str:
    """` (code)` from the API's error body, when it has one. Its codes never repeat what was sent."""
    try:
        code = json.loads(text).get("error")
    except (ValueError, AttributeError):
        return ""
    return f" ({code})" if isinstance(code, str) and code.isidentifier() else ""


def _network_reason(error: OSError) -> str:
    reason = error.reason if isinstance(error, urllib.error.URLError) else error
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror.lower()
    return str(reason).rstrip(" .") or type(reason).__name__


def first_generated_turn(pack_dir: Path, pack: DomainPack) -> str:
    """The utterance of the pack's first scripted turn 1 that expects a generated action (request, confirm,
    inform): sent to a new conversation, it reaches that action, as the scripted replay checks."""
    for turn in read_scripted_turns(pack_dir / SCRIPTED_TURNS_FILE, pack.frame):
        if turn.turn_id == 1 and turn.expected_action is not None and turn.expected_action.uses_model:
            return turn.user_utterance
    raise SmokeFailure(f"{pack_dir / SCRIPTED_TURNS_FILE} has no first turn that expects a generated action")


def is_fixed_fallback(reply: str, action: Action, slots: Mapping[str, str], pack: DomainPack) -> bool | None:
    """Whether `reply` is the pack's fixed fallback for `action` and `slots`; None if the slots do not fit
    the pack's frame (the stack runs another desk)."""
    try:
        state = DialogueState.from_slots(pack.frame, slots)
    except ValueError:
        return None
    fallback = fixed_reply(action, state, pack).strip()
    # A turn that found the realizer cold shows the fallback with the desk's line that a person will check it.
    return reply.strip() in (fallback, f"{fallback} {cold_reply_line(pack)}".strip())


def run_smoke(
    api: TurnApi,
    utterance: str,
    pack: DomainPack,
    *,
    timeout_s: float,
    out: TextIO,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Outcome:
    """Create a conversation, post `utterance`, read the turn until it is final. Prints one line per step
    and per read (seconds and status); the reply itself only once, when final."""
    started = clock()

    def elapsed() -> float:
        return clock() - started

    _, created = api.call("POST", "/conversations", ConversationCreated)
    conversation = created.conversation_id
    print(f"smoke: {elapsed():.1f} s: conversation {conversation} created", file=out, flush=True)
    status, accepted = api.call(
        "POST",
        f"/conversations/{conversation}/turns",
        TurnAccepted,
        body={"text": utterance},
        headers={"Idempotency-Key": str(uuid.uuid4())},
    )
    action = accepted.action
    if status != 202 or accepted.status is not TurnStatus.PENDING:
        raise SmokeFailure(
            f"the desk answered the scripted turn with {action} (HTTP {status}), not a generated action: "
            f"it does not run the {pack.spec.domain.name} (--pack names the desk it runs)"
        )
    turn = accepted.turn_id
    print(f"smoke: {elapsed():.1f} s: turn {turn} accepted ({action}, {accepted.status})", file=out, flush=True)
    pause = FIRST_POLL_S
    while True:
        _, detail = api.call("GET", f"/conversations/{conversation}/turns/{turn}", TurnDetail)
        print(f"smoke: {elapsed():.0f} s: {detail.status}", file=out, flush=True)
        if detail.status is TurnStatus.FINAL:
            break
        left = timeout_s - elapsed()
        if left <= 0:
            raise SmokeFailure(
                f"turn {turn} was still pending after {timeout_s:.0f} s, though its reply deadline should have "
                "made it final: look at the screen function and the screen queue"
            )
        sleep(min(pause, left))
        pause = min(pause * 2, LONGEST_POLL_S)
    if detail.reply is None:
        raise SmokeFailure(f"turn {turn} is final but its answer holds no reply")
    _, record = api.call("GET", f"/conversations/{conversation}", ConversationDetail)
    fallback = is_fixed_fallback(detail.reply, action, record.slots, pack)
    return Outcome(reply=detail.reply, action=action, is_fallback=fallback)


def describe_outcome(outcome: Outcome, pack: DomainPack) -> str:
    """One sentence saying which kind of reply arrived, as far as the public API lets a client tell."""
    if outcome.is_fallback is None:
        return f"the reply's kind is unknown: the conversation's slots do not fit the {pack.spec.domain.name}."
    if not outcome.is_fallback:
        return (
            "worded by the model: the reply differs from the desk's fixed fallback, so the realizer answered "
            "and the screens passed it."
        )
    return (
        f"the desk's fixed fallback for {outcome.action}: the realizer was cold (its fallback comes in seconds, "
        "with the line that a person will check it; a cold start takes 10-15 minutes) or switched off, or the "
        "reply deadline passed before it answered, or the screens held its draft, or the realizer words it "
        "exactly so; the public API does not say which."
    )


def stack_api(stack: str, region: str | None) -> tuple[str, str | None]:
    """The `PagesUrl` (the API's public address, through CloudFront) and `DomainPack` outputs of a
    deployed stack."""
    import boto3

    try:
        cloudformation = boto3.Session(region_name=region).client("cloudformation")
        (described,) = cloudformation.describe_stacks(StackName=stack)["Stacks"]
    except AWS_ERRORS as error:
        raise SmokeFailure(f"reading the outputs of the stack {stack} failed ({aws_reason(error)})") from None
    outputs = {output["OutputKey"]: output["OutputValue"] for output in described.get("Outputs", [])}
    if "PagesUrl" not in outputs:
        raise SmokeFailure(f"the stack {stack} has no PagesUrl output: is it this project's stack, fully deployed?")
    return outputs["PagesUrl"], outputs.get("DomainPack")


def _timeout(value: str) -> float:
    seconds = float(value)
    if not 1 <= seconds <= 24 * 3600:
        raise argparse.ArgumentTypeError("choose a number of seconds from 1 to 86400")
    return seconds


def main(argv: list[str] | None = None, out: TextIO | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ops.smoke", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--stack", help="a deployed stack's name: its PagesUrl and DomainPack outputs are read")
    target.add_argument("--api-url", help="the turn API's base URL instead (devstack serve's, say)")
    parser.add_argument("--region", help="the stack's region (default: the AWS CLI's)")
    parser.add_argument(
        "--pack",
        help="the desk the API runs: a pack folder or a name under data/ "
        "(default: the stack's DomainPack output, else data/packs.toml's)",
    )
    parser.add_argument("--timeout", type=_timeout, default=DEFAULT_TIMEOUT_S,
                        help=f"seconds to wait for the final reply (default: {DEFAULT_TIMEOUT_S:.0f})")  # fmt: skip
    parser.add_argument(
        "--require-model",
        action="store_true",
        help="fail (exit 1) unless the model worded the reply: the fixed fallback fails (make smoke REQUIRE_MODEL=1)",
    )
    args = parser.parse_args(argv)
    shown = out or sys.stdout
    try:
        api_url, stack_pack = stack_api(args.stack, args.region) if args.stack else (args.api_url, None)
        desk = args.pack or stack_pack
        pack_dir = pack_dir_for(desk) if desk else default_pack_dir()
        pack = get_pack(pack_dir)
        utterance = first_generated_turn(pack_dir, pack)
        print(f"smoke: the turn API at {api_url}, the {pack.spec.domain.name}", file=shown, flush=True)
        outcome = run_smoke(TurnApi(api_url), utterance, pack, timeout_s=args.timeout, out=shown)
    except (SmokeFailure, PackError) as error:
        return report_failure("smoke", error)
    print(f"smoke: reply: {outcome.reply}", file=shown)
    print(f"smoke: {describe_outcome(outcome, pack)}", file=shown)
    if args.require_model and outcome.is_fallback is not False:
        print(f"smoke: {model_required(outcome, pack)}", file=sys.stderr)
        return 1
    return 0


def model_required(outcome: Outcome, pack: DomainPack) -> str:
    """The one line --require-model fails with: the reply is not one the model worded, or may not be."""
    if outcome.is_fallback is None:
        return (
            f"FAIL (--require-model): whether the model worded the reply is unknown: the conversation's slots do not "
            f"fit the {pack.spec.domain.name}."
        )
    return (
        f"FAIL (--require-model): the reply is the desk's fixed fallback for {outcome.action}, not one the model "
        "worded: run it again once a realizer task is up (10-15 minutes from a cold start); if it fails again, "
        "the staff console's review queue shows the turn's draft and the screens that fired (deadline: the "
        "realizer did not answer; read its log group)."
    )


if __name__ == "__main__":
    sys.exit(main())
