"""`tablectl floor`: the floor service, and what an operator asks of its archive.

tablectl floor --config FLOOR.toml                         the service (systemd/tablectl-floor.service)
tablectl floor --config FLOOR.toml check-config            validate the config, reach the database
tablectl floor --config FLOOR.toml status [--json]         every table's live model
tablectl floor --config FLOOR.toml round ROUND_ID [--json] a round's whole story (recall)
tablectl floor --config FLOOR.toml rounds TABLE [--last N] the last N rounds of a table
tablectl floor --config FLOOR.toml alarms                  integrity alarms and open seq gaps
tablectl floor --config FLOOR.toml gaps                    open seq gaps, their age, the `resend` lines (1: stale)
tablectl floor --config FLOOR.toml retention [--apply]     what the retention policy drops, and drop it
tablectl floor --config FLOOR.toml fill-rounds             summarise and index the days archived before both
tablectl floor --config FLOOR.toml console keys            the keys enrolled in the console
tablectl floor --config FLOOR.toml console approve KEY_ID [--role ROLE]  let an enrolled key log in
tablectl floor --config FLOOR.toml console reject KEY_ID   remove a pending enrolment
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

import psycopg

from controller.cli import numbers
from controller.cli.bytecode import bytecode_lines
from controller.cli.shown import shown
from controller.cli.verb import EXIT_FAILED, EXIT_INTERRUPTED, Subparsers, UsageError
from controller.core.shown import one_line, shown_lines
from floor.config import FloorConfig, FloorConfigError, load_floor_config
from floor.console.records import approve_key, enrolled, reject_key
from floor.db import connect, unreachable
from floor.files import file_problems
from floor.known import unknown_table
from floor.recall import last_rounds, recall_round, render_round, render_rounds
from floor.retention import apply_retention, plan_retention
from floor.rounds import fill_pending
from floor.schema import LATEST, migrate
from floor.sdnotify import Notifier
from floor.service import NOT_STARTED, FloorService
from floor.standby import before_writing, standby_missing
from floor.status import alarms_text, gaps_text, live_tables, status_text
from floor.ts_index import IndexBuildFailed, index_partitions
from floor.ts_index import valid as ts_index_valid

CONFIG_HELP = "the floor config (configs/floor.toml is an annotated example)"
JSON_HELP = "print JSON instead of text (default: text), for a program to read"

# What each action's own --help says, beside its line in `tablectl floor --help`.
SERVICE = (
    "Runs the floor service: archives every table's events, statuses, births, device and meter messages from MQTT in "
    "PostgreSQL, with the console when [console] is set; until SIGTERM (systemd/tablectl-floor.service)."
)
CHECK = "Validates the floor config, then connects to its database and reports the schema version (exit 1: it cannot)."
STATUS = "Prints every table's live model as the archive holds it: state, phase, tilts, faults, jackpots, seq gaps."
ROUND = (
    "Prints a round's whole story from the archive: every event with its rule, the wagers at lock-out, decisions, "
    "settlements, irregularities and the meters as the round left them; archived fields that are not as they should "
    "be are named."
)
ROUNDS = "Lists a table's last N rounds, newest first: id, start, outcome, seats and the table's result."
ALARMS = "Prints the integrity alarms and the open seq gaps; exit 1 when there is one."
GAPS = "Prints the open seq gaps, their age, and the `tablectl command send ... resend` line for each; exit 1: stale."
RETENTION = (
    "Says which gaming days are past [retention] days and would be dropped, and which stay for want of a signed "
    "export (docs/floor.md, Retention and export); --apply drops them."
)
FILL = (
    "Brings the schema up to date, then summarises each gaming day archived before the per-round summary the reports "
    "read (docs/floor.md, Schema), a table's day a transaction, then builds each such day's ts index (CONCURRENTLY: "
    "the archiving goes on) and attaches it, as the service does at start, saying each; stopped, it goes on when run "
    "again."
)
CONSOLE = "The console's enrolled keys (`keys`), and approving one so that it can log in (`approve`; docs/console.md)."
KEYS = "Lists the keys enrolled in the console: id, role, public key, when enrolled, and whether approved."
APPROVE = "Lets an enrolled key log in to the console, with its role; check its public key with its owner first."
REJECT = (
    "Removes a pending enrolment (one nobody vouches for): it frees a place under [console] max_pending_enrolments."
)


def _action(actions: Subparsers, name: str, listed: str, description: str) -> argparse.ArgumentParser:
    """An action with its line in the parent's listing and its own --help's description."""
    return actions.add_parser(name, help=listed, description=description)


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "floor",
        help="the floor's archive service in PostgreSQL; round recall, status, alarms",
        description="The floor's system of record: without an action, runs the service that archives every table's "
        "events, statuses, births, device and meter messages in PostgreSQL (docs/floor.md).",
    )
    p.add_argument("--config", type=Path, help=CONFIG_HELP)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    _action(actions, "run", "run the archive service (the default)", SERVICE)
    cc = _action(actions, "check-config", "validate the config and reach the database", CHECK)
    cc.add_argument("--offline", action="store_true", help="the config alone, without trying the database")
    st = _action(actions, "status", "every table's live model: state, phase, tilts, faults, jackpots, gaps", STATUS)
    st.add_argument("--json", action="store_true", help=JSON_HELP)
    r = _action(actions, "round", "a round's whole story from the archive (GLI-11 game recall)", ROUND)
    r.add_argument("round_id", metavar="ROUND_ID", help="the round's id, e.g. ms-table-01-r000042")
    r.add_argument("--json", action="store_true", help=JSON_HELP)
    rs = _action(actions, "rounds", "the last N rounds of a table, newest first", ROUNDS)
    rs.add_argument("table_id", metavar="TABLE", help="the table's id as its config names it, e.g. ms-table-01")
    rs.add_argument(
        "--last",
        type=numbers.whole("--last", 1, 100_000, "--last 10"),
        default=10,
        help="how many rounds, 1 to 100,000 (default 10), e.g. --last 50",
    )
    rs.add_argument("--json", action="store_true", help=JSON_HELP)
    _action(actions, "alarms", "integrity alarms and seq gaps (exit 1: there is one)", ALARMS)
    _action(
        actions,
        "gaps",
        "open seq gaps, their age and the `tablectl command send ... resend` lines (exit 1: one is stale)",
        GAPS,
    )
    ret = _action(actions, "retention", "the gaming days the retention policy drops, and dropping them", RETENTION)
    ret.add_argument("--apply", action="store_true", help="drop them (default: only say which, and why others stay)")
    _action(
        actions,
        "fill-rounds",
        "summarise and ts-index the days archived before the round summary and the ts index (resumable)",
        FILL,
    )
    _add_console(actions)
    for action in actions.choices.values():  # --config before or after the action; SUPPRESS keeps the earlier one
        action.add_argument("--config", type=Path, default=argparse.SUPPRESS, help=CONFIG_HELP)


def _add_console(actions: Subparsers) -> None:
    """`floor console keys|approve|reject`: the console's enrolled keys."""
    con = _action(actions, "console", "the console's enrolled keys, and approving one (docs/console.md)", CONSOLE)
    con_actions = con.add_subparsers(dest="console_action", required=True, metavar="WHAT")
    _action(con_actions, "keys", "the keys enrolled, their roles and whether approved", KEYS)
    ap = _action(
        con_actions, "approve", "let an enrolled key log in (check its public key with its owner first)", APPROVE
    )
    ap.add_argument("key_id", metavar="KEY_ID", help="the key's id as `console keys` lists it, e.g. ann-supervisor")
    ap.add_argument(
        "--role",
        choices=["floorperson", "supervisor", "technician"],
        help="the role to grant (default: the one asked for at enrolment), e.g. --role floorperson",
    )
    _by(ap, "approves")
    rj = _action(con_actions, "reject", "remove a pending enrolment (frees a place for another)", REJECT)
    rj.add_argument("key_id", metavar="KEY_ID", help="the pending key's id as `console keys` lists it")
    _by(rj, "rejects")


