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
import sys
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pydantic import BaseModel, ValidationError

from controller.cli.check_files import check_journal, check_mqtt_files
from controller.cli.findings import Finding
from controller.config.errors import config_problems
from controller.config.table import TableConfig
from controller.games.registry import chapter_of, spec_for
from controller.shell.runner import default_journal_path, playable
from drivers.registry import ENTRY_POINT_GROUP, DriverConfigError, available_drivers, settings_model

SIMULATED = "simulated"  # the port `tablectl demo` and `simulate` replace with a simulator's pty


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
    ports: list[tuple[str, str]] = []
    for where, raw in _device_entries(devices):
        if not isinstance(raw, dict):
            continue  # the schema says so
        found, port = _check_device(where, raw, drivers, installed)
        findings += found
        if port is not None:
            ports.append((where, port))
    return findings + _port_warnings(ports)


def _check_device(
    where: str, raw: Mapping[str, Any], drivers: Mapping[str, type[Any]], installed: str
) -> tuple[list[Finding], str | None]:
    """One device's problems, and its port when its settings are valid."""
    name = raw.get("driver")
    if not isinstance(name, str) or not name:
        return [
            Finding(
                "error",
                f"{where}.driver",
                "is missing: no driver drives this device",
                f"add driver = one of: {installed}",
            )
        ], None
    cls = drivers.get(name)
    if cls is None:
        close = difflib.get_close_matches(name, list(drivers), n=1, cutoff=0.6)
        return [
            Finding(
                "error",
                f"{where}.driver",
                f"names driver {name!r}, which is not installed",
                (f"did you mean {close[0]!r}? " if close else "")
                + f"Installed drivers: {installed}; a plugin's package must register its driver under the "
                f"entry-point group {ENTRY_POINT_GROUP!r} (`tablectl devices` lists them)",
            )
        ], None
    try:
        model = settings_model(cls)
    except DriverConfigError as err:
        return [Finding("error", f"{where}.driver", str(err), "report it to the driver's maker")], None
    settings = {k: v for k, v in raw.items() if k != "driver" or "driver" in model.model_fields}
    try:
        validated = model.model_validate(settings)
    except ValidationError as err:
        return [Finding.of("error", p) for p in config_problems(err, prefix=where.split("."), model=model)], None
    findings: list[Finding] = []
    if where == "devices.wager_bus" and not hasattr(cls, "stations"):
        findings.append(
            Finding(
                "error",
                f"{where}.driver",
                f"driver {name!r} does not drive a wager bus (it has no per-seat `stations`)",
                'use e.g. driver = "reference-wager-bus"',
            )
        )
    return findings, _port(validated)


def _port_warnings(ports: list[tuple[str, str]]) -> list[Finding]:
    """Ports only the simulators replace, and ports that are not there (yet)."""
    findings: list[Finding] = []
    simulated = sum(1 for _where, port in ports if port == SIMULATED)
    missing_ports = [f"{port} ({where})" for where, port in ports if port != SIMULATED and not os.path.exists(port)]
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
    chapter = chapter_of(config.game)
    offered = {o.spot for o in chapter.spec.offers(config.game)}
    # Configured but not taken by the live engine (it has no meters or terminals yet): players could not make them.
    settings = chapter.settings_offering_wagers(config.game)
    idle = [f"game.{key}" for key, spot in settings.items() if spot not in offered]
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
    stream = out or sys.stdout
    reports = [check_file(path) for path in args.files]
    for report in reports:
        print_report(report, stream)
    return 0 if all(r.valid for r in reports) else 1
