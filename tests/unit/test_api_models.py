"""The desk's errors: one table (dialogue.errors) holds every code the APIs send, with its status, whether
to retry and its sentences; the APIs answer from it and the pages read it from /config.json."""

from __future__ import annotations

import ast
import inspect
import json
from http import HTTPStatus
from typing import get_args

import pydantic
import pytest
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

import staff_api
import turn_api
from api_models import MAX_TEXT_CHARS, ErrorBody, ErrorCode
from dialogue import errors
from dialogue.aws import api
from dialogue.errors import ERRORS, REQUEST_ERRORS, UNCODED, pages_errors


def dialogue_errors() -> set[type[errors.DialogueError]]:
    found = set()
    pending = [errors.DialogueError]
    while pending:
        cls = pending.pop()
        for sub in cls.__subclasses__():
            found.add(sub)
            pending.append(sub)
    return found


def test_every_dialogue_error_is_a_row_of_the_table_with_a_status_and_a_sentence() -> None:
    refusals = dialogue_errors()
    assert len(refusals) >= 20
    for cls in refusals:
        kind = ERRORS[cls.__name__]
        assert kind == cls.kind(), cls
        assert 400 <= kind.status < 600 and HTTPStatus(kind.status) is cls.status, cls
        assert kind.message.endswith(".") and cls().message == kind.message, cls
        assert kind.message.count(". ") == 0 and kind.for_pages()["message"].count(". ") <= 1, cls


def test_every_code_the_resolvers_send_is_a_row_of_the_table() -> None:
    """The validation codes both resolvers choose, and the staff API's cursor and unknown routes."""
    sent = {"route_not_found"}
    for module in (turn_api, staff_api):
        returns = [node for node in ast.walk(ast.parse(inspect.getsource(module._validation_code)))
                   if isinstance(node, ast.Return)]  # fmt: skip
        for ret in returns:
            chosen = [ret.value.body, ret.value.orelse] if isinstance(ret.value, ast.IfExp) else [ret.value]
            sent |= {node.value for node in chosen if isinstance(node, ast.Constant)}
    assert {"invalid_body", "invalid_text_length", "invalid_cursor", "invalid_decision", "invalid_query"} <= sent
    assert sent == set(REQUEST_ERRORS)
    for code in sent:
        kind = ERRORS[code]
        assert kind.status in (400, 404, 422) and not kind.retry and kind.message.endswith("."), code


def test_error_code_is_the_table_and_nothing_else() -> None:
    assert set(get_args(ErrorCode)) == set(ERRORS)
    assert not set(UNCODED) & set(ERRORS), "the pages' answers without a code are not codes the APIs send"
    with pytest.raises(pydantic.ValidationError):
        ErrorBody(error="SomethingElse", message="No.")


def test_the_table_words_the_text_limit_the_models_hold() -> None:
    from dialogue.desk import StaffText

    limit = StaffText.model_json_schema()["properties"]["text"]["maxLength"]
    assert f" {MAX_TEXT_CHARS} " in ERRORS["invalid_text_length"].message
    assert f" {limit} " in ERRORS["invalid_text_length"].message


def test_a_refusal_is_answered_from_the_table() -> None:
    for cls, headers in (
        (errors.TurnLimitReached, None),
        (errors.ConcurrentTurnConflict, {"Retry-After": "1"}),
        (errors.StoreUnavailable, {"Retry-After": "1"}),
    ):
        response = api.error_response(cls.__name__, cls())
        assert response.status_code == ERRORS[cls.__name__].status
        assert response.body == {"error": cls.__name__, "message": cls.message}
        assert (response.headers or {}).get("Retry-After") == (headers or {}).get("Retry-After")
    capped = api.error_response("GeneratedTurnLimitReached", errors.GeneratedTurnLimitReached(retry_after=731))
    assert capped.status_code == 429 and capped.headers["Retry-After"] == "731"
    refused = api.refusal_response(errors.NotSignedIn())
    assert refused["statusCode"] == 401 and json.loads(refused["body"])["message"] == errors.NotSignedIn.message


def test_a_validation_error_takes_the_tables_status_and_sentence() -> None:
    problem = RequestValidationError([{"loc": ("body", "text"), "type": "string_too_long", "input": "x"}])
    code = turn_api._validation_code(list(problem.errors()))
    assert code == "invalid_text_length"
    response = api.error_response(code)
    assert response.status_code == 422 and response.body["message"] == ERRORS[code].message


def test_the_pages_get_the_table() -> None:
    """/config.json, as devstack serves it and as `make publish-pages` writes it, holds the table."""
    from devstack.pages import local_config

    served = json.loads(json.dumps(local_config()))["errors"]
    assert served == pages_errors()
    assert set(served) == set(ERRORS) | set(UNCODED)
    for code, row in served.items():
        kind = {**ERRORS, **UNCODED}[code]
        assert row == {"status": kind.status, "retry": kind.retry, "message": kind.shown or kind.message}, code
        assert row["message"], code


def test_a_limit_never_reads_as_busy() -> None:
    """The turn limit and the cap on worded replies say what they are; only a lost race reads as busy."""
    table = pages_errors()
    busy = table["ConcurrentTurnConflict"]["message"]
    assert busy == errors.BUSY and table["ConcurrentTurnConflict"]["retry"]
    limit = table["TurnLimitReached"]
    assert limit["message"] == errors.TurnLimitReached.message != busy
    assert not limit["retry"], "sending again can never work: the way on is a new conversation"
    capped = table["GeneratedTurnLimitReached"]
    assert capped["message"] == errors.GeneratedTurnLimitReached.message != busy
    assert capped["status"] == 429 and capped["retry"]
    assert capped["message"] != table["throttled"]["message"]
