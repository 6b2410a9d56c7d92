"""`tablectl check-config FILE...`: is this table config ready to run, and if not, what to change.

Beyond the schema (controller.config.table): each device's driver is installed and takes its settings, the files
the config names exist and can be read (the broker password, CA, client certificate and key, the TLS ones
loaded as TLS will load them), the journal can be written or created, and ports that are not there (a device
unplugged, a udev rule that does not match) are reported. A config the engine cannot run yet (progressive or
Five Card Hand Bonus wagers, a chapter without a round engine, no [devices]) is a warning: it is valid, and
`tablectl settle` uses it. Exit status: 0 every file valid, 1 one is not, 2 bad usage.
"""

from __future__ import annotations

import argparse
import difflib
import os
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

from pydantic import BaseModel, ValidationError

from controller.config.errors import Problem, config_problems
from controller.config.table import TableConfig
from controller.games.registry import spec_for
from controller.mqtt.connection import tls_context
from controller.shell.runner import default_journal_path, playable
from drivers.registry import ENTRY_POINT_GROUP, DriverConfigError, available_drivers, settings_model

Severity = Literal["error", "warning"]
SIMULATED = "simulated"  # the port `tablectl demo` and `simulate` replace with a simulator's pty


@dataclass(frozen=True, slots=True)
class Finding:
    severity: Severity
    field: str
    problem: str
    fix: str = ""

    @classmethod
    def of(cls, severity: Severity, p: Problem) -> Finding:
        return cls(severity, p.field, p.problem, p.fix)

    def render(self) -> str:
        head = f"  {self.severity}: {self.field}: {self.problem}"
        return head + (f"\n      fix: {self.fix}" if self.fix else "")


@dataclass
class Report:
    path: Path
    findings: list[Finding]
    config: TableConfig | None = None

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def valid(self) -> bool:
        return self.config is not None and not self.errors


def check_file(path: Path) -> Report:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        why = err.strerror if isinstance(err, OSError) else "it is not UTF-8 text"
        return Report(
            path,
            [
                Finding(
                    "error",
                    str(path),
                    f"cannot be read: {why}",
                    "pass the path of the table's TOML config, e.g. /etc/tablectl/table.toml",
                )
            ],
        )
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        return Report(
            path,
            [
                Finding(
                    "error",
                    "(TOML syntax)",
                    str(err),
                    "correct the line it names: a key = value, a [section], quoted text",
                )
            ],
        )
    findings: list[Finding] = []
    config: TableConfig | None = None
    try:
        config = TableConfig.model_validate(data)
    except ValidationError as err:
        findings += [Finding.of("error", p) for p in config_problems(err, model=TableConfig)]
    # Checked on the raw data too, so one run reports every problem, not the schema's first.
    devices = data.get("devices")
    if isinstance(devices, dict):
        findings += check_devices(devices)
    mqtt = data.get("mqtt")
    if isinstance(mqtt, dict):
        findings += check_mqtt_files(mqtt)
    findings += check_journal(data)
    if config is not None:
        findings += check_playable(config)
    return Report(path, findings, config)


# -- devices -------------------------------------------------------------------------------------------------


