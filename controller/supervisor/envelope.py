"""The signed command envelope: its canonical form, Ed25519 signing and verification, and reading one off the
wire (docs/commands.md, "Canonical form").

The table and `tablectl command send` both sign and check the same bytes, `canonical_bytes`; the parsing here
refuses what two JSON libraries could read two ways (a key twice, NaN), so the signer and the table agree on
what was signed.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from controller.core import strictjson
from controller.mqtt.contract import SupervisorCommand

if TYPE_CHECKING:  # imported where used: a table that names no supervisor key never loads cryptography
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

# The envelope's fields besides `args`, all required.
REQUIRED = ("command_id", "table_id", "verb", "issued_at", "nonce", "key_id", "signature")


def canonical_bytes(body: Mapping[str, Any]) -> bytes:
    """What is signed: the command's JSON object without `signature`, keys sorted at every level, no spaces,
    UTF-8 (a lone surrogate escaped in the JSON is kept as is, so any parsed object has one canonical form)."""
    unsigned = {k: v for k, v in body.items() if k != "signature"}
    text = json.dumps(unsigned, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.encode("utf-8", "surrogatepass")


def iso_utc(t: datetime) -> str:
    return t.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def sign_command(
    key: Ed25519PrivateKey,
    *,
    table_id: str,
    verb: str,
    key_id: str,
    args: Mapping[str, Any] | None = None,
    issued_at: datetime | None = None,
    command_id: str | None = None,
    nonce: str | None = None,
) -> dict[str, Any]:
    """A complete command envelope, signed. Fresh command_id and nonce unless given (tests give them)."""
    body: dict[str, Any] = {
        "command_id": command_id or uuid.uuid4().hex,
        "table_id": table_id,
        "verb": verb,
        "args": dict(args or {}),
        "issued_at": iso_utc(issued_at or datetime.now(UTC)),
        "nonce": nonce or secrets.token_hex(16),
        "key_id": key_id,
    }
    body["signature"] = base64.b64encode(key.sign(canonical_bytes(body))).decode("ascii")
    return body


def public_key_b64(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """The raw 32-byte public key in base64, as [[supervisors]] public_key takes it."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    public = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return base64.b64encode(public.public_bytes(Encoding.Raw, PublicFormat.Raw)).decode("ascii")


def signature_problem(obj: Mapping[str, Any], cmd: SupervisorCommand, public: Ed25519PublicKey) -> str | None:
    """Why the envelope `obj` (as parsed, `cmd` as validated) is not signed by `public`, or None when it is."""
    try:
        sig = base64.b64decode(cmd.signature, validate=True)
    except (binascii.Error, ValueError):
        return "the signature is not base64: sign the canonical form and send the signature in base64"
    if len(sig) != 64:
        return f"the signature is {len(sig)} bytes, an Ed25519 signature has 64"
    from cryptography.exceptions import InvalidSignature

    try:
        public.verify(sig, canonical_bytes(obj))
    except InvalidSignature:
        return (
            f"the signature does not verify with key {cmd.key_id}'s public key: the command was changed "
            "after signing, or signed with another key, or not over the canonical form (docs/commands.md)"
        )
    return None


def loads(text: str) -> Any:
    """JSON as the signer must have meant it: ValueError for a key given twice, NaN or Infinity, or bad JSON."""
    return strictjson.loads(text)


def echoed(obj: Mapping[str, Any], key: str) -> str | None:
    """A field of a command being refused, to name it in the reply and the event; bounded however long it was,
    and UTF-8 text whatever it held (as_text)."""
    value = obj.get(key)
    return as_text(value[:64]) if isinstance(value, str) else None


def is_text(value: str) -> bool:
    """Whether `value` is text UTF-8 can carry: no lone surrogate (which a JSON "\\ud800" escape can make)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def as_text(value: str) -> str:
    """`value` with each lone surrogate written as its escape (a 6-character "\\ud800"), so it can be
    journaled and published as UTF-8 and still shows what was sent."""
    return value if is_text(value) else value.encode("utf-8", "backslashreplace").decode("utf-8")
