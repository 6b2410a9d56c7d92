"""`tablectl`: the command line."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from controller import __version__
from controller.config.errors import ConfigError
from controller.config.table import TableConfig, demo_config, load_config


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number: give e.g. --rounds 5") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} rounds is not a game: give 1 or more")
    return n


def _pace(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds: give e.g. --pace 0.2") from None
    if not 0 <= v <= 10:
        raise argparse.ArgumentTypeError(f"--pace {v} is outside 0 to 10 seconds")
    return v


def _seconds(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds: give e.g. --timeout 60") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"--timeout {v} must be more than 0 seconds")
    return v


def _broker(text: str) -> str:
    from controller.mqtt.connection import parse_broker_url

    try:
        parse_broker_url(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


# Verbs that live in their own module: each has `add_parser(sub)` and `main(args) -> int`, loads what it needs
# itself (most take no table config) and is imported only when used.
_MODULE_VERBS: dict[str, str] = {
    "check-config": "controller.cli.check_config",
    "command": "controller.cli.command",
    "journal": "controller.cli.journal",
    "schema": "controller.cli.schema",
}
# What `tablectl --help` lists for each; the module itself is imported only when its verb is used, so a
# command pays for no other verb's imports (the daemon's restart time counts).
_MODULE_HELP: dict[str, str] = {
    "check-config": "check table configs: schema, drivers, files, journal; say what to fix",
    "command": "sign and send a supervisor command, or make a supervisor's signing key",
    "journal": "read the journal: tail, export, verify its hash chain",
    "schema": "print the JSON Schemas of the MQTT messages",
}


def _verb_module(name: str) -> Any:
    return importlib.import_module(_MODULE_VERBS[name])


def _chosen_verb(argv: Sequence[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-") and a in _MODULE_VERBS), None)


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tablectl", description="Controller for casino card tables.")
    p.add_argument("--version", action="version", version=f"tablectl {__version__}")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument("--log-json", action="store_true", help="log JSON lines to stderr (default when not a terminal)")
    p.add_argument(
        "--log-format",
        choices=["console", "json", "journal"],
        help="console: readable lines; json: JSON lines; journal: JSON lines with a <N> syslog priority "
        "for journald (default: journal under journald, json when stderr is not a terminal)",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser(
        "demo",
        help="play a six-seat Mississippi Stud table with progressives on simulated devices",
        description="Plays a Mississippi Stud table (chapter 655a) on simulated devices over real pseudo-terminals, "
        "with a simulated dealer and players. Shows each round here and publishes every event to "
        "<prefix>/<table_id>/event on the broker when it is reachable; journals locally either way. "
        "Ctrl-C closes the table after the round in progress; a second Ctrl-C stops at once.",
    )
    demo.add_argument("--rounds", type=_positive_int, help="stop after this many rounds (default: until Ctrl-C)")
    demo.add_argument("--broker", type=_broker, help="MQTT broker URL (default: the config's, mqtt://127.0.0.1:1883)")
    demo.add_argument(
        "--config", type=Path, help="table config TOML (default: the built-in demo table, as configs/demo.toml)"
    )
    demo.add_argument("--seed", type=int, help="seed for the shuffles and the players (default: random)")
    demo.add_argument("--pace", type=_pace, default=0.25, help="seconds between the people's actions (default 0.25)")
    demo.add_argument(
        "--journal",
        type=Path,
        help="SQLite journal file (default: the config's, else ~/.local/state/tablectl/<table_id>.sqlite)",
    )
    demo.add_argument("--quiet", action="store_true", help="no live table log on stdout")
    demo.add_argument(
        "--script", type=Path, help="sim script (TOML/JSON): scripted decks and device faults, see docs/protocol.md"
    )

    simulate = sub.add_parser(
        "simulate",
        help="play scripted rounds on simulated devices, printing every event as a JSON line",
        description="Plays a scenario (deck orders, wagers, decisions, device faults at named points; format in "
        "docs/scenarios.md, examples in docs/examples/*.scenario.toml) through the real drivers and "
        "simulated devices, and prints every journaled event as one JSON line on stdout, the table "
        "PC's own view: the published form plus its sealed part (card identities). Exit status 0 "
        "when the scenario played out, 1 when it did not (timeout), 2 for a bad config or scenario.",
    )
    simulate.add_argument(
        "--config",
        type=Path,
        required=True,
        help="table config TOML; without [devices], simulated reference devices are used",
    )
    simulate.add_argument("--scenario", type=Path, required=True, help="scenario file (.toml or .json)")
    simulate.add_argument("--journal", type=Path, help="SQLite journal file (default: a temporary one)")
    simulate.add_argument("--broker", type=_broker, help="also publish to this MQTT broker (default: none)")
    simulate.add_argument(
        "--timeout",
        type=_seconds,
        default=120.0,
        help="give up when the scenario has not played out after this many seconds (default 120)",
    )
    simulate.add_argument("--public", action="store_true", help="print events as published (no sealed part)")

    run = sub.add_parser(
        "run",
        help="run the table controller on the configured devices",
        description="The daemon: drives the devices named in the config, journals every event and publishes it. "
        "Ctrl-C (or SIGINT) closes the table after the round in progress; SIGTERM stops at once.",
    )
    run.add_argument("--config", type=Path, required=True, help="table config TOML (see configs/)")
    run.add_argument("--broker", type=_broker, help="MQTT broker URL (default: the config's)")
    run.add_argument("--journal", type=Path, help="SQLite journal file (default: the config's)")
    run.add_argument("--live-log", action="store_true", help="also print the readable table log on stdout")
    run.add_argument(
        "--ports",
        type=Path,
        help="JSON of device id to port, overriding the config's ports "
        "(as `tablectl sim-devices --ports-file` writes it)",
    )

    devices = sub.add_parser(
        "devices",
        help="list the installed drivers and probe the configured devices",
        description="Lists every driver installed under the entry-point group table_controller.drivers, then "
        "starts each configured device's driver and reports whether it answers, with its model, "
        "serial number and firmware. Exit status 1 when any configured device does not answer.",
    )
    devices.add_argument("--config", type=Path, required=True, help="table config TOML")
    devices.add_argument("--ports", type=Path, help="JSON of device id to port overriding the config's ports")
    devices.add_argument("--json", action="store_true", help="print JSON instead of text")

    sims = sub.add_parser(
        "sim-devices",
        help="run a simulator for every configured device on its own pseudo-terminal",
        description="Starts the device simulators (shuffler, dealing shoe, a wager station per seat, dealer panel) "
        "on pseudo-terminals speaking the reference serial protocol, prints their ports and runs "
        "until Ctrl-C, so that `tablectl run` or `tablectl devices` can be pointed at them.",
    )
    sims.add_argument("--config", type=Path, required=True, help="table config TOML (its seats and devices)")
    sims.add_argument("--ports-file", type=Path, help="also write the ports as JSON here, for --ports")
    sims.add_argument("--seed", type=int, help="seed for the simulated shuffles")
    sims.add_argument("--script", type=Path, help="sim script (TOML/JSON): scripted decks and device faults")

    settle = sub.add_parser(
        "settle",
        help="recompute a recorded round's settlement for a dispute",
        description="Settles a round from its record (cards, wagers, decisions, meter values, random draws) with "
        "the config's paytables and prints, per seat and per wager, the outcome, the amounts paid, "
        "returned and collected, and the rule, as JSON. The record format is in docs/settle.md; "
        "examples are in docs/examples/.",
    )
    settle.add_argument("--config", type=Path, required=True, help="the table's config TOML (its [game] decides)")
    settle.add_argument("round", type=Path, metavar="ROUND.json", help="the round record")
    chosen = _chosen_verb(argv)
    for name in _MODULE_VERBS:
        if name == chosen:
            _verb_module(name).add_parser(sub)
        else:
            sub.add_parser(name, help=_MODULE_HELP[name])
    return p


def _load(path: Path | None) -> TableConfig:
    return demo_config() if path is None else load_config(path)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # `tablectl journal tail | head`: the reader left; that is not an error, and Python's own report of
        # the closed pipe at exit would be noise.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = build_parser(argv).parse_args(argv)
    from controller.shell.logs import configure_logging

    configure_logging(json=True if args.log_json else None, level=args.log_level, fmt=args.log_format)
    if args.command in _MODULE_VERBS:
        return int(_verb_module(args.command).main(args))
    try:
        config = _load(args.config)
    except ConfigError as err:
        print(f"tablectl: {err}", file=sys.stderr)
        return 2
    if args.command in ("demo", "run"):
        from controller.shell.runner import playable

        why = playable(config)
        if why:
            print(f"tablectl: {args.config or 'the demo config'}: {why}", file=sys.stderr)
            return 2
    script = None
    if getattr(args, "script", None):
        from drivers.sim.script import SimScriptError, load_sim_script

        try:
            script = load_sim_script(args.script)
        except SimScriptError as err:
            print(f"tablectl: {err}", file=sys.stderr)
            return 2
    if args.command == "demo":
        from controller.people.demo import play

        played = asyncio.run(
            play(
                config,
                rounds=args.rounds,
                broker=args.broker,
                seed=args.seed,
                pace=args.pace,
                journal_path=args.journal,
                out=None if args.quiet else sys.stdout,
                sim_script=script,
            )
        )
        print(f"tablectl: {played} round(s) played", file=sys.stderr)
        return 0
    if args.command == "simulate":
        from controller.people.simulate import main_simulate

        return main_simulate(
            config,
            args.config,
            args.scenario,
            journal=args.journal,
            broker=args.broker,
            timeout=args.timeout,
            sealed=not args.public,
        )
    if args.command == "settle":
        import json

        from controller.cli.settle import settle_file

        try:
            result = settle_file(config, args.round)
        except ConfigError as err:
            print(f"tablectl: {err}", file=sys.stderr)
            return 2
        print(json.dumps(result, indent=2))
        return 0
    if args.command in ("run", "devices"):
        if config.devices is None:
            print(
                f"tablectl: {args.config}: the config has no [devices] table: name the table's devices "
                "(see configs/mississippi-stud.toml)",
                file=sys.stderr,
            )
            return 2
        ports = None
        if args.ports:
            from controller.cli.devices import load_ports

            try:
                ports = load_ports(args.ports)
            except ValueError as err:
                print(f"tablectl: {err}", file=sys.stderr)
                return 2
    if args.command == "devices":
        from controller.cli.devices import main_devices
        from drivers.registry import DriverConfigError

        try:
            return main_devices(config, args.json, ports)
        except DriverConfigError as err:
            print(f"tablectl: {args.config}: {err}", file=sys.stderr)
            return 2
    if args.command == "sim-devices":
        from controller.cli.devices import serve_simulators

        asyncio.run(serve_simulators(config, sys.stdout, args.ports_file, args.seed, script))
        return 0
    if args.command == "run":
        from controller.shell.runner import build_devices, run_table
        from drivers.registry import DriverConfigError

        try:
            devices = build_devices(config, ports)
        except DriverConfigError as err:
            print(f"tablectl: {args.config}: {err}", file=sys.stderr)
            return 2
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
    return 2
