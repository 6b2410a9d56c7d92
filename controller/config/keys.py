"""Supervisors' public keys as the table config gives them (base64 of the raw 32-byte Ed25519 key), and the private
key files the signing commands read."""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import TYPE_CHECKING

from controller.config.files import FileRefused, read_bounded

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

# ASCII whitespace only (controller.core.spaces is out of verify-software's reach: pyproject.toml's contracts).
_ASCII_SPACE = " \t\n\r\f\v"
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


def public_key_b64(text: str, fix: str) -> str:
    """An Ed25519 public key given as base64 of its raw 32 bytes or as PEM, as the base64 of its raw 32 bytes;
    ValueError says what is wrong, then `fix`."""
    if "-----BEGIN" not in text:
        return base64.b64encode(decode_public_key(text.strip(_ASCII_SPACE), fix).public_bytes_raw()).decode()
    # Imported here, as above: a config check need not load cryptography's PEM reader.
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    try:
        key = load_pem_public_key(text.strip(_ASCII_SPACE).encode())
    except ValueError:
        raise ValueError(f"is not a PEM public key: {fix}") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ValueError(f"is not an Ed25519 public key: {fix}")
    return base64.b64encode(key.public_bytes_raw()).decode()


class PrivateKeyError(ValueError):
    """What is wrong with a private key file, naming the file; the caller adds which option it was and the fix."""


def read_private_key(path: Path, max_bytes: int) -> Ed25519PrivateKey:
    """An unencrypted PEM Ed25519 private key (as `tablectl command keygen` and `release keygen` write them) from a
    regular file of at most `max_bytes`: read bounded, since a FIFO there would block and /dev/zero fill memory."""
    try:
        data = read_bounded(path, max_bytes)
    except FileRefused as err:
        raise PrivateKeyError(f"cannot read the key {err.path}: it {err.problem}") from None
    # Imported here, as above: only the commands that sign load cryptography.
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(data, password=None)
    except TypeError:
        raise PrivateKeyError(f"{path} is encrypted") from None
    except ValueError:
        raise PrivateKeyError(f"{path} is not a PEM private key") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise PrivateKeyError(f"{path} holds a {type(key).__name__.removeprefix('_')}, not an Ed25519 key")
    return key
