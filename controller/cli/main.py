"""`tablectl`: the command line. Each verb is one module of controller.cli with `add_parser(sub)` and
`main(args) -> int` (controller.cli.verb); this module only builds the parser and hands over to the verb asked
for."""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import cast

import structlog

from controller import __version__
from controller.cli.verb import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE, UsageError, VerbModule
from controller.core.shown import shown_lines
from controller.shell.logs import configure_logging


@dataclass(frozen=True, slots=True)
class Verb:
    """A `tablectl` verb as the parser lists it, named by its module so that listing the verbs imports none of them."""

    name: str
    module: str
    help: str  # what `tablectl --help` says of it; here, so that listing the verbs imports none of them
    # The floor's verbs live in the floor package (docs/floor.md); named by string, so the controller imports none.
    package: str = "controller.cli"

    @property
    def path(self) -> str:
        return f"{self.package}.{self.module}"


# In the order `tablectl --help` lists them.
VERBS: tuple[Verb, ...] = (
    Verb("demo", "demo", "play a six-seat Mississippi Stud table with progressives on simulated devices"),
    Verb("simulate", "simulate", "play scripted rounds on simulated devices, printing every event as a JSON line"),
    Verb("run", "run", "run the table controller on the configured devices"),
    Verb("devices", "devices", "list the installed drivers and probe the configured devices"),
    Verb("sim-devices", "sim_devices", "run a simulator for every configured device on its own pseudo-terminal"),
    Verb("settle", "settle", "recompute a recorded round's settlement for a dispute"),
    Verb("par", "par", "the exact par sheet of a table's configured game: house edge, rows, strategy (docs/par.md)"),
    Verb("rules", "rules", "the traceability table of a chapter: each subsection, the code and the tests, or why not"),
    Verb("check-config", "check_config", "check table configs: schema, drivers, files, journal; say what to fix"),
    Verb("command", "command", "sign and send a supervisor command, or make a supervisor's signing key"),
    Verb("journal", "journal", "the journal: tail, export, verify the hash chain, archive old rounds, a day's totals"),
    Verb("schema", "schema", "print the JSON Schemas of the MQTT messages"),
    Verb("release", "release", "make the release key; build and sign the manifest of the installed code"),
    Verb("verify-software", "verify_software", "check the installed code against its signed release manifest"),
    Verb("floor", "floor", "the floor's archive service in PostgreSQL; round recall, status, alarms", "floor.cli"),
    Verb("report", "report", "shift, gaming-day and period reports; signed exports and their check", "floor.cli"),
    Verb("link", "link", "the linked progressive controller in PostgreSQL; its reconciliation report", "link.cli"),
)


# The verbs that take SIGINT and SIGTERM from their launch (_launched).
SIGNALLED_AT_START = ("run", "demo")


def load_verb(name: str) -> VerbModule:
    """The module of verb `name`, imported now. This is the one import at run time in controller/, and on
    purpose: a verb's module imports what that verb needs (the daemon, the simulators, cryptography, the MQTT
    client...), and importing every verb to run one would make each pay for all of them; the daemon's start
    time counts (`tablectl run` restarting under systemd). Verb modules import nothing from here, so this is
    lazy loading, not a way round an import cycle."""
    verb = next(v for v in VERBS if v.name == name)
    module: ModuleType = importlib.import_module(verb.path)
    return cast(VerbModule, module)


