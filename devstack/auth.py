"""Staff sign-in offline: a local token issuer and a JWT authorizer that checks tokens as API Gateway's does.

In AWS, Cognito issues the staff's tokens and the HTTP API's JWT authorizer checks each one (the
signature against the pool's JWKS, the issuer, the audience or client id, the expiry) before the staff
function runs; the authorizer passes the claims on in `requestContext.authorizer.jwt.claims`, every
value a string (a list claim such as `cognito:groups` as "[a b]").

Here the issuer is a signing key of devstack's own (RS256), kept in DEVSTACK_HOME (default
`.devstack/` in the project, git-ignored), so `devstack token` and `devstack serve` in two terminals
share it. The key never leaves this machine and signs nothing but local tokens. PyJWT does the
cryptography.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from devstack import PROJECT_ROOT

ISSUER = "https://devstack.invalid/enrollment-desk-staff"
"""The local issuer (in AWS: https://cognito-idp.<region>.amazonaws.com/<user pool id>)."""
CLIENT_ID = "devstack-staff-console"
"""The local app client's id (in AWS: the user pool client's id, the authorizer's audience)."""
STAFF_GROUP = "desk-staff"
TOKEN_LIFETIME_S = 3600  # Cognito's default access-token lifetime
KEY_FILE = "staff-signing-key.pem"
_SUBJECTS = uuid.UUID("2f1c1d7e-93a4-4c55-9d51-4d6a4f0e5b11")  # names → stable subjects, like Cognito's sub


def devstack_home() -> Path:
    return Path(os.environ.get("DEVSTACK_HOME") or PROJECT_ROOT / ".devstack")


def subject_for(name: str) -> str:
    """The stable subject (`sub`) of a local staff user name."""
    return str(uuid.uuid5(_SUBJECTS, name))


@dataclass(frozen=True)
class LocalIssuer:
    """devstack's signing key: it issues staff tokens and publishes its JWKS."""

    private_key: rsa.RSAPrivateKey
    key_id: str

    @classmethod
    def load(cls, home: Path | None = None) -> LocalIssuer:
        """The key in `home` (DEVSTACK_HOME), made on first use: written whole, readable by its owner only."""
        folder = home or devstack_home()
        path = folder / KEY_FILE
        if not path.exists():
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            pem = key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
            draft = folder / f".{KEY_FILE}.{os.getpid()}"
            draft.write_bytes(pem)
            draft.chmod(0o600)
            with contextlib.suppress(FileExistsError):  # another process made it first: use theirs
                os.link(draft, path)
            draft.unlink()
        return cls._from_pem(path.read_bytes(), str(path))

    @classmethod
    @functools.lru_cache(maxsize=4)
    def _from_pem(cls, pem: bytes, where: str) -> LocalIssuer:
        """The issuer a key file's bytes make, parsed once per process for the same bytes: every local stack
        loads it, and parsing and checking an RSA key is about 45 ms of CPU. Other bytes are parsed afresh."""
        loaded = serialization.load_pem_private_key(pem, password=None)
        if not isinstance(loaded, rsa.RSAPrivateKey):
            raise ValueError(f"{where} does not hold an RSA private key")
        public = loaded.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return cls(private_key=loaded, key_id=uuid.uuid5(_SUBJECTS, public.hex()).hex[:16])

    def jwks(self) -> dict[str, Any]:
        """The public key set, as a user pool publishes it at /.well-known/jwks.json."""
        public: dict[str, Any] = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.private_key.public_key()))
        return {"keys": [{**public, "kid": self.key_id, "alg": "RS256", "use": "sig"}]}

    def token(
        self,
        name: str,
        *,
        groups: Iterable[str] = (STAFF_GROUP,),
        issuer: str = ISSUER,
        client_id: str = CLIENT_ID,
        lifetime_s: int = TOKEN_LIFETIME_S,
        now: float | None = None,
    ) -> str:
        """An access token shaped like Cognito's for the user `name` (sub, username, groups, client_id)."""
        issued = int(now if now is not None else time.time())
        claims: dict[str, Any] = {
            "sub": subject_for(name),
            "iss": issuer,
            "client_id": client_id,
            "token_use": "access",
            "scope": "openid",
            "username": name,
            "iat": issued,
            "auth_time": issued,
            "exp": issued + lifetime_s,
            "jti": str(uuid.uuid4()),
        }
        chosen = list(groups)
        if chosen:
            claims["cognito:groups"] = chosen
        return jwt.encode(claims, self.private_key, algorithm="RS256", headers={"kid": self.key_id})


class JwtAuthorizer:
    """API Gateway's JWT authorizer: a token is accepted when its signature verifies against a key of the
    JWKS (by `kid`, RS256), its issuer is the one configured, its `aud` (or, without one, its
    `client_id`) is one of the audience, and it is within its lifetime. Accepted, its claims go on as
    strings; refused: 401."""

    def __init__(self, jwks: Mapping[str, Any], *, issuer: str = ISSUER, audience: Iterable[str] = (CLIENT_ID,)):
        self._keys = jwt.PyJWKSet.from_dict(dict(jwks))
        self._issuer = issuer
        self._audience = frozenset(audience)

    def claims(self, authorization: str | None) -> dict[str, str] | None:
        """The claims of the bearer token in an Authorization header, as the gateway passes them on; None
        when there is no token or it does not pass."""
        if not authorization:
            return None
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip() if scheme.lower() == "bearer" else authorization.strip()
        try:
            kid = jwt.get_unverified_header(token).get("kid")
            key = next((k for k in self._keys.keys if k.key_id == kid), None)
            if key is None:
                return None
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=["RS256"],
                issuer=self._issuer,
                options={"require": ["exp", "iss", "sub"], "verify_aud": False},
            )
        except jwt.PyJWTError:
            return None
        # As API Gateway: `aud` decides when the token has one; only a token without one is judged by
        # its `client_id` (an access token from Cognito carries client_id and no aud).
        if "aud" in claims:
            audiences = claims["aud"]
            offered = {audiences} if isinstance(audiences, str) else set(map(str, audiences))
        else:
            offered = {str(claims.get("client_id", ""))}
        if not self._audience & offered:
            return None
        return {name: _as_gateway_string(value) for name, value in claims.items()}


def _as_gateway_string(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "[" + " ".join(str(item) for item in value) + "]"
    return str(value)
