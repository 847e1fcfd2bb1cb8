"""moto's KMS without an RSA key made for every symmetric key.

moto builds each KMS key with a private key for Sign and GetPublicKey, whatever its spec: a symmetric key
(SYMMETRIC_DEFAULT, what template.yaml's ContactKey is) gets a fresh RSA-2048 key it never uses, since
moto seals and opens with the key's own material. Making one takes about 50 ms of CPU, a third of a local
stack's start, and every stack makes the contact key. Within `symmetric_keys_share_one_unused_rsa_key()`
every symmetric key gets the same RSA key, made once per process; an asymmetric key still gets its own,
and encryption is moto's, unchanged. moto is pinned (requirements-test.txt); a release that no longer
builds keys through `moto.kms.models.generate_private_key` fails the patch at once, by name.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import moto.kms.models as kms_models
from moto.kms.utils import generate_private_key as _generate_private_key

SYMMETRIC = "SYMMETRIC_DEFAULT"


@functools.cache
def _the_unused_key() -> Any:
    return _generate_private_key(SYMMETRIC)


def _private_key(key_spec: str) -> Any:
    return _the_unused_key() if key_spec == SYMMETRIC else _generate_private_key(key_spec)


@contextmanager
def symmetric_keys_share_one_unused_rsa_key() -> Iterator[None]:
    """Within: a symmetric KMS key built by moto reuses one RSA key it never uses (see the module's note)."""
    with mock.patch.object(kms_models, "generate_private_key", _private_key):
        yield