def _by(parser: argparse.ArgumentParser, does: str) -> None:
    parser.add_argument(
        "--by",
        default=os.environ.get("USER", "administrator"),
        help=f"who {does}, for the record (default: $USER, else administrator), e.g. --by ann",
    )


def _config(path: Path) -> FloorConfig:
    try:
        return load_floor_config(path)
    except FloorConfigError as err:
        raise UsageError(str(err)) from None


def main(args: argparse.Namespace) -> int:
    if args.config is None:
        raise UsageError("give the floor config: tablectl floor --config FLOOR.toml [ACTION]")
    config = _config(args.config)
    action = args.action or "run"
    if action == "run":
        return _run(config)
    if action == "check-config":
        return _check(config, args.config, args.offline)
    writes = action == "fill-rounds" or (action == "retention" and args.apply) or action == "console"
    try:
        with connect(config.database) as conn:
            waits = before_writing(conn, f"tablectl floor {action}") if writes else None
            if waits is not None:
                raise UsageError(waits)
            return _fill_rounds(conn) if action == "fill-rounds" else _query(conn, config, args, action)
    except IndexBuildFailed as err:
        # Not the config's fault (exit 2 said so, "cannot reach the archive", of a deadlock): the work failed.
        print(f"tablectl floor fill-rounds: {shown_lines(str(err))}", file=sys.stderr)
        return EXIT_FAILED
    except (psycopg.errors.TransactionRollback, psycopg.errors.QueryCanceled) as err:
        # A deadlock, a serialization failure or a statement_timeout: the archive was reached, the work was stopped
        # (psycopg counts them as OperationalError, which reads below as a dsn to check).
        print(f"tablectl floor {action}: {stopped_work(err)}", file=sys.stderr)
        return EXIT_FAILED
    except psycopg.OperationalError as err:
        raise UsageError(
            f"cannot reach the archive ({one_line(err)}); {unreachable(err, config.database)} ({args.config})"
        ) from None
    except FloorConfigError as err:
        raise UsageError(str(err)) from None


