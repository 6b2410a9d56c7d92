"""`tablectl check-config`: the files a config names (the broker password, CA, client certificate and key, loaded as
TLS will load them) and the journal, which must be writable or creatable by the service user."""

from __future__ import annotations

import os
import pwd
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from controller.cli.findings import Finding
from controller.cli.verb import UsageError
from controller.config.files import PEM_MAX_BYTES, SECRET_MAX_BYTES, FileRefused, kind_of, read_bounded
from controller.config.table import MAX_TABLE_ID, TableConfig
from controller.shell.configured import default_journal_path, journal_path

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
        # Loaded here, not with this module: `tablectl run` checks its config before it opens the devices, and
        # controller.mqtt.connection brings aiomqtt (~10 ms), loaded off the loop's thread (controller/cli/run.py).
        from controller.mqtt.connection import tls_context

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
    """A file the config names: a regular file (not a FIFO or a device, which would block or never end), readable
    by the service user within the time and size the daemon allows; a relative path is a warning."""
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
    limit = SECRET_MAX_BYTES if field == "mqtt.password_file" else PEM_MAX_BYTES
    try:
        read_bounded(path, limit)
    except FileRefused as err:
        if err.denied:
            findings.append(
                Finding(
                    "error",
                    field,
                    f"{value} cannot be read by user {_user()}",
                    f"let the service user read it: chgrp tablectl {value} && chmod 0640 {value}",
                )
            )
        else:
            findings.append(Finding("error", field, f"{value} {err.problem}", f"{fix}, or correct the path"))
    return findings


def _check_password(password_file: str) -> list[Finding]:
    from controller.mqtt.connection import read_secret  # as tls_context above: aiomqtt after the devices opened

    try:
        read_secret(password_file)
    except ValueError as err:
        return [
            Finding(
                "error",
                "mqtt.password_file",
                str(err).removeprefix("mqtt.password_file ").split("; ")[0],
                "put the broker password on the first line",
            )
        ]
    return []


def _user() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def check_journal(data: Mapping[str, Any], override: Path | None = None) -> list[Finding]:
    """The journal `run` would open (`override` is its --journal): a regular SQLite file the service user can
    write, in a writable directory, or a file that can be created there."""
    journal = data.get("journal")
    configured = journal.get("path") if isinstance(journal, dict) else None
    table_id = data.get("table_id")
    if override is not None:
        path, field = override, "--journal"
    elif isinstance(configured, str) and configured:
        path, field = Path(configured), "journal.path"
    elif configured is None and isinstance(table_id, str) and _TABLE_ID.fullmatch(table_id):
        path, field = default_journal_path(table_id), "journal.path (default)"
    else:
        return []  # the schema reports it
    try:
        return _journal_problems(path, field)
    except OSError as err:  # a name too long, a loop of symlinks, an unreadable directory on the way
        return [Finding("error", field, f"{path}: {err.strerror or err}", _JOURNAL_FIX)]


_TABLE_ID = re.compile(rf"[A-Za-z0-9_\-]{{1,{MAX_TABLE_ID}}}")  # as TableConfig.table_id: else the schema says
_JOURNAL_FIX = (
    "create the directory for the service user (under systemd, StateDirectory=tablectl does), or set "
    "journal.path to a file in a writable directory"
)
_SQLITE_HEADER = b"SQLite format 3\x00"


def _journal_problems(path: Path, field: str) -> list[Finding]:
    fix = _JOURNAL_FIX
    if os.path.lexists(path):
        st = path.stat()
        kind = kind_of(st.st_mode)
        if kind == "a directory":
            example = path / "table.sqlite"
            return [Finding("error", field, f"{path} is a directory", f"name a file in it, e.g. {example}")]
        if kind is not None:
            return [
                Finding(
                    "error",
                    field,
                    f"{path} is {kind}, not a file: the journal must be a regular file on a local disk",
                    "set journal.path to a file such as /var/lib/tablectl/<table_id>.sqlite (or leave it out)",
                )
            ]
        with path.open("rb") as f:
            head = f.read(len(_SQLITE_HEADER))
        # Here, as the imports above: sqlite3 is loaded after `tablectl run` has opened its devices.
        from controller.store.damage import damaged, was_journal

        if head and head != _SQLITE_HEADER[: len(head)] and was_journal(path):
            return [Finding("error", field, damaged(path, ["its header is not SQLite's"]))]  # the fix is in the line
        if head and head != _SQLITE_HEADER[: len(head)]:
            return [
                Finding(
                    "error",
                    field,
                    f"{path} is not an SQLite file, so not a tablectl journal",
                    "point journal.path at the table's journal, or at a new file",
                )
            ]
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


