"""`tablectl devices` and `tablectl sim-devices`: what is installed, what answers, and simulators to answer.

`devices` lists the installed drivers (the entry-point group `table_controller.drivers`, so another
package's drivers appear too) and probes each configured device: does it answer, with what identity and
firmware. `sim-devices` starts a simulator for every configured device on its own pseudo-terminal and
prints the ports (and writes them as JSON for `tablectl run --ports`), until Ctrl-C.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from controller.config.table import TableConfig, configured_devices
from controller.shell.runner import build_devices
from drivers.interfaces import DeviceEvent, DeviceOffline, DeviceOnline
from drivers.registry import available_drivers, settings_model
from drivers.sim.script import SimScript
from drivers.sim.table import SimulatedTable
from drivers.sim.wager_bus import WagerBusSim


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

    def sink_for(device_id: str) -> Any:
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
        else:
            row |= {"state": "offline", "reason": ev.reason if isinstance(ev, DeviceOffline) else "no answer"}
        report.append(row)
    return report


def _raw_settings(config: TableConfig) -> dict[str, Mapping[str, Any]]:
    raw = configured_devices(config)
    d = config.devices
    if d is not None and d.wager_bus is not None:  # a bus's stations share its settings and line
        raw.update(
            {
                f"wager_station_{seat}": d.wager_bus
                for seat, where in d.station_seats()
                if where.startswith("devices.wager_bus")
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


async def serve_simulators(
    config: TableConfig, out: TextIO, ports_file: Path | None, seed: int | None, script: SimScript | None = None
) -> None:
    """Simulate what the config names: per-seat stations or one multi-drop line, and the sign and
    terminals when it has them."""
    d = config.devices
    bus_seats = (
        sorted(seat for seat, where in d.station_seats() if where.startswith("devices.wager_bus"))
        if d is not None
        else []
    )
    bus_addresses = (
        {int(st["seat"]): int(st.get("address", st["seat"])) for st in (d.wager_bus or {}).get("stations", [])}
        if d is not None
        else {}
    )
    async with SimulatedTable(
        config.game.seats,
        random.Random(seed),
        sign=d is not None and d.progressive_sign is not None,
        terminals=d is not None and bool(d.wager_terminals),
    ) as sims:
        ports = dict(sims.ports)
        bus = None
        if bus_seats:
            bus = WagerBusSim(seats=bus_seats, addresses=bus_addresses or None)
            await bus.start()
            for seat in bus_seats:
                ports.pop(f"wager_station_{seat}", None)
            ports["wager_bus"] = bus.port
        try:
            if script is not None:
                await sims.apply_script(script)
            for dev_id, port in ports.items():
                out.write(f"{dev_id:<18} {port}\n")
            if ports_file:
                await asyncio.to_thread(ports_file.write_text, json.dumps(ports, indent=2) + "\n")
                out.write(f"ports written to {ports_file}: tablectl run --config CONFIG --ports {ports_file}\n")
            out.write("simulators running; Ctrl-C stops them\n")
            out.flush()
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.add_signal_handler(sig, stop.set)
            await stop.wait()
        finally:
            if bus is not None:
                await bus.stop()


def load_ports(path: Path) -> dict[str, str]:
    """A JSON object of device id to port path, as `tablectl sim-devices --ports-file` writes it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"cannot read ports from {path}: {err}; give the file sim-devices wrote") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ValueError(f'{path} must be a JSON object of device id to port path, e.g. {{"shoe": "/dev/pts/4"}}')
    return data


def main_devices(config: TableConfig, as_json: bool, ports: Mapping[str, str] | None) -> int:
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