def _device_entries(devices: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """(field path, raw settings) for every configured device."""
    for key in ("shuffler", "shoe", "dealer_panel", "wager_bus", "progressive_sign"):
        if devices.get(key) is not None:
            yield f"devices.{key}", devices[key]
    for key in ("wager_stations", "wager_terminals"):
        entries = devices.get(key)
        if isinstance(entries, list):
            yield from ((f"devices.{key}[{i}]", entry) for i, entry in enumerate(entries))


def check_devices(devices: Mapping[str, Any]) -> list[Finding]:
    drivers = available_drivers()
    installed = ", ".join(sorted(drivers)) or "none"
    findings: list[Finding] = []
    missing_ports: list[str] = []
    simulated = 0
    entries = list(_device_entries(devices))
    for where, raw in entries:
        if not isinstance(raw, dict):
            continue  # the schema says so
        name = raw.get("driver")
        if not isinstance(name, str) or not name:
            findings.append(
                Finding(
                    "error",
                    f"{where}.driver",
                    "is missing: no driver drives this device",
                    f"add driver = one of: {installed}",
                )
            )
            continue
        cls = drivers.get(name)
        if cls is None:
            close = difflib.get_close_matches(name, list(drivers), n=1, cutoff=0.6)
            findings.append(
                Finding(
                    "error",
                    f"{where}.driver",
                    f"names driver {name!r}, which is not installed",
                    (f"did you mean {close[0]!r}? " if close else "")
                    + f"Installed drivers: {installed}; a plugin's package must register its driver under the "
                    f"entry-point group {ENTRY_POINT_GROUP!r} (`tablectl devices` lists them)",
                )
            )
            continue
        try:
            model = settings_model(cls)
        except DriverConfigError as err:
            findings.append(Finding("error", f"{where}.driver", str(err), "report it to the driver's maker"))
            continue
        settings = {k: v for k, v in raw.items() if k != "driver" or "driver" in model.model_fields}
        try:
            validated = model.model_validate(settings)
        except ValidationError as err:
            findings += [Finding.of("error", p) for p in config_problems(err, prefix=where.split("."), model=model)]
            continue
        if where == "devices.wager_bus" and not hasattr(cls, "stations"):
            findings.append(
                Finding(
                    "error",
                    f"{where}.driver",
                    f"driver {name!r} does not drive a wager bus (it has no per-seat `stations`)",
                    'use e.g. driver = "reference-wager-bus"',
                )
            )
        port = _port(validated)
        if port == SIMULATED:
            simulated += 1
        elif port is not None and not os.path.exists(port):
            missing_ports.append(f"{port} ({where})")
    if simulated:
        findings.append(
            Finding(
                "warning",
                "devices",
                f"{simulated} device port(s) are {SIMULATED!r}: only `tablectl demo` and "
                "`tablectl simulate` replace them (with simulators)",
                "for `tablectl run`, give each device's port (e.g. /dev/tablectl/shuffler), or pass --ports from "
                "`tablectl sim-devices`",
            )
        )
    if missing_ports:
        findings.append(
            Finding(
                "warning",
                "devices",
                f"these ports do not exist (yet): {', '.join(missing_ports)}",
                "plug the devices in, and check that systemd/99-tablectl.rules matches them (ls -l /dev/tablectl/); "
                "nothing to do when checking a config away from its table",
            )
        )
    return findings


def _port(settings: BaseModel) -> str | None:
    port = getattr(settings, "port", None)
    return port if isinstance(port, str) else None


# -- files -----------------------------------------------------------------------------------------------------

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
        field, path = f"mqtt.{key}", Path(value)
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
        else:
            usable[key] = value
    if "password_file" in usable:
        try:
            first = Path(usable["password_file"]).read_text(encoding="utf-8").splitlines()[:1]
        except (OSError, UnicodeDecodeError) as err:
            first, why = [], str(err)
        else:
            why = "its first line is empty"
        if not first or not first[0]:
            findings.append(
                Finding(
                    "error",
                    "mqtt.password_file",
                    f"{usable['password_file']}: {why}",
                    "put the broker password on the first line",
                )
            )
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


def _user() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


# -- journal ---------------------------------------------------------------------------------------------------


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


# -- what the engine can run -----------------------------------------------------------------------------------


def check_playable(config: TableConfig) -> list[Finding]:
    if config.devices is None:
        return [
            Finding(
                "warning",
                "devices",
                "no [devices] table: `tablectl run` refuses the config (`tablectl settle` and `simulate` need none)",
                "name the table's devices: [devices.shuffler], [devices.shoe], [devices.dealer_panel] and "
                "a wager station per seat (see configs/mississippi-stud.toml)",
            )
        ]
    why = playable(config)
    if why:
        return [
            Finding(
                "warning",
                "game",
                f"`tablectl run` cannot run this table yet: {why}",
                "valid as it is; run the table without those wagers until the engine takes them",
            )
        ]
    spec = spec_for(config.game)
    offered = {o.spot for o in spec.offers(config.game)} if spec is not None else set()
    # Configured but not taken by the live engine (it has no meters or terminals yet): players could not make them.
    idle = [f"game.{key}" for key, spot in _METERED.items() if getattr(config.game, key, None) and spot not in offered]
    if idle:
        return [
            Finding(
                "warning",
                ", ".join(idle),
                "the live round engine does not offer these wagers yet (they "
                "need progressive meters or electronic wagering terminals); the table runs without them "
                "and `tablectl settle` settles them",
                "to say so at the table, set them to false (chips there are refused as wagers the table does "
                "not offer); keep them for `tablectl settle`",
            )
        ]
    return []


# Rules settings that offer a metered or terminal wager -> the wager's spot.
_METERED = {
    "progressive_paytable": "progressive",
    "three_card_progressive": "three_card_progressive",
    "five_card_progressive": "five_card_progressive",
    "five_card_hand_bonus": "five_card_hand_bonus",
}


# -- the verb --------------------------------------------------------------------------------------------------


def summary(report: Report) -> str:
    config = report.config
    assert config is not None
    spec = spec_for(config.game)
    game = f"{config.game.chapter}" + (f" ({spec.name})" if spec is not None else "")
    devices = [where for where, _ in _device_entries(config.devices.model_dump())] if config.devices else []
    stations = len(config.devices.station_seats()) if config.devices else 0
    warned = f", {len(report.warnings)} warning(s)" if report.warnings else ""
    journal = config.journal.path or default_journal_path(config.table_id)
    return (
        f"{report.path}: valid{warned}: table {config.table_id}, game {game}, {config.game.seats} seats, "
        f"{len(devices)} device(s) ({stations} wager station(s)), broker {config.mqtt.broker}, journal {journal}"
    )


def print_report(report: Report, out: TextIO) -> None:
    if report.valid:
        print(summary(report), file=out)
    else:
        print(
            f"{report.path}: INVALID, {len(report.errors)} error(s)"
            + (f", {len(report.warnings)} warning(s)" if report.warnings else ""),
            file=out,
        )
    for finding in [*report.errors, *report.warnings]:
        print(finding.render(), file=out)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "check-config",
        help="check table configs: schema, drivers, files, journal; say what to fix",
        description="Checks each table config as `tablectl run` would use it: every setting (the field, what is "
        "wrong and how to fix it), that each device's driver is installed and takes its settings, "
        "that the MQTT password, CA, certificate and key files exist and load, and that the journal "
        "can be written. Warns about ports that do not exist and configs the engine cannot run yet. "
        "Exit status 0 when every file is valid, 1 when one is not, 2 for bad usage.",
    )
    p.add_argument("files", type=Path, nargs="+", metavar="FILE", help="table config TOML")


def main(args: argparse.Namespace, out: TextIO | None = None) -> int:
    import sys

    stream = out or sys.stdout
    reports = [check_file(path) for path in args.files]
    for report in reports:
        print_report(report, stream)
    return 0 if all(r.valid for r in reports) else 1
