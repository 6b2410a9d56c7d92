"""`tablectl run`: the daemon, on the devices the config names (systemd/tablectl.service runs it)."""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
from collections.abc import Mapping
from pathlib import Path

import structlog

from controller.cli import options, preflight
from controller.cli.verb import Subparsers, UsageError
from controller.config.table import TableConfig, configured_devices
from controller.shell.configured import begin_devices, build_devices, journal_path, playable
from controller.shell.journal_lock import JournalBusy, hold_journal, let_go
from controller.shell.start_signals import StartSignals, StoppedAtStart, stopped_at_start, taken
from drivers.interfaces import WAGER_BUS_ID, Device
from drivers.registry import DriverConfigError

log = structlog.get_logger("tablectl")


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "run",
        description="The daemon: drives the devices named in the config, journals every event and publishes it. "
        "Ctrl-C (or SIGINT) closes the table after the round in progress; SIGTERM stops at once.",
    )
    p.add_argument("--config", type=Path, required=True, help="table config TOML (see configs/)")
    p.add_argument("--broker", type=options.broker, help="MQTT broker URL (default: the config's)")
    p.add_argument("--journal", type=Path, help="SQLite journal file (default: the config's)")
    p.add_argument("--live-log", action="store_true", help="also print the readable table log on stdout")
    p.add_argument(
        "--ports",
        type=Path,
        help="JSON of device id to port, overriding the config's ports "
        "(as `tablectl sim-devices --ports-file` writes it)",
    )


def main(args: argparse.Namespace) -> int:
    # No cyclic garbage collection until the daemon's modules are loaded, as controller.cli.main keeps it off while the
    # verb's module loads: the config check, the drivers, then the engine, service, journal and publisher make objects
    # that live as long as the process, and the collector ran 38 times over them (5-7 ms of CPU to READY=1 on the 2-core
    # reference machine, issue 19). On again, them frozen out of later collections, once loaded (_loaded), or here.
    start = taken()  # first (at launch, controller.cli.main): no SIGINT or SIGTERM of the start goes unanswered
    collecting = gc.isenabled()
    gc.disable()
    try:
        start.reached("checking the config")
        config = preflight.load_for_run(args.config, args.journal)  # every check of `check-config`, first
        # Refused before any device is opened: a config the engine cannot run, or one without [devices].
        why = playable(config)
        if why:
            raise UsageError(f"{args.config}: {why}")
        ports = options.load_ports(args.ports)
        _refuse_simulated(config, ports, args.config)
        try:
            devices = build_devices(config, ports)
        except DriverConfigError as err:
            raise UsageError(f"{args.config}: {err}") from None
        journal = _hold_journal(config, args.journal)
        try:
            asyncio.run(start.guarding(_started(config, devices, args, collecting, start)))
        finally:
            let_go(journal)
    except StoppedAtStart as stop:
        return stopped_at_start(stop, start, "run")
    finally:
        start.restore()
        if collecting and not gc.isenabled():
            gc.enable()
    return 0


def _refuse_simulated(config: TableConfig, ports: Mapping[str, str] | None, path: Path) -> None:
    """A port only `demo` and `simulate` replace, left for the daemon: it opened nothing and logged every device offline
    until stopped (configs/demo.toml run as README's "Running a table" shows, without --ports)."""
    raw = dict(configured_devices(config))
    if config.devices is not None and config.devices.wager_bus is not None:
        raw[WAGER_BUS_ID] = config.devices.wager_bus
    left = [
        dev for dev, settings in raw.items() if settings.get("port") == preflight.SIMULATED and dev not in (ports or {})
    ]
    if left:
        raise UsageError(
            f"{path}: the port of {', '.join(left)} is {preflight.SIMULATED!r}, which only `tablectl demo` and "
            "`tablectl simulate` replace: give each device's port in the config (e.g. /dev/tablectl/shuffler), or "
            f"start the simulators with `tablectl sim-devices --config {path} --ports-file ports.json` and pass "
            "--ports ports.json"
        )


def _hold_journal(config: TableConfig, journal: Path | None) -> Path:
    """The journal's lock, taken before any device is opened: a second daemon of the table opened the first one's
    serial ports and played its journal's round (controller/shell/journal_lock.py)."""
    path = journal_path(config, journal)
    try:
        hold_journal(path)
    except JournalBusy as err:
        raise UsageError(str(err)) from None
    return path


async def _started(
    config: TableConfig, devices: Mapping[str, Device], args: argparse.Namespace, collecting: bool, start: StartSignals
) -> None:
    """The devices are started first, then the daemon's own modules (engine, service, journal, publisher: ~55 ms of
    CPU) are loaded in a thread while the loop serves the devices: seven wager stations on one 115200-baud line take
    ~75 ms of wire to identify, the return pair's (issue 19: start to READY; docs/performance-history.md)."""
    start.reached("starting the devices")
    begun = begin_devices(devices)
    start.reached("loading the daemon")
    try:
        interval = sys.getswitchinterval()
        sys.setswitchinterval(0.0005)
        try:
            await asyncio.to_thread(_load_daemon)
        finally:
            sys.setswitchinterval(interval)
    except BaseException:
        await begun[0].abandon(devices.values())
        raise
    _loaded(collecting)
    from controller.shell.runner import run_table  # loaded: _load_daemon

    await run_table(
        config,
        devices,
        broker=args.broker,
        journal_path=args.journal,
        out=sys.stdout if args.live_log else None,
        begun=begun,
        start=start,
    )


def _load_daemon() -> None:
    import controller.shell.runner  # noqa: F401  # the point: loaded off the loop's thread


def _loaded(collecting: bool) -> None:
    """The daemon's modules are loaded: what the start made so far is kept for the process's life, so it leaves the
    collector's generations when the process froze its start-up already (its own command line: controller.cli.main's
    _loaded), and collection resumes if it was on."""
    if gc.get_freeze_count():
        gc.freeze()
    if collecting:
        gc.enable()