def stopped_work(err: psycopg.Error) -> str:
    """What an operator reads when PostgreSQL stopped an action's statement (not a connection failure)."""
    said = shown_lines(str(err)).strip()
    return (
        f'PostgreSQL stopped its work: "{said}" (SQLSTATE {err.sqlstate}). What it finished before is kept; run the '
        "same command again: it goes on from there. If it fails the same way, another session is in its way (a long "
        "transaction, an older floor service during an upgrade): stop that first, or raise statement_timeout."
    )


def _rounds(conn: psycopg.Connection[tuple[object, ...]], args: argparse.Namespace) -> int:
    if args.last < 1:
        raise UsageError("--last must be 1 or more")
    stories = last_rounds(conn, args.table_id, args.last)
    # No rounds: a table that has not played one yet, or a typo'd id (which said the same and exited 0).
    problem = None if stories else unknown_table(conn, args.table_id)
    if problem is not None:
        raise UsageError(problem)
    print(json.dumps([s.to_json() for s in stories], indent=2) if args.json else render_rounds(stories))
    return 0


def _query(
    conn: psycopg.Connection[tuple[object, ...]], config: FloorConfig, args: argparse.Namespace, action: str
) -> int:
    if action == "status":
        tables = live_tables(conn)
        missing = standby_missing(conn)
        if missing is not None:  # first: the table rows below are their last states, no longer archived
            print(f"tablectl floor status: ARCHIVE STALLED: {missing}", file=sys.stderr)
        print(
            json.dumps([t.to_json() for t in tables], indent=2)
            if args.json
            else status_text(tables, conn, config.gaps.grace_s)
        )
        return 0 if missing is None else 1
    if action == "round":
        story = recall_round(conn, args.round_id)
        if story is None:
            raise UsageError(f"round {args.round_id} is not in the archive (see `tablectl floor rounds TABLE`)")
        print(json.dumps(story.to_json(), indent=2) if args.json else render_round(story))
        return 0
    if action == "rounds":
        return _rounds(conn, args)
    if action == "console":
        if args.console_action == "reject":
            try:
                print(shown(reject_key(conn, args.key_id, args.by)))
            except (LookupError, ValueError) as err:
                raise UsageError(str(err)) from None
            return 0
        if args.console_action == "approve":
            try:
                print(shown(approve_key(conn, args.key_id, args.role, args.by)))
            except (LookupError, ValueError) as err:
                raise UsageError(str(err)) from None
            print(
                "add its [[supervisors]] entry (shown at enrolment; `console keys`) to every table that should obey it"
            )
            return 0
        rows = list(enrolled(conn))
        if not rows:
            print("no key enrolled: a supervisor enrols in the console (Enrol), then an administrator approves it")
        for key_id, role, public, at, approved, by in rows:  # as a browser enrolled them: shown escaped
            state = f"approved {approved:%Y-%m-%d %H:%M} by {shown(by)}" if approved else "PENDING approval"
            print(f"{shown(key_id):<24} {shown(role):<12} {shown(public)}  enrolled {at:%Y-%m-%d %H:%M}  {state}")
        return 0
    if action == "gaps":
        text, count = gaps_text(conn, config)
        print(text)
        return 1 if count else 0
    if action == "alarms":
        text, count = alarms_text(conn)
        print(text)
        return 1 if count else 0
    plan = plan_retention(conn, config)
    print(plan.describe())
    if args.apply:
        for line in apply_retention(conn, plan):
            print(line)
    return 0


