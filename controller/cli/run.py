"""`tablectl run`: the daemon, on the devices the config names (systemd/tablectl.service runs it)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from controller.cli import options, preflight
from controller.cli.verb import Subparsers, UsageError
from controller.shell.runner import build_devices, playable, run_table
from drivers.registry import DriverConfigError


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
    config = preflight.load_for_run(args.config, args.journal)  # every check of `check-config`, first
    # Refused before any device is opened: a config the engine cannot run, or one without [devices].
    why = playable(config)
    if why:
        raise UsageError(f"{args.config}: {why}")
    ports = options.load_ports(args.ports)
    try:
        devices = build_devices(config, ports)
    except DriverConfigError as err:
        raise UsageError(f"{args.config}: {err}") from None
    asyncio.run(
        run_table(
            config,
            devices,
            broker=args.broker,
            journal_path=args.journal,
            out=sys.stdout if args.live_log else None,
        )
    )
    return 0
