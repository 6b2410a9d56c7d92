"""A console session as a browser gets one: enrol a key, approve it as an administrator does, log in by signing the
challenge (the console's clock and stream-refusal tests share it)."""

from __future__ import annotations

import base64
import json
import urllib.request
from http.cookiejar import CookieJar
from typing import Any

import psycopg
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.supervisor.envelope import public_key_b64
from floor.console.auth import login_bytes
from floor.console.plumbing import COOKIE


def log_in(origin: str, floor_dsn: str) -> str:
    """Enrol a key, approve it as an administrator does, log in by signing the challenge: the session's token."""
    key = Ed25519PrivateKey.generate()
    jar = CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))

    def post(path: str, body: dict[str, str]) -> dict[str, Any]:
        req = urllib.request.Request(
            origin + path,
            data=json.dumps(body).encode(),
            headers={"Origin": origin, "Content-Type": "application/json"},
            method="POST",
        )
        with opener.open(req, timeout=30) as r:
            reply: dict[str, Any] = json.loads(r.read())
            return reply

    post("/api/enrol", {"key_id": "sup", "role": "supervisor", "public_key": public_key_b64(key)})
    with psycopg.connect(floor_dsn) as conn:
        conn.execute("UPDATE console_keys SET approved_at = now() WHERE key_id = 'sup'")
    challenge = post("/api/login/challenge", {"key_id": "sup"})["challenge"]
    signature = base64.b64encode(key.sign(login_bytes(challenge, "sup", origin))).decode()
    post("/api/login", {"key_id": "sup", "challenge": challenge, "signature": signature})
    [token] = [c.value for c in jar if c.name == COOKIE and c.value is not None]
    return token
