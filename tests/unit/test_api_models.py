"""The turn API's error codes: every refusal the core can raise has a documented code."""

from __future__ import annotations

from typing import get_args

from api_models import ErrorBody, ErrorCode
from dialogue import errors


def dialogue_errors() -> set[str]:
    found = set()
    pending = [errors.DialogueError]
    while pending:
        cls = pending.pop()
        for sub in cls.__subclasses__():
            found.add(sub.__name__)
            pending.append(sub)
    return found


def test_every_dialogue_error_is_a_documented_code() -> None:
    codes = set(get_args(ErrorCode))
    assert dialogue_errors() and dialogue_errors() <= codes


def test_an_undocumented_code_is_refused() -> None:
    import pydantic
    import pytest

    with pytest.raises(pydantic.ValidationError):
        ErrorBody(error="SomethingElse", message="No.")  # type: ignore[arg-type]
