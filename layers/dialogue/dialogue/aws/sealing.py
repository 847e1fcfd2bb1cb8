"""The contact form's seal (dialogue.contact.Sealer) on the stack's KMS key.

KMS encrypts the form's few hundred bytes itself (under its 4 KB limit), with the conversation id as the
encryption context: sealed bytes open for their own conversation only, and every Decrypt lands in
CloudTrail with that context. Only the turn API may encrypt and only the staff API may decrypt (the
template's key policy and the functions' roles). Errors never carry the plaintext.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from botocore.exceptions import BotoCoreError, ClientError

from dialogue.errors import SealUnavailable

PURPOSE = "resident-contact"


class KmsSealer:
    """Seals with one KMS key, bound to the conversation by the encryption context."""

    def __init__(self, client: Any, key_id: str) -> None:
        self._client = client
        self._key_id = key_id

    @staticmethod
    def _context(conversation_id: UUID) -> dict[str, str]:
        return {"conversation_id": str(conversation_id), "purpose": PURPOSE}

    def seal(self, conversation_id: UUID, plaintext: bytes) -> bytes:
        try:
            answer = self._client.encrypt(
                KeyId=self._key_id, Plaintext=plaintext, EncryptionContext=self._context(conversation_id)
            )
        except (ClientError, BotoCoreError):
            raise SealUnavailable() from None
        return bytes(answer["CiphertextBlob"])

    def unseal(self, conversation_id: UUID, sealed: bytes) -> bytes:
        try:
            answer = self._client.decrypt(
                KeyId=self._key_id, CiphertextBlob=sealed, EncryptionContext=self._context(conversation_id)
            )
        except (ClientError, BotoCoreError):
            raise SealUnavailable() from None
        return bytes(answer["Plaintext"])
