"""`tablectl check-config`: the files a config names (the broker password, CA, client certificate and key, loaded as
TLS will load them) and the journal, which must be writable or creatable by the service user."""

from __future__ import annotations

import os
import pwd
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from controller.cli.findings import Finding
from controller.mqtt.connection import tls_context
from controller.shell.runner import default_journal_path

_FILE_FIXES = {
    "password_file": "create it with the table's broker password on its first line (install -m 0640 -g tablectl)",
    "ca_file": "copy the PEM of the CA that signed the broker's certificate there",
    "cert_file": "copy this table's client certificate (PEM) there",
    "key_file": "copy the client certificate's private key (PEM) there, readable by the service user only",
}


def check_mqtt_files(mqtt: Mapping[str, Any]) -> list[Finding]:
    findings: list[Finding] = []
    usable: dict[str, str] = {}
    for key, fix in _FILE_FIXES.items():
        value = mqtt.get(key)
        if not isinstance(value, str) or not value:
            continue
        found = _check_file(f"mqtt.{key}", value, fix)
        findings += found
        if not any(f.severity == "error" for f in found):
            usable[key] = value
    if "password_file" in usable:
        findings += _check_password(usable["password_file"])
    tls_files = [k for k in ("ca_file", "cert_file", "key_file") if isinstance(mqtt.get(k), str)]
    if tls_files and all(k in usable for k in tls_files):
        try:  # loaded exactly as the publisher will load them: bad PEM or a key that does not match shows here
            tls_context(usable.get("ca_file"), usable.get("cert_file"), usable.get("key_file"))
        except ValueError as err:
            findings.append(
                Finding(
                    "error",
                    f"mqtt.{'/'.join(tls_files)}",
                    str(err).split("; ")[0],
                    "give PEM files: the CA that signed the broker, this table's certificate and "
                    "the key that belongs to it",
                )
            )
    return findings


def _check_file(field: str, value: str, fix: str) -> list[Finding]:
    """A file the config names: there, a file, readable by the service user; a relative path is a warning."""
    path = Path(value)
    findings: list[Finding] = []
    if not path.is_absolute():
        findings.append(
            Finding(
                "warning",
                field,
                f"{value} is a relative path: it resolves against the working directory, which is / under systemd",
                "give the absolute path",
            )
        )
    if not path.exists():
        findings.append(Finding("error", field, f"{value} does not exist", f"{fix}, or correct the path"))
    elif not path.is_file():
        findings.append(Finding("error", field, f"{value} is not a file", f"{fix}, or correct the path"))
    elif not os.access(path, os.R_OK):
        findings.append(
            Finding(
                "error",
                field,
                f"{value} cannot be read by user {_user()}",
                f"let the service user read it: chgrp tablectl {value} && chmod 0640 {value}",
            )
        )
    return findings


def _check_password(password_file: str) -> list[Finding]:
    try:
        first = Path(password_file).read_text(encoding="utf-8").splitlines()[:1]
    except (OSError, UnicodeDecodeError) as err:
        first, why = [], str(err)
    else:
        why = "its first line is empty"
    if not first or not first[0]:
        return [
            Finding(
                "error", "mqtt.password_file", f"{password_file}: {why}", "put the broker password on the first line"
            )
        ]
    return []


def _user() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def check_journal(data: Mapping[str, Any]) -> list[Finding]:
    journal = data.get("journal")
    configured = journal.get("path") if isinstance(journal, dict) else None
    table_id = data.get("table_id")
    if isinstance(configured, str) and configured:
        path, field = Path(configured), "journal.path"
    elif configured is None and isinstance(table_id, str) and table_id:
        path, field = default_journal_path(table_id), "journal.path (default)"
    else:
        return []  # the schema reports it
    fix = (
        "create the directory for the service user (under systemd, StateDirectory=tablectl does), or set "
        "journal.path to a file in a writable directory"
    )
    if path.is_dir():
        return [Finding("error", field, f"{path} is a directory", f"name a file in it, e.g. {path / 'table.sqlite'}")]
    if path.exists():
        # SQLite in WAL mode writes <file>-wal and <file>-shm beside it: the directory must be writable too.
        for target in (path, path.parent):
            if not os.access(target, os.W_OK):
                return [Finding("error", field, f"{target} is not writable by user {_user()}", fix)]
        return []
    ancestor = path.parent
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return [Finding("error", field, f"{path} cannot be created: {ancestor} is not a directory", fix)]
    if not os.access(ancestor, os.W_OK | os.X_OK):
        return [Finding("error", field, f"{path} cannot be created: {ancestor} is not writable by user {_user()}", fix)]
    return []
