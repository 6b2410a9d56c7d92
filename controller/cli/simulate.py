"""`tablectl simulate`: scripted rounds (docs/scenarios.md) on simulated devices, every event as a JSON line."""

from __future__ import annotations

import argparse
from pathlib import Path

from controller.cli import options
from controller.cli.verb import Subparsers
from controller.people.optimal import PLAYERS
from controller.people.simulate import main_simulate


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "simulate",
        description="Plays a scenario (deck orders, wagers, decisions, device faults at named points; format in "
        "docs/scenarios.md, examples in docs/examples/*.scenario.toml) through the real drivers and "
        "simulated devices, and prints every journaled event as one JSON line on stdout, the table "
        "PC's own view: the published form plus its sealed part (card identities). Exit status 0 "
        "when the scenario played out, 1 when it did not (timeout), 2 for a bad config or scenario.",
    )
    p.add_argument(
        "--config",
        type=Path,
        required=True,
        help="table config TOML; without [devices], simulated reference devices are used",
    )
    p.add_argument("--scenario", type=Path, required=True, help="scenario file (.toml or .json)")
    p.add_argument("--journal", type=Path, help="SQLite journal file (default: a temporary one)")
    p.add_argument("--broker", type=options.broker, help="also publish to this MQTT broker (default: none)")
    p.add_argument(
        "--timeout",
        type=options.timeout,
        default=120.0,
        help="give up when the scenario has not played out after this many seconds (default 120)",
    )
    p.add_argument(
        "--players",
        choices=PLAYERS,
        default="random",
        help="the players of the rounds beyond those the scenario scripts: random (default), or optimal, the par "
        "sheet's strategy (655a, 643a and 683a tables)",
    )
    p.add_argument("--public", action="store_true", help="print events as published (no sealed part)")


def main(args: argparse.Namespace) -> int:
    config = options.load_table(args.config)
    if args.broker is not None:
        # It publishes: refused as `run` and `demo` refuse a birth the broker would never take.
        from controller.cli.check_files import refuse_birth

        refuse_birth(config, str(args.config or "the demo config"))
    return main_simulate(
        config,
        args.config,
        args.scenario,
        journal=args.journal,
        broker=args.broker,
        timeout=args.timeout,
        sealed=not args.public,
        players=args.players,
    )