INTERRUPTED = {
    "migrate": "interrupted (Ctrl-C) while bringing the archive's schema up to date: its migrations are one "
    "transaction, rolled back, so the schema is as it was",
    "summary": "interrupted (Ctrl-C) while summarising the older gaming days: the day in progress was rolled back "
    "(its table's transaction; the days said done are kept) and is still pending",
    "index": "interrupted (Ctrl-C) while indexing the older gaming days: the day in progress may be left with an "
    "INVALID ts index, which the next run drops and builds again (the days said built are kept)",
}


def _fill_rounds(conn: psycopg.Connection[tuple[object, ...]]) -> int:
    """The days archived before the round summary, summarised a table's day at a time, each said with the time left."""
    t0 = time.monotonic()

    def said(done: int, total: int, day: object, rounds: int) -> None:
        left = (time.monotonic() - t0) / done * (total - done)
        print(f"[{done}/{total}] gaming day {day}: {rounds:,} round-day(s) summarised, about {left:.0f} s left")

    step = "migrate"
    try:
        migrate(conn)
        step = "summary"
        if not fill_pending(conn, said):
            print("the round summary is complete: no gaming day waits to be summarised")
        step = "index"
        _index_older_days(conn)
    except KeyboardInterrupt:
        # The statement in flight is cancelled on a Ctrl-C (floor/interrupt.py) and the transaction's block rolls it
        # back; the build's lock is let go on the way out (index_partitions): what is left is what a rerun goes on from.
        print(
            f"tablectl floor fill-rounds: {INTERRUPTED[step]}. Run `tablectl floor --config FLOOR.toml fill-rounds` "
            "again: it goes on from there.",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    return 0


def _index_older_days(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """The days archived before the ts index (migration 8) indexed and attached as the service does it, under its
    lock: a service building them meanwhile is said, not raced."""
    t0 = time.monotonic()

    def built(done: int, total: int, partition: str, seconds: float) -> None:
        left = (time.monotonic() - t0) / done * (total - done)
        said = f"built and attached in {seconds:.1f} s, about {left:.0f} s left"
        print(f"[{done}/{total}] ts index of {partition}: {said}")

    def busy(partitions: int) -> None:
        print(
            f"the events ts index: a floor service (or another fill-rounds) is building it now ({partitions} day(s) to "
            'index): it goes on there, and a service logs "events ts index complete" when it is (or run fill-rounds '
            "again to see it)"
        )

    index_partitions(conn, built, busy=busy)
    if ts_index_valid(conn):
        print("the events ts index is complete: every gaming day's partition has its index, valid and attached")


def _check(config: FloorConfig, path: Path, offline: bool) -> int:
    print(f"{path}: the config is valid (floor {config.name!r}, prefix {config.mqtt.prefix!r})")
    for line in bytecode_lines("systemd/tablectl-floor.service runs the floor"):  # a warning: exit 0 still
        print(f"{path}: {line}")
    if offline:
        return 0
    c = config.console
    tls = (c.tls_cert, c.tls_key) if c.tls_cert is not None and c.tls_key is not None else None
    problems = file_problems(config.mqtt.password_file, config.mqtt.ca_file, "tablectl-floor", tls)
    for problem in problems:
        print(f"{path}: {problem}")
    try:
        with connect(config.database) as conn:
            row = conn.execute("SELECT to_regclass('floor_schema') IS NOT NULL").fetchone()
            version = 0
            if row and row[0]:
                got = conn.execute("SELECT coalesce(max(version), 0) FROM floor_schema").fetchone()
                version = int(str(got[0])) if got else 0
            missing = standby_missing(conn)
            answered = f"{conn.info.host}:{conn.info.port}"  # of a multi-host dsn, after a promotion: which one
    except psycopg.OperationalError as err:
        print(f"{path}: database: cannot connect: {one_line(err)}: {unreachable(err, config.database)}")
        return 1
    except FloorConfigError as err:
        print(f"{path}: {err}")
        return 1
    if version > LATEST:
        print(f"{path}: database: schema version {version} is newer than this tablectl's ({LATEST}): upgrade")
        return 1
    print(
        f"{path}: database reachable, schema version {version} (the service migrates to {LATEST} at start); "
        f"the server that answered: {answered}"
    )
    if missing is not None:
        print(f"{path}: database: {missing}")
    return 1 if problems or missing is not None else 0


def _run(config: FloorConfig) -> int:
    service = FloorService(config, Notifier.from_environment())

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, service.stop)
        await service.run()

    try:
        asyncio.run(main())
    except NOT_STARTED as err:  # exit 2: systemd does not restart it (RestartPreventExitStatus=2)
        raise UsageError(str(err)) from None
    return 0
