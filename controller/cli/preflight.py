"""What `tablectl check-config` checks and `tablectl run` checks before it opens the table: one function, check_file,
for both, so a config check-config calls valid is one run starts with.

Beyond the schema (controller.config.table): each device's driver is installed and takes its settings, the files
the config names are regular files that can be read (the broker password, CA, client certificate and key, the TLS
ones loaded as TLS will load them), the journal is a regular file (or can be created) that can be written, and
ports that are not there (a device unplugged, a udev rule that does not match) are reported. A config the engine
cannot run yet (progressive or Five Card Hand Bonus wagers, a chapter without a round engine, no [devices]) is a
warning: it is valid, and `tablectl settle` uses it; `run` refuses it.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from controller.cli.check_files import check_archive_dir, check_birth, check_journal, check_mqtt_files, refuse
from controller.cli.findings import Finding
from controller.cli.verb import UsageError
from controller.config.errors import config_problems
from controller.config.files import FileRefused, read_bounded
from controller.config.table import ConfigFileError, TableConfig, read_config
from controller.games.registry import chapter_of
from controller.shell.configured import playable
from drivers.interfaces import WAGER_BUS_ID
from drivers.registry import ENTRY_POINT_GROUP, DriverConfigError, installed_names, load_driver, settings_model

SIMULATED = "simulated"  # the port `tablectl demo` and `simulate` replace with a simulator's pty


@dataclass
class Report:
    """What check_file found in one config file: its findings, and the config when it could be read."""

    path: Path
    findings: list[Finding]
    config: TableConfig | None = None
    unreadable: str | None = None  # why the file could not be read as TOML at all, in one line

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def valid(self) -> bool:
        return self.config is not None and not self.errors


def check_file(path: Path, journal: Path | None = None) -> Report:
    """Every problem with the config at `path`, as `run --config path [--journal journal]` would use it."""
    try:
        data = read_config(path)
    except ConfigFileError as err:
        return Report(path, [Finding("error", err.field, err.problem, err.fix)], unreadable=str(err))
    service = _service_config(data)
    if service is not None:
        # `check-config configs/*.toml` takes in floor.toml and link.toml: one finding that says which verb checks
        # them, not fifteen missing table fields.
        verb, name = service
        fix = f"check it with `tablectl {verb} --config {path} check-config`; give check-config a table's config"
        return Report(path, [Finding("error", "(file)", f"is the {name}'s config, not a table's", fix)])
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
    findings += check_journal(data, journal)
    if config is not None:
        findings += check_archive_dir(config, journal)
        findings += check_playable(config)
        findings += check_link(config, path.parent)
        findings += check_birth(config)
    return Report(path, findings, config)


def _service_config(data: dict[str, object]) -> tuple[str, str] | None:
    """("link", "link controller") or ("floor", "floor service") for their configs (a [database] and no table_id)."""
    if "table_id" in data or "database" not in data:
        return None
    return ("link", "link controller") if "link" in data else ("floor", "floor service")


# -- a linked progressive --------------------------------------------------------------------------------------


def check_link(config: TableConfig, base: Path) -> list[Finding]:
    """[progressive] link: the table has progressive meters to link, and (with link_config) the link knows this table
    and keeps exactly the levels its paytable pays, for the same wager spots (docs/linked-progressives.md)."""
    link = config.progressive.link
    if link is None:
        return []
    chapter = chapter_of(config.game)
    try:
        params = chapter.spec.progressives(config.game)
    except ValueError:
        return []  # reported with the game's own findings
    offered = {o.spot for o in chapter.spec.offers(config.game)}
    ours = {p.wager: sorted(lv.level for lv in p.levels) for p in params.progressives if p.wager in offered}
    if not ours:
        return [
            Finding(
                "error",
                "progressive.link",
                f"the table is on link {link!r} but offers no progressive wager",
                "offer the progressive wager in [game] (e.g. progressive_paytable) or remove [progressive] link",
            )
        ]
    if config.progressive.link_config is None:
        return []
    where = Path(config.progressive.link_config)
    where = where if where.is_absolute() else base / where
    fix = "give progressive.link_config the path of the link controller's LINK.toml"
    try:
        raw = tomllib.loads(read_bounded(str(where), 1 << 20).decode("utf-8"))
    except (FileRefused, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        return [Finding("error", "progressive.link_config", f"{where} cannot be read as TOML: {err}", fix)]
    return _link_agrees(config, link, ours, raw, where)


def _link_agrees(
    config: TableConfig, link: str, ours: dict[str, list[str]], raw: dict[str, Any], where: Path
) -> list[Finding]:
    """The link's LINK.toml names this link, lists this table and keeps the levels the table's paytable pays."""
    out: list[Finding] = []
    link_id = raw.get("link", {}).get("id") if isinstance(raw.get("link"), dict) else None
    if link_id != link:
        out.append(
            Finding(
                "error", "progressive.link", f"{where} is link {link_id!r}, not {link!r}", "name the same link in both"
            )
        )
    tables = [t.get("table_id") for t in raw.get("tables", []) if isinstance(t, dict)]
    if config.table_id not in tables:
        out.append(
            Finding(
                "error",
                "table_id",
                f"link {link_id!r} does not list table {config.table_id!r} (its tables: {', '.join(map(str, tables))})",
                f'add [[tables]] table_id = "{config.table_id}" and its asset_number to {where}',
            )
        )
    theirs = {
        str(p.get("wager")): sorted(str(lv.get("level")) for lv in p.get("levels", []) if isinstance(lv, dict))
        for p in raw.get("progressive", [])
        if isinstance(p, dict)
    }
    if theirs != ours:
        out.append(
            Finding(
                "error",
                "progressive.link",
                f"the table's paytable pays {ours} (wager spot: levels) but link {link_id!r} keeps {theirs}",
                "make the link's [[progressive]] wager spots and levels the table's paytable's (or choose the "
                "paytable whose levels the link keeps)",
            )
        )
    return out


# -- devices -------------------------------------------------------------------------------------------------


def device_entries(devices: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """(field path, raw settings) for every configured device."""
    for key in ("shuffler", "shoe", "dealer_panel", WAGER_BUS_ID, "progressive_sign"):
        if devices.get(key) is not None:
            yield f"devices.{key}", devices[key]
    for key in ("wager_stations", "wager_terminals"):
        entries = devices.get(key)
        if isinstance(entries, list):
            yield from ((f"devices.{key}[{i}]", entry) for i, entry in enumerate(entries))


class NamedDrivers:
    """The installed drivers' names (package metadata, nothing imported) and the classes of those a config names,
    each imported when first asked for: a table's start does not import every vendor's driver and its libraries
    (`tablectl devices` still lists and loads them all)."""

    def __init__(self) -> None:
        self.names = installed_names()
        self._loaded: dict[str, type | None] = {}
        self.broken: dict[str, str] = {}  # installed drivers whose plugin fails to import -> why

    def get(self, name: str) -> type | None:
        """The class of driver `name`; None when it is not installed or its plugin fails to import (`broken`)."""
        if name not in self._loaded:
            try:
                self._loaded[name] = load_driver(name) if name in self.names else None
            except DriverConfigError as exc:
                self.broken[name] = str(exc)
                self._loaded[name] = None
        return self._loaded[name]


def check_devices(devices: Mapping[str, Any]) -> list[Finding]:
    drivers = NamedDrivers()
    installed = ", ".join(drivers.names) or "none"
    findings: list[Finding] = []
    ports: list[tuple[str, str]] = []
    for where, raw in device_entries(devices):
        if not isinstance(raw, dict):
            continue  # the schema says so
        found, port = _check_device(where, raw, drivers, installed)
        findings += found
        if port is not None:
            ports.append((where, port))
    return findings + _port_warnings(ports)


def _check_device(
    where: str, raw: Mapping[str, Any], drivers: NamedDrivers, installed: str
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
    if name in drivers.broken:
        return [
            Finding(
                "error",
                f"{where}.driver",
                f"names driver {name!r}, which is installed but does not load: {drivers.broken[name]}",
                "reinstall the package that provides it, or report it to the driver's maker",
            )
        ], None
    if cls is None:
        import difflib  # a config with a mistake only: a table's start does not load it (issue 19)

        close = difflib.get_close_matches(name, drivers.names, n=1, cutoff=0.6)
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
    if where == f"devices.{WAGER_BUS_ID}" and not hasattr(cls, "stations"):
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
    missing = _terminals_missing(config, offered)
    if missing:
        return [
            Finding(
                "error",
                "devices.wager_terminals",
                f"the table offers the Five Card Hand Bonus Wager but seat(s) {', '.join(map(str, missing))} have no "
                "electronic wagering terminal: each betting position must contain one (655a.2(d), 643a.2(e))",
                'add a [[devices.wager_terminals]] with driver = "reference-wager-terminal", its port and seat '
                "for each, or set five_card_hand_bonus = false",
            )
        ]
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


def _terminals_missing(config: TableConfig, offered: set[str]) -> list[int]:
    if "five_card_hand_bonus" not in offered or config.devices is None:
        return []
    have = {int(t["seat"]) for t in config.devices.wager_terminals if isinstance(t.get("seat"), int)}
    return [n for n in range(1, config.game.seats + 1) if n not in have]


# -- `tablectl run` ---------------------------------------------------------------------------------------------


def load_for_run(path: Path, journal: Path | None = None) -> TableConfig:
    """The table config at `path` after every check `tablectl check-config` makes (the same function,
    controller.cli.preflight.check_file): a UsageError listing each error, its field and its fix, before any
    device, journal or broker is touched."""
    report = check_file(path, journal)
    if report.unreadable is not None:
        raise UsageError(report.unreadable)
    refuse(str(path), report.errors)
    if report.config is None:
        raise UsageError(f"{path}: cannot run this table")  # never: a config that does not validate has errors
    return report.config