def check_archive_dir(config: TableConfig, journal: Path | None = None) -> list[Finding]:
    """[journal] keep_rounds: the directory the daemon seals its archive segments into is a directory the service
    user can write, or can be created (controller/shell/archiver.py)."""
    if config.journal.keep_rounds is None:
        return []
    # Here, not at the top: the archiver and the archive store load only for a table that keeps N rounds.
    from controller.shell.archiver import archive_directory

    path = journal_path(config, journal)
    directory = archive_directory(config, path)
    field = "journal.archive_dir" + ("" if config.journal.archive_dir else " (default)")
    fix = "create it for the service user, or set journal.archive_dir to a writable directory (back it up)"
    try:
        if directory.exists():
            if not directory.is_dir():
                return [Finding("error", field, f"{directory} is not a directory: the archive segments go there", fix)]
            if not os.access(directory, os.W_OK | os.X_OK):
                return [Finding("error", field, f"{directory} is not writable by user {_user()}", fix)]
            return []
        ancestor = directory.parent
        while not ancestor.exists():
            ancestor = ancestor.parent
    except OSError as err:
        return [Finding("error", field, f"{directory}: {err.strerror or err}", fix)]
    if not ancestor.is_dir() or not os.access(ancestor, os.W_OK | os.X_OK):
        return [Finding("error", field, f"{directory} cannot be created: {ancestor} is not a writable directory", fix)]
    return []


def check_birth(config: TableConfig) -> list[Finding]:
    """The table's birth (retained at every connect) within the broker's packet limit: one larger would cost the
    table its connection at every attempt, for ever, so `run` refuses to start with it (docs/mqtt.md, "Too large for
    the broker"). What grows it is the config: its devices (a port string each) and its [game] table."""
    from controller.mqtt.birth import build_birth  # here: it computes the installed code's digest
    from controller.mqtt.contract import Topics
    from controller.mqtt.limits import fits

    try:
        birth = build_birth(config, "0" * 32)  # a boot id is always 32 hex digits, the start's ts as long as any
    except ValueError:
        return []  # a game the engine cannot describe: reported with the game's own findings
    limit = config.mqtt.max_packet_size
    ok, size = fits(Topics(config.mqtt.prefix, config.table_id).birth, birth.model_dump_json(), limit)
    if ok:
        return []
    parts = {"devices": len(birth.devices), "game": len(birth.game.model_dump_json())}
    return [
        Finding(
            "error",
            "mqtt.max_packet_size",
            f"the table's birth message would be {size:,} bytes as published, over the broker's {limit:,}-byte packet "
            f"limit (its {parts['devices']} devices and their ports, and the [game] table, {parts['game']:,} bytes, "
            "make it): the broker would disconnect the table at every connect",
            f"shorten the devices' port strings or raise max_packet_size above {size:,} in the broker's config "
            "(systemd/mosquitto/mosquitto.conf) and [mqtt] max_packet_size here together",
        )
    ]


def refuse(where: str, errors: list[Finding]) -> None:
    """A UsageError listing each error, its field and its fix, when there is one: what `run`, `demo` and `simulate`
    say before they open a table."""
    if errors:
        raise UsageError(
            f"{where}: cannot run this table, {len(errors)} error(s) (`tablectl check-config` says the same):\n"
            + "\n".join(f.render() for f in errors)
        )


def refuse_birth(config: TableConfig, where: str) -> None:
    """The check `demo` and `simulate --broker` make before they open the table (they take the config as it is, with
    simulated ports, so not the whole of preflight.check_file): a birth over the broker's packet limit would be held
    back at every connect, and subscribers would never learn what runs the table (docs/mqtt.md, "Too large for the
    broker")."""
    refuse(where, check_birth(config))
