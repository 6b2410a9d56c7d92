"""What `tablectl run` needs from the config before the daemon's own modules are loaded: whether the table can run,
its drivers, its journal's default path. Kept apart from controller.shell.runner (the service, journal, publisher:
~30 ms of imports) so that `run` opens the devices and sends their identifies first, and loads those modules while
the lines carry the identities (controller/cli/run.py; issue 19, docs/performance-history.md)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path

from controller.config.errors import ConfigError
from controller.config.table import TableConfig, configured_devices, station_id
from controller.games.registry import SPECS, spec_for
from controller.shell.inbox import EarlyStart
from controller.shell.leftovers import StartLeftovers
from drivers.interfaces import WAGER_BUS_ID, Device, WagerBus
from drivers.registry import create_driver


def playable(config: TableConfig) -> str | None:
    """Why this config cannot run a table yet, or None when it can."""
    spec = spec_for(config.game)
    if spec is None:
        return (
            f"chapter {config.game.chapter} has no round engine yet, only settlement "
            f"(`tablectl settle`); the tables that run today are chapters {', '.join(sorted(SPECS))}"
        )
    try:
        spec.require_method(spec.dealing_method(config.game))
    except ValueError as err:
        return str(err)
    problem = spec.live_problem(config.game)
    if problem is not None:
        return problem
    if config.devices is None:
        return "the config has no [devices] table: name the table's devices (see configs/mississippi-stud.toml)"
    return None


def build_devices(config: TableConfig, ports: Mapping[str, str] | None = None) -> dict[str, Device]:
    """The configured drivers, keyed by device id; `ports` overrides configured ports (simulators)."""
    ports = ports or {}
    d = config.devices
    if d is None:
        raise ConfigError(playable(config) or "no [devices] table")
    raw = configured_devices(config)
    devices = {dev: create_driver(dev, settings, ports.get(dev)) for dev, settings in raw.items()}
    if d.wager_bus is not None:
        # The service addresses stations by seat; the bus's per-seat stations share its line and lifetime.
        bus = create_driver(WAGER_BUS_ID, d.wager_bus, ports.get(WAGER_BUS_ID))
        if not isinstance(bus, WagerBus):
            raise ConfigError(
                f"devices.wager_bus: driver {d.wager_bus.get('driver')!r} does not drive a wager bus "
                f'(it has no per-seat `stations`); use e.g. driver = "reference-wager-bus"'
            )
        devices.update({station_id(seat): station for seat, station in bus.stations.items()})
    return devices


def default_journal_path(table_id: str) -> Path:
    # systemd's StateDirectory=tablectl sets $STATE_DIRECTORY (the first of a ':'-separated list) to that directory.
    if os.environ.get("STATE_DIRECTORY"):
        return Path(os.environ["STATE_DIRECTORY"].split(":")[0]) / f"{table_id}.sqlite"
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return state / "tablectl" / f"{table_id}.sqlite"


def journal_path(config: TableConfig, given: Path | None = None) -> Path:
    """The table's journal: `given` (--journal), else the config's journal.path, else the default. One answer for every
    user, so `run`'s journal lock (controller/shell/journal_lock.py) is taken on the file the runner then opens."""
    return given or Path(config.journal.path or default_journal_path(config.table_id))


def begin_devices(devices: Mapping[str, Device]) -> tuple[EarlyStart, StartLeftovers]:
    """Start every device (in the running loop) before the journal is read: they come up (opened, identified: ~30 ms
    on the wire, ~75 ms for seven stations on one bus line) while the rest of the start runs; they are commanded only
    once the restored state says what they should do (controller.shell.inbox). The start's executor is installed
    first: the devices' ports open in it (controller.shell.leftovers)."""
    leftovers = StartLeftovers(asyncio.get_running_loop())
    return EarlyStart.begin(devices.values()), leftovers
