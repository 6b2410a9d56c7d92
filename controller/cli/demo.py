"""`tablectl demo`: a whole table on simulated devices, with a simulated dealer, players and floorperson."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
import tomllib
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.cli import numbers, options
from controller.cli.check_files import refuse_birth
from controller.cli.verb import EXIT_FAILED, Subparsers, UsageError
from controller.config.errors import ConfigError
from controller.config.table import TableConfig, parse_config
from controller.people.demo import play
from controller.people.optimal import PLAYERS, NoStrategy, check_optimal
from controller.people.stuck import TableStuck
from controller.shell.runner import playable
from controller.shell.start_signals import StartSignals, StoppedAtStart, stopped_at_start, taken

if TYPE_CHECKING:
    from drivers.sim.script import SimScript
    from drivers.sim.table import SimulatedTable

DEFAULT_PACE = 0.25


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "demo",
        description="Plays a Mississippi Stud table (chapter 655a) on simulated devices over real pseudo-terminals, "
        "with a simulated dealer and players. Shows each round here and publishes every event to "
        "<prefix>/<table_id>/event on the broker when it is reachable; journals locally either way. "
        "Ctrl-C closes the table after the round in progress; a second Ctrl-C stops at once.",
    )
    _add_many_tables(p)
    p.add_argument("--rounds", type=options.rounds, help="stop after this many rounds (default: until Ctrl-C)")
    p.add_argument(
        "--broker", type=options.broker, help="MQTT broker URL (default: the config's, mqtt://127.0.0.1:1883)"
    )
    p.add_argument(
        "--config", type=Path, help="table config TOML (default: the built-in demo table, as configs/demo.toml)"
    )
    p.add_argument("--seed", type=options.seed, help="seed for the shuffles and the players (default: random)")
    p.add_argument("--pace", type=options.pace, help=f"seconds between the people's actions (default {DEFAULT_PACE})")
    p.add_argument(
        "--journal",
        type=Path,
        help="SQLite journal file (default: the config's, else ~/.local/state/tablectl/<table_id>.sqlite); a new one "
        "against a broker that keeps this table's earlier anchor starts under tilt:rollback, and the demo stops saying "
        "what to do (docs/recovery.md)",
    )
    p.add_argument(
        "--sim-state",
        type=Path,
        metavar="FILE",
        help="keep the simulated shoe's cards in this file across restarts, as a real shoe keeps them (default: none; "
        "a restart starts the simulated shoe empty)",
    )
    p.add_argument("--quiet", action="store_true", help="no live table log on stdout")
    p.add_argument(
        "--human-floor",
        action="store_true",
        help="no simulated floorperson: jackpots wait for a supervisor's signed command (the floor console)",
    )
    p.add_argument(
        "--players",
        choices=PLAYERS,
        default="random",
        help="how the simulated players decide: random (default), or optimal, the strategy of the par sheet "
        "(`tablectl par`; 655a, 643a and 683a tables)",
    )
    p.add_argument(
        "--script", type=Path, help="sim script (TOML/JSON): scripted decks and device faults, see docs/protocol.md"
    )


def _add_many_tables(p: argparse.ArgumentParser) -> None:
    """The demos of several tables (--floor, --linked) and their own options."""
    p.add_argument(
        "--floor",
        action="store_true",
        help="a floor instead: several tables, the floor service and its console in a browser, on a private "
        "PostgreSQL (docs/console.md); prints the URL to open",
    )
    p.add_argument(
        "--linked",
        action="store_true",
        help="three Mississippi Stud tables on one linked progressive: the link controller on a private PostgreSQL "
        "(docs/linked-progressives.md)",
    )
    p.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="with --linked: copy the link's and the tables' journals, configs and logs into DIR (new or empty) when "
        "the demo ends; its work folder is deleted",
    )
    p.add_argument(
        "--http",
        type=numbers.host_port,
        metavar="HOST:PORT",
        help="with --floor: where the console listens (127.0.0.1:8480)",
    )


def _one_table_only(args: argparse.Namespace) -> None:
    """--floor and --linked build their own tables: an option of the one-table demo given with them would be
    ignored, and the operator would watch something other than what they asked for."""
    given = {
        "--config": args.config is not None,
        "--journal": args.journal is not None,
        "--script": args.script is not None,
        "--pace": args.pace is not None,
        "--quiet": args.quiet,
        "--human-floor": args.human_floor,
        "--players": args.players != "random",
    }
    mode = "--floor" if args.floor else "--linked"
    for option, set_ in given.items():
        if set_:
            raise UsageError(
                f"{option} is for the demo of one table; {mode} plays tables of its own (random players, journals "
                f"in its work folder): pass {option} without {mode}, or leave it out"
            )


def main(args: argparse.Namespace) -> int:
    start = taken()  # at launch (controller.cli.main): a SIGINT or SIGTERM of the start is answered, as `run`'s
    try:
        return _chosen(args, start)
    except StoppedAtStart as stop:
        if args.floor:
            return stopped_at_start(stop, start, "demo --floor", FLOOR_STOPPED)
        return stopped_at_start(stop, start, "demo")
    finally:
        start.restore()


# What a stop of `demo --floor`'s start left: its tables are `tablectl demo` processes, each stopped as its own start or
# runner stops it (floor/cli/demo.py).
FLOOR_STOPPED = (
    "each table started was stopped at once (its journal says `table.stopped`, or nothing if its own start was cut), "
    "then the link, the floor service and the private servers; the demo's work folder is deleted"
)


def _chosen(args: argparse.Namespace, start: StartSignals) -> int:
    """The demo the options ask for: the floor's (`start` handed on), the linked tables' (its own signals), or one
    table's."""
    start.reached("checking the config")
    if args.floor or args.linked:
        _one_table_only(args)
    if args.floor and args.keep is not None:
        raise UsageError("--keep is for `tablectl demo --linked`: pass --linked with it, or leave --keep out")
    if args.floor:
        # The floor is named by string, as controller.cli.main names its verbs: the controller never imports it.
        floor_demo = importlib.import_module("floor.cli.demo")
        _refuse_births(floor_demo.table_tomls(), "--floor")
        code: int = floor_demo.main(args, start)
        return code
    if args.linked:
        # Named by string too: the controller never imports the link controller.
        linked_demo = importlib.import_module("link.cli.demo")
        _refuse_births(linked_demo.table_tomls(), "--linked")
        keep: Path | None = args.keep
        if keep is not None and keep.exists() and (not keep.is_dir() or any(keep.iterdir())):
            # Refused before anything starts: the journals of two runs in one folder could not be told apart.
            raise UsageError(f"--keep {keep}: not an empty folder; give a new or empty one")
        start.restore()  # the linked demo takes its signals itself, as it did
        start.reached("starting the linked demo")  # one that came before they were given back stops it here
        linked: int = linked_demo.main(args)
        return linked
    if args.http:
        raise UsageError("--http is for the console of `tablectl demo --floor`")
    if args.keep is not None:
        raise UsageError("--keep is for `tablectl demo --linked`: pass --linked with it, or leave --keep out")
    return _one_table(args, start)