def build_parser(chosen: str | None = None) -> argparse.ArgumentParser:
    """The whole parser with the full arguments of verb `chosen` only; every other verb is a stub that takes
    anything (so `chosen=None` parses just far enough to tell which verb was asked for)."""
    p = argparse.ArgumentParser(prog="tablectl", description="Controller for casino card tables.")
    p.add_argument("--version", action="version", version=f"tablectl {__version__}")
    p.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="the least severe log records written (default info; debug adds a failed verb's traceback)",
    )
    p.add_argument("--log-json", action="store_true", help="log JSON lines to stderr (default when not a terminal)")
    p.add_argument(
        "--log-format",
        choices=["console", "json", "journal"],
        help="console: readable lines; json: JSON lines; journal: JSON lines with a <N> syslog priority "
        "for journald (default: journal under journald, json when stderr is not a terminal)",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for verb in VERBS:
        if verb.name == chosen:
            load_verb(verb.name).add_parser(sub)
        else:
            # No -h of its own: `tablectl demo --help` must reach the real demo parser on the second pass.
            sub.add_parser(verb.name, help=verb.help, add_help=False)
    return p


def chosen_verb(argv: Sequence[str]) -> str:
    """The verb argv asks for, as argparse itself reads it (a top-level option's value, such as the `journal`
    of `--log-format journal run`, is not mistaken for a verb). Usage errors of the top level exit here."""
    args, _ = build_parser().parse_known_args(argv)
    return str(args.command)


def main(argv: Sequence[str] | None = None) -> int:
    # The process's own command line (the `tablectl` script, `python -m controller.cli`): no cyclic garbage collection
    # while the verb's modules load. Loading allocates about 75,000 objects that live as long as the process, and the
    # collector walked them again and again (about 25 ms of `tablectl run`'s 0.3 s to READY, issue 19); _loaded()
    # then freezes them out of every later collection. A test calling main(argv) in its own process is left alone.
    own = argv is None
    if own:
        gc.disable()
    try:
        return _main(argv)
    except BrokenPipeError:
        # `tablectl journal tail | head`: the reader left; that is not an error, and Python's own report of
        # the closed pipe at exit would be noise.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        if own:
            _loaded()


def _loaded() -> None:
    """The verb's modules are loaded: what start-up made is kept for the process's life, so it leaves the collector's
    generations (gc.freeze: the later collections, during play too, skip it), and collection resumes. Once only."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def _main(argv: Sequence[str] | None = None) -> int:
    # No pydantic plugins: finding them scans every installed distribution's entry points when the first model is
    # built (about 25 ms of each start, and importlib.metadata's zipfile, email and csv in memory). An operator who
    # wants one sets the variable.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    argv = sys.argv[1:] if argv is None else list(argv)
    verb = chosen_verb(argv)
    if verb in SIGNALLED_AT_START:
        return _launched(verb, argv)
    return _verb(verb, argv)


def _launched(verb: str, argv: Sequence[str]) -> int:
    """`run` and `demo` take SIGINT and SIGTERM before their modules load (controller/shell/start_signals.py): a stop
    then has its one line, and the process its status (start26). Loaded here, as the verb loads asyncio anyway."""
    from controller.shell.start_signals import StoppedAtStart, at_launch, stopped_at_start

    start = at_launch()
    try:
        return _verb(verb, argv)
    except StoppedAtStart as stop:  # the verb's own main takes it once it runs
        return stopped_at_start(stop, start, verb)
    finally:
        start.restore()


def _verb(verb: str, argv: Sequence[str]) -> int:
    args = build_parser(verb).parse_args(argv)
    configure_logging(json=True if args.log_json else None, level=args.log_level, fmt=args.log_format)
    module = load_verb(verb)  # imported by build_parser already
    _loaded()
    try:
        return module.main(args)
    except UsageError as err:
        print(f"tablectl: {shown_lines(str(err))}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        # Ctrl-C on a long command (`par`, `journal verify`, a report): one line, not the frames it was in. A verb with
        # more to say about what it left catches it itself (`floor fill-rounds`).
        print(f"tablectl {verb}: interrupted (Ctrl-C)", file=sys.stderr)
        return EXIT_INTERRUPTED
    except (SystemExit, BrokenPipeError):
        raise
    except Exception as err:
        return _failed(verb, err)


def _failed(verb: str, err: Exception) -> int:
    """One line, never a traceback, for whatever a verb did not turn into its own message: a journal whose disk
    failed (the message says the cause, the file and the fix), a file that could not be read, or a bug, whose
    traceback goes to the log at debug level (--log-level debug) for the report."""
    # Here: `run` loads the journal's modules after it started the devices (issue 19), and only a failure needs it.
    from controller.store.schema import JournalError, JournalRefused

    if isinstance(err, JournalRefused):  # the table's journal: one line and a usage error's status, as a busy one's
        print(f"tablectl: {shown_lines(str(err))}", file=sys.stderr)
        return EXIT_USAGE
    if isinstance(err, OSError) and err.filename is not None:
        what = f"{err.filename}: {err.strerror or err}"
    elif isinstance(err, OSError | ValueError | JournalError):
        what = str(err) or type(err).__name__
    else:
        what = f"unexpected {type(err).__name__}: {err} (a bug: please report it with the log of --log-level debug)"
    structlog.get_logger("tablectl").debug("the verb failed", verb=verb, exc_info=err)
    # Errors quote what the operator gave and what files held: escaped, so a path cannot drive the terminal.
    print(f"tablectl {verb}: {shown_lines(what)}", file=sys.stderr)
    return EXIT_FAILED
