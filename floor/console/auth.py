"""Log-in by a challenge signed with the supervisor's own key, and the sessions it opens (docs/console.md).

The browser holds a non-extractable Ed25519 key (WebCrypto, IndexedDB); the server keeps only public keys. To log
in, the browser asks for a challenge for its key id, signs the canonical JSON of {purpose, challenge, key_id,
origin} and sends the signature: a challenge is used once, for that key only, within CHALLENGE_SECONDS, and
naming the origin stops a page elsewhere from relaying a log-in it had the key sign. A session is a random token in
an HttpOnly, SameSite=Strict cookie with its own CSRF token; it ends `session_minutes` after log-in whatever happens
meanwhile, or at log-out. The clock is passed in (pure: tests step it).
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from cryptography.exceptions import InvalidSignature

from controller.config.keys import decode_public_key

PURPOSE = "tablectl-console-login"
CHALLENGE_SECONDS = 120
MAX_CHALLENGES = 10_000  # outstanding at once: a flood of requests cannot grow the table without bound


def login_bytes(challenge: str, key_id: str, origin: str) -> bytes:
    """What the browser signs to log in: sorted keys, no spaces, UTF-8 (as the command envelope's canonical form)."""
    body = {"purpose": PURPOSE, "challenge": challenge, "key_id": key_id, "origin": origin}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


@dataclass(frozen=True, slots=True)
class Session:
    token: str
    csrf: str
    key_id: str
    role: str
    expires: datetime


@dataclass(frozen=True, slots=True)
class KeyEntry:
    key_id: str
    role: str
    public_key: str


class LoginRefused(Exception):
    """Why a log-in is refused, in words the person at the browser can act on."""


class Sessions:
    def __init__(self, minutes: int) -> None:
        self.lifetime = timedelta(minutes=minutes)
        self._challenges: dict[str, tuple[str, datetime]] = {}
        self._sessions: dict[str, Session] = {}

    def challenge(self, key_id: str, now: datetime) -> str:
        self._prune(now)
        if len(self._challenges) >= MAX_CHALLENGES:
            raise LoginRefused("too many log-ins in progress: try again in a minute")
        c = secrets.token_urlsafe(32)
        self._challenges[c] = (key_id, now + timedelta(seconds=CHALLENGE_SECONDS))
        return c

    def login(
        self,
        key: KeyEntry | None,
        key_id: str,
        challenge: str,
        signature: str,
        origin: str,
        now: datetime,
        pending: bool = True,
    ) -> Session:
        """A session for `key` (None: no approved key has that id; `pending`: an enrolment of it awaits approval)."""
        issued = self._challenges.pop(challenge, None)  # used once, whatever the outcome
        if issued is None or issued[1] < now:
            raise LoginRefused("the challenge is unknown or expired: ask for a new one (reload the page)")
        if issued[0] != key_id:
            raise LoginRefused("the challenge was issued for another key")
        if key is None and not pending:
            raise LoginRefused(
                f"key {key_id!r} is not enrolled on this floor (a new floor, or its enrolment was rejected): "
                "make a new key in this browser (Make a new key) and enrol it"
            )
        if key is None:
            raise LoginRefused(
                f"key {key_id!r} is not approved on this floor: an administrator approves it with "
                f"`tablectl floor --config FLOOR.toml console approve {key_id}`"
            )
        try:
            sig = base64.b64decode(signature, validate=True)
        except (binascii.Error, ValueError):
            raise LoginRefused("the signature is not base64") from None
        try:
            decode_public_key(key.public_key).verify(sig, login_bytes(challenge, key_id, origin))
        except (InvalidSignature, ValueError):
            raise LoginRefused(
                "the signature does not verify with the approved public key: this browser holds another key"
            ) from None
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32), key_id, key.role, now + self.lifetime)
        self._sessions[session.token] = session
        return session

    def get(self, token: str | None, now: datetime) -> Session | None:
        if not token:
            return None
        s = self._sessions.get(token)
        if s is None:
            return None
        if s.expires <= now:
            del self._sessions[token]
            return None
        return s

    def logout(self, token: str) -> Session | None:
        return self._sessions.pop(token, None)

    def _prune(self, now: datetime) -> None:
        for c in [c for c, (_, until) in self._challenges.items() if until < now]:
            del self._challenges[c]
        for t in [t for t, s in self._sessions.items() if s.expires <= now]:
            del self._sessions[t]
