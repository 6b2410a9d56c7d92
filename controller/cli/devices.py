"""`tablectl devices`: what is installed and what answers.

Lists the installed drivers (the entry-point group `table_controller.drivers`, so another package's drivers
appear too) and probes each configured device: does it answer, with what identity and firmware. Simulators
to answer are `tablectl sim-devices` (controller.cli.sim_devices).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from controller.cli import options
from controller.cli.preflight import SIMULATED
from controller.cli.verb import Subparsers, UsageError
from controller.config.table import TableConfig, configured_devices
from controller.shell.runner import build_devices
from drivers.interfaces import WAGER_BUS_ID, DeviceEvent, DeviceOffline, DeviceOnline
from drivers.registry import DriverConfigError, available_drivers, settings_model


def installed_drivers() -> list[dict[str, Any]]:
    out = []
    for name, cls in sorted(available_drivers().items()):
        model = settings_model(cls)
        fields = {
            f: ("required" if info.is_required() else repr(info.default))
            for f, info in model.model_fields.items()
            if f != "driver"
        }
        out.append({"driver": name, "class": f"{cls.__module__}.{cls.__qualname__}", "settings": fields})
    return out


async def probe(config: TableConfig, ports: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """Start every configured driver, note whether it came online and with what identity, stop it."""
    devices = build_devices(config, ports)
    seen: dict[str, DeviceEvent] = {}

    def sink_for(device_id: str) -> Callable[[DeviceEvent], None]:
        def sink(ev: DeviceEvent) -> None:
            if isinstance(ev, DeviceOnline | DeviceOffline) and device_id not in seen:
                seen[device_id] = ev

        return sink

    # Each driver's start() returns once its first attempt to reach the device has settled.
    await asyncio.gather(*(d.start(sink_for(dev_id)) for dev_id, d in devices.items()))
    await asyncio.gather(*(d.stop() for d in devices.values()), return_exceptions=True)
    raw = _raw_settings(config)
    report = []
    for dev_id in devices:
        ev = seen.get(dev_id)
        row: dict[str, Any] = {
            "device": dev_id,
            "driver": raw[dev_id].get("driver"),
            "port": (ports or {}).get(dev_id, raw[dev_id].get("port")),
        }
        if isinstance(ev, DeviceOnline):
            row |= {"state": "online", **dict(ev.identity)}
        elif row["port"] == SIMULATED:  # the driver's own "cannot open simulated: [Errno 2]" left the fix unsaid
            row |= {"state": "offline", "reason": _SIMULATED_FIX}
        else:
            row |= {"state": "offline", "reason": ev.reason if isinstance(ev, DeviceOffline) else "no answer"}
        report.append(row)
    return report


_SIMULATED_FIX = (
    f"port {SIMULATED!r} is replaced only by simulators: start `tablectl sim-devices --config CONFIG --ports-file "
    "ports.json` and pass --ports ports.json"
)


def _raw_settings(config: TableConfig) -> dict[str, Mapping[str, Any]]:
    raw = configured_devices(config)
    d = config.devices
    if d is not None and d.wager_bus is not None:  # a bus's stations share its settings and line
        raw.update(
            {
                f"wager_station_{seat}": d.wager_bus
                for seat, where in d.station_seats()
                if where.startswith(f"devices.{WAGER_BUS_ID}")
            }
        )
    return raw


def print_probe(report: list[dict[str, Any]], out: TextIO) -> None:
    for row in report:
        if row["state"] == "online":
            detail = (
                f"{row.get('model', '?')} serial {row.get('serial', '?')} firmware {row.get('firmware', '?')} "
                f"({str(row.get('firmware_hash', ''))[:12]})"
            )
        else:
            detail = row["reason"]
        out.write(f"{row['device']:<18} {row['state']:<8} {row['driver']:<26} {row['port']}  {detail}\n")


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "devices",
        description="Lists every driver installed under the entry-point group table_controller.drivers, then "
        "starts each configured device's driver and reports whether it answers, with its model, "
        "serial number and firmware. Exit status 1 when any configured device does not answer.",
    )
    p.add_argument("--config", type=Path, required=True, help="table config TOML")
    p.add_argument("--ports", type=Path, help="JSON of device id to port overriding the config's ports")
    p.add_argument("--json", action="store_true", help="print JSON instead of text")


def main(args: argparse.Namespace) -> int:
    config = options.load_table(args.config)
    if config.devices is None:
        raise UsageError(
            f"{args.config}: the config has no [devices] table: name the table's devices "
            "(see configs/mississippi-stud.toml)"
        )
    ports = options.load_ports(args.ports)
    try:
        return show(config, args.json, ports)
    except DriverConfigError as err:
        raise UsageError(f"{args.config}: {err}") from None


def show(config: TableConfig, as_json: bool, ports: Mapping[str, str] | None) -> int:
    """Print the installed drivers and the probe of every configured device; 1 when one does not answer."""
    drivers = installed_drivers()
    report = asyncio.run(probe(config, ports)) if config.devices else []
    if as_json:
        print(json.dumps({"installed_drivers": drivers, "devices": report}, indent=2))
    else:
        print("installed drivers:")
        for d in drivers:
            settings = ", ".join(f"{k}={v}" for k, v in d["settings"].items())
            print(f"  {d['driver']:<26} {d['class']}\n  {'':<26} settings: {settings}")
        print("configured devices:")
        print_probe(report, sys.stdout)
    # Scripts can tell a table whose devices all answer from one that needs a technician.
    return 0 if all(r["state"] == "online" for r in report) else 1
