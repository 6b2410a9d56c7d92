"""What several verbs share: option types whose errors say what to give, and loading the files options name
(table config, sim script, ports), each failing with a UsageError that says what to fix."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from controller.cli import numbers
from controller.cli.verb import UsageError
from controller.config.broker import parse_broker_address
from controller.config.errors import ConfigError
from controller.config.files import FileRefused, read_bounded
from controller.config.table import TableConfig, demo_config, load_config

if TYPE_CHECKING:
    from drivers.sim.script import SimScript

PORTS_MAX_BYTES = 64 * 1024  # a device id and a pty path per device
SCRIPT_MAX_BYTES = 1024 * 1024  # a sim script: decks and faults, far below this

_whole_rounds = numbers.whole("--rounds", 0, 10**9, "--rounds 5")
pace = numbers.seconds("--pace", 0, 10, "--pace 0.2")
timeout = numbers.seconds("--timeout", 0, 86_400, "--timeout 60", above=True)
seed = numbers.whole("--seed", 0, 2**64 - 1, "--seed 7")


def rounds(text: str) -> int:
    n = _whole_rounds(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n} rounds is not a game: give 1 or more")
    return n


def broker(text: str) -> str:
    try:
        parse_broker_address(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def load_table(path: Path | None) -> TableConfig:
    """The table config at `path`; the built-in demo table when None."""
    try:
        return demo_config() if path is None else load_config(path)
    except ConfigError as err:
        raise UsageError(str(err)) from None


def load_script(path: Path | None) -> SimScript | None:
    if path is None:
        return None
    # Here, not at the top: `tablectl run` shares this module and never loads the simulators (issue 19, start-up).
    from drivers.sim.script import SimScriptError, loads_sim_script

    try:
        return loads_sim_script(read_bounded(path, SCRIPT_MAX_BYTES).decode("utf-8"), path)
    except FileRefused as err:
        raise UsageError(
            f"cannot read sim script {err.path}: {err.problem}; give a TOML or JSON sim script (docs/protocol.md)"
        ) from None
    except UnicodeDecodeError as err:
        raise UsageError(f"{path} is not UTF-8 text (byte offset {err.start}): save the sim script as UTF-8") from None
    except SimScriptError as err:
        raise UsageError(str(err)) from None


def sim_state(path: Path | None, flag: str) -> Path | None:
    """The simulators' state file, checked before any simulator starts: one that exists must read as their state,
    and a new one's directory must exist (the shoe writes it at its first change, mid-round)."""
    if path is None:
        return None
    from drivers.sim.state import SimStateError, SimStateFile  # as load_script: never loaded by `tablectl run`

    if path.is_dir():
        raise UsageError(f"{flag} {path} is a directory: give a file's path in it, e.g. {path / 'sim-state.json'}")
    if not path.parent.is_dir():
        raise UsageError(f"{flag} {path}: the directory {path.parent} does not exist: create it, or give another")
    try:
        SimStateFile(path).shoe_cards()
    except SimStateError as err:
        raise UsageError(f"{flag}: {err}") from None
    return path


def kept_cards(state: Path, held: int) -> str:
    """What the simulated shoe took from its state file (sim-devices --state-file, demo --sim-state), so an operator
    restarting the simulators sees whether it came back with its cards (a round in play is dealt from them) or empty
    (such a round is voided, .13(f))."""
    if held:
        return f"the simulated shoe holds {held} card(s) from {state}; every change is written there\n"
    if not state.exists():
        return f"the simulated shoe starts empty: {state} does not exist yet; it is written at the shoe's first load\n"
    return f"the simulated shoe starts empty, as {state} keeps it; every change is written there\n"


def load_ports(path: Path | None) -> dict[str, str] | None:
    """A JSON object of device id to port path, as `tablectl sim-devices --ports-file` writes it."""
    if path is None:
        return None
    try:
        data = json.loads(read_bounded(path, PORTS_MAX_BYTES).decode("utf-8"))
    except (FileRefused, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as err:
        raise UsageError(f"cannot read ports from {path}: {err}; give the file sim-devices wrote") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise UsageError(f'{path} must be a JSON object of device id to port path, e.g. {{"shoe": "/dev/pts/4"}}')
    return data
