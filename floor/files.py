"""The files a floor-side service reads only once it runs (its broker password and CA, the console's certificate),
read as it will read them, so that `check-config` names what is missing before a start does: the floor's and the
link controller's (both found following systemd/README.md: check-config called a config valid whose files were all
missing)."""

from __future__ import annotations

import ssl
from pathlib import Path

from controller.config.files import PEM_MAX_BYTES, FileRefused, read_bounded
from floor.config import FloorConfigError, read_secret


def file_problems(
    password_file: Path | None,
    ca_file: Path | None,
    group: str,
    console: tuple[Path, Path] | None = None,
) -> list[str]:
    """`field: problem: fix` for each file that cannot be used; `group` is the service user's, for the fix."""
    problems: list[str] = []
    try:
        read_secret(
            password_file,
            "mqtt.password_file",
            f"put the broker password on its first line (install -m 0640 -g {group})",
        )
    except FloorConfigError as err:
        problems.append(str(err))
    cert, key = console if console is not None else (None, None)
    for field, ca, chain, fix in (
        ("mqtt.ca_file", ca_file, None, "copy the PEM of the CA that signed the broker's certificate"),
        ("console.tls_cert/tls_key", None, console, "give the console's PEM certificate and its key"),
    ):
        try:
            for name in (ca, cert if chain else None, key if chain else None):
                if name is not None:  # bounded first, so ssl (which reads by path, unbounded) never meets a FIFO
                    read_bounded(name, PEM_MAX_BYTES)
            if ca is not None:
                ssl.create_default_context(cafile=str(ca))
            if chain is not None:
                ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(str(chain[0]), str(chain[1]))
        except FileRefused as err:
            problems.append(f"{field}: cannot read {err.path}: {err.problem}: {fix}")
        except (OSError, ssl.SSLError) as err:
            problems.append(f"{field}: cannot be used: {err}: {fix}")
    return problems
