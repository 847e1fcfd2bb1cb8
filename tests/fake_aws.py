"""Fake credentials for moto, set the one way every test that talks to a mocked AWS sets them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from moto import mock_aws

FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
}


def use_fake_credentials(monkeypatch: pytest.MonkeyPatch, region: str) -> None:
    """Credentials botocore accepts and moto ignores, and the region, so no real account is ever asked."""
    for name, value in {**FAKE_CREDENTIALS, "AWS_DEFAULT_REGION": region}.items():
        monkeypatch.setenv(name, value)


@contextmanager
def mocked_aws(monkeypatch: pytest.MonkeyPatch, region: str) -> Iterator[None]:
    """moto's AWS, with the fake credentials and the region set."""
    use_fake_credentials(monkeypatch, region)
    with mock_aws():
        yield
