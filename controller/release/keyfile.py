"""The release key on disk: a PEM Ed25519 private key, written once with mode 0600, never overwritten."""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
)

from controller.config.files import PEM_MAX_BYTES
from controller.config.keys import PrivateKeyError, read_private_key


class KeyFileError(ValueError):
    """A key file that cannot be written or used; the message names the file and the fix."""


def write_new_key(path: Path) -> Ed25519PrivateKey:
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise KeyFileError(f"{path} exists; a release key is never overwritten: choose another --out") from None
    except OSError as err:
        raise KeyFileError(f"cannot create {path}: {err.strerror}") from None
    with os.fdopen(fd, "wb") as f:
        os.fchmod(f.fileno(), 0o600)  # whatever the umask
        f.write(pem)
    return key


def load_key(path: Path) -> Ed25519PrivateKey:
    try:
        return read_private_key(path, PEM_MAX_BYTES)
    except PrivateKeyError as err:
        raise KeyFileError(
            f"release key: {err}: give the release key `tablectl release keygen --out {path}` wrote"
        ) from None