def _one_table(args: argparse.Namespace, start: StartSignals) -> int:
    """The demo of one table, its start's signals taken by `start` until the runner's handlers are in."""
    config = options.load_table(args.config)
    why = playable(config)
    if why:
        raise UsageError(f"{args.config or 'the demo config'}: {why}")
    # As `run` refuses it, before any device or the journal is opened: a birth the broker would never take.
    refuse_birth(config, str(args.config or "the demo config"))
    script = options.load_script(args.script)
    sim_state = options.sim_state(args.sim_state, "--sim-state")
    if args.players == "optimal":
        try:
            check_optimal(config.game)
        except NoStrategy as err:
            raise UsageError(f"--players optimal: {err}") from None
    try:
        played = asyncio.run(start.guarding(_play(args, config, script, sim_state, start)))
    except TableStuck as err:
        print(f"tablectl demo: {err}", file=sys.stderr)
        return EXIT_FAILED
    print(f"tablectl: {played} round(s) played", file=sys.stderr)
    return 0


def _play(
    args: argparse.Namespace, config: TableConfig, script: SimScript | None, sim_state: Path | None, start: StartSignals
) -> Coroutine[Any, Any, int]:
    """The one-table demo as its options ask; --sim-state says what the simulated shoe took from the file, as
    sim-devices --state-file does (on stderr with --quiet, which keeps stdout for nothing)."""

    def loaded(sims: SimulatedTable) -> None:
        if sim_state is not None:
            shown = sys.stderr if args.quiet else sys.stdout
            shown.write(options.kept_cards(sim_state, len(sims.shoe.cards)))
            shown.flush()

    return play(
        config,
        rounds=args.rounds,
        broker=args.broker,
        seed=args.seed,
        pace=DEFAULT_PACE if args.pace is None else args.pace,
        journal_path=args.journal,
        out=None if args.quiet else sys.stdout,
        sim_script=script,
        human_floor=args.human_floor,
        players=args.players,
        sim_state=sim_state,
        on_sims=loaded,
        start=start,
    )


def _refuse_births(tomls: dict[str, str], flag: str) -> None:
    """The demo's own tables (their configs built by the floor's or the link's demo) refused as `run` refuses one,
    before its PostgreSQL, broker or any table's journal is started: a birth over the broker's packet limit would be
    held back at every connect (docs/mqtt.md, "Too large for the broker"). The floor and the link may not read a table
    config (pyproject.toml's layering), so the check is made here."""
    for table_id, text in tomls.items():
        where = f"tablectl demo {flag}'s table {table_id}"
        try:
            config = parse_config(tomllib.loads(text), where)
        except (ConfigError, tomllib.TOMLDecodeError) as err:
            raise UsageError(f"{where}: {err}") from None
        refuse_birth(config, where)
