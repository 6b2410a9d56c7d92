"""Supervisors' public keys as the table config gives them (base64 of the raw 32-byte Ed25519 key)."""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

SUPERVISOR_KEY_FIX = "paste the public key `tablectl command keygen` printed (base64 of the raw 32-byte Ed25519 key)"
RELEASE_KEY_FIX = "paste the public key `tablectl release keygen` printed (base64 of the raw 32-byte Ed25519 key)"


def decode_public_key(text: str, fix: str = SUPERVISOR_KEY_FIX) -> Ed25519PublicKey:
    """Raises ValueError saying what is wrong with a configured public key and how to get a right one."""
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"is not base64: {fix}") from None
    if len(raw) != 32:
        raise ValueError(f"decodes to {len(raw)} bytes, an Ed25519 public key has 32: {fix}")
    # Imported here: a table that names no key never loads cryptography (7 MB, tens of ms at start).
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        return Ed25519PublicKey.from_public_bytes(raw)
    except ValueError:
        raise ValueError(f"is not an Ed25519 public key: {fix}") from None
