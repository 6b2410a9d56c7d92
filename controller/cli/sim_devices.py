"""`tablectl sim-devices`: a simulator for every configured device on its own pseudo-terminal, speaking the
reference serial protocol, until Ctrl-C; it prints the ports and writes them as JSON for `tablectl run --ports`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import signal
import sys
from pathlib import Path
from typing import TextIO

from controller.cli import options
from controller.cli.verb import Subparsers, UsageError
from controller.config.table import TableConfig
from controller.people.demo import simulated_bus
from drivers.sim.script import SimScript
from drivers.sim.table import SimulatedTable


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "sim-devices",
        description="Starts the device simulators (shuffler, dealing shoe, a wager station per seat, dealer panel) "
        "on pseudo-terminals speaking the reference serial protocol, prints their ports and runs "
        "until Ctrl-C, so that `tablectl run` or `tablectl devices` can be pointed at them.",
    )
    p.add_argument("--config", type=Path, required=True, help="table config TOML (its seats and devices)")
    p.add_argument("--ports-file", type=Path, help="also write the ports as JSON here, for --ports")
    p.add_argument("--seed", type=options.seed, help="seed for the simulated shuffles")
    p.add_argument("--script", type=Path, help="sim script (TOML/JSON): scripted decks and device faults")
    p.add_argument(
        "--state-file",
        type=Path,
        metavar="FILE",
        help="keep the simulated shoe's cards in this file (e.g. next to the config) across a restart of the "
        "simulators, as a real shoe keeps them; the table daemon's restarts never lose them while this runs",
    )


def main(args: argparse.Namespace) -> int:
    config = options.load_table(args.config)
    _check_ports_file(args.ports_file)
    script = options.load_script(args.script)
    state = options.sim_state(args.state_file, "--state-file")
    asyncio.run(serve_simulators(config, sys.stdout, args.ports_file, args.seed, script, state))
    return 0


def _check_ports_file(path: Path | None) -> None:
    """Where --ports-file goes, before any simulator starts: a missing directory was found only after all of them had
    started and printed their ports, and ended the command with the bare OSError and exit 1."""
    if path is None:
        return
    if path.is_dir():
        raise UsageError(f"--ports-file {path} is a directory: give a file's path in it, e.g. {path / 'ports.json'}")
    if not path.parent.is_dir():
        raise UsageError(
            f"--ports-file {path}: the directory {path.parent} does not exist: create it, or give a file in an "
            "existing directory, e.g. /tmp/ports.json"
        )


async def serve_simulators(
    config: TableConfig,
    out: TextIO,
    ports_file: Path | None,
    seed: int | None,
    script: SimScript | None = None,
    state: Path | None = None,
) -> None:
    """Simulate what the config names: per-seat stations or one multi-drop line, and the sign and
    terminals when it has them."""
    d = config.devices
    async with SimulatedTable(
        config.game.seats,
        random.Random(seed),
        sign=d is not None and d.progressive_sign is not None,
        terminals=d is not None and bool(d.wager_terminals),
        bus=simulated_bus(config),
        state=state,
    ) as sims:
        ports = dict(sims.ports)
        if script is not None:
            await sims.apply_script(script)
        for dev_id, port in ports.items():
            out.write(f"{dev_id:<18} {port}\n")
        if ports_file:
            await asyncio.to_thread(ports_file.write_text, json.dumps(ports, indent=2) + "\n")
            out.write(f"ports written to {ports_file}: tablectl run --config CONFIG --ports {ports_file}\n")
        if state is not None:
            out.write(options.kept_cards(state, len(sims.shoe.cards)))
        # Ctrl-C is ours before the line that invites it: one pressed (or sent by a script) as soon as it shows
        # stopped the simulators with a KeyboardInterrupt, exit 130, instead of cleanly.
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
        out.write("simulators running; Ctrl-C stops them\n")
        out.flush()
        await stop.wait()
