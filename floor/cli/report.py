"""`tablectl report`: shift, gaming-day and period reports from the floor's archive; signed exports.

tablectl report --config FLOOR.toml --day 2026-11-21 [--table ID | --game 655a] [--format text|csv|json|html]
tablectl report --config FLOOR.toml --shift swing --day 2026-11-21 ...
tablectl report --config FLOOR.toml --from 2026-11-01 --to 2026-11-30 ...
tablectl report --config FLOOR.toml export --day 2026-11-21 [--key MY.pem]   the CSV export of the day (signed
                                                                             with --key, read for this command only)
tablectl report sign FILE.csv --key MY.pem          where the key lives: writes FILE.csv.sig (no database, no config)
tablectl report --config FLOOR.toml record FILE.csv  the .sig brought back beside FILE: checked and recorded
tablectl report verify FILE.csv (--public-key KEY | --config FLOOR.toml)
"""

from __future__ import annotations

import argparse
import sys
from datetime import date, datetime
from pathlib import Path

import psycopg

from controller.cli.verb import Subparsers, UsageError
from controller.core.shown import one_line
from floor.config import FloorConfig, FloorConfigError, export_public_key, load_floor_config, memory_size
from floor.days import Period, day_period, range_period, shift_period
from floor.db import connect, unreachable
from floor.export import ExportError, export_day, load_signing_key, record_signature, sign_file, signed_export, verify
from floor.known import unknown_game, unknown_table
from floor.report.build import build
from floor.report.figures import Scope, gather
from floor.report.html import to_html
from floor.report.render import to_csv, to_json, to_text
from floor.rounds import SummaryPending
from floor.standby import before_writing

FORMATS = {"text": to_text, "csv": to_csv, "json": to_json, "html": to_html}
CONFIG_HELP = "the floor config (configs/floor.toml is an annotated example)"


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date: write YYYY-MM-DD, e.g. 2026-11-21") from None


def _memory(text: str) -> str:
    try:
        return memory_size(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"{err}: write a number and kB, MB or GB, e.g. 64MB") from None


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "report",
        help="shift, gaming-day and period reports; signed exports and their check",
        description="Reports from the floor's archive per table, game and floor (docs/floor.md gives every "
        "definition): rounds, handle, win and hold by wager, take rates, hit frequencies against expectation, "
        "jackpots and progressive liability, voids and irregularities, device downtime, tilts, supervisor commands.",
    )
    p.add_argument("--config", type=Path, help=CONFIG_HELP)
    p.add_argument("--day", type=_day, help="the gaming day (it starts at [gaming_day] starts_at), e.g. 2026-11-21")
    p.add_argument("--shift", help="a shift of --day, by its name in [[shifts]], e.g. --shift swing")
    p.add_argument("--from", dest="first", type=_day, help="the first gaming day of a range, e.g. 2026-11-01")
    p.add_argument("--to", dest="last", type=_day, help="the last gaming day of a range (included), e.g. 2026-11-30")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--table", help="one table's figures only (default: every table), e.g. ms-table-01")
    which.add_argument("--game", help="one game's tables only, by chapter (default: every game), e.g. 655a")
    p.add_argument(
        "--format",
        choices=sorted(FORMATS),
        default="text",
        help="text to read, csv for a spreadsheet, json for a program, html with charts (default text)",
    )
    p.add_argument("--out", type=Path, help="write to this file (default: standard output), e.g. --out day.html")
    p.add_argument(
        "--work-mem",
        type=_memory,
        help="PostgreSQL work_mem for this report's own transaction only (default: the config's [report] work_mem, "
        "else the server's, 4MB unless set), e.g. --work-mem 64MB: a busy day's sorts then stay in memory instead of "
        "spilling to disk",
    )
    _add_actions(p)


def _add_actions(p: argparse.ArgumentParser) -> None:
    """export, sign, record and verify: the signed CSV export of a day (docs/floor.md, Retention and export)."""
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    ex = actions.add_parser(
        "export",
        help="write the CSV export of a gaming day, to be signed by a trusted key",
        description="Writes every archived event of a gaming day to <[export] directory>/<name>-DAY.csv and records "
        "it unsigned; a person whose key is in [export] trusted_keys signs it (`report sign`, or --key here) "
        "and `report record` records the signature (docs/floor.md, Retention and export).",
    )
    ex.add_argument(
        "--day", dest="export_day", type=_day, required=True, help="the gaming day to export, e.g. --day 2026-11-21"
    )
    ex.add_argument(
        "--replace",
        action="store_true",
        help="export a day whose export is signed again: the new file replaces it and needs signing (its "
        "signature stops counting for retention until then)",
    )
    ex.add_argument(
        "--key",
        type=Path,
        help="sign it now with your own key, read for this command only (default: leave it unsigned), e.g. ann.pem",
    )
    sg = actions.add_parser(
        "sign",
        help="sign an export with your key, where the key is (no database needed)",
        description="Writes FILE.sig beside an export: its Ed25519 signature by your key, which never leaves your "
        "workstation; bring the .sig back beside the file on the floor for `report record`.",
    )
    sg.add_argument("file", type=Path, metavar="FILE", help="the export's .csv, e.g. floor-2026-11-21.csv")
    sg.add_argument("--key", type=Path, required=True, help="your private key (PEM from `tablectl command keygen`)")
    rec = actions.add_parser(
        "record",
        help="check a signed export against [export] trusted_keys and record it",
        description="Checks FILE.sig against [export] trusted_keys and that FILE is the latest export of its day, "
        "then records the signer, so that retention counts the day as exported.",
    )
    rec.add_argument("file", type=Path, metavar="FILE", help="the export's .csv, its .sig beside it")
    v = actions.add_parser(
        "verify",
        help="check a signed export's signature",
        description="Checks that FILE is unchanged since a trusted key signed it (FILE.sig beside it); exit 1, "
        "saying why, when it is not.",
    )
    for action in (ex, rec, v):  # --config before or after the action; SUPPRESS keeps the one given before
        action.add_argument("--config", type=Path, default=argparse.SUPPRESS, help=CONFIG_HELP)
    v.add_argument("file", type=Path, metavar="FILE", help="the export's .csv, its .sig beside it")
    v.add_argument(
        "--public-key",
        help="trust this key: base64 as `tablectl command keygen` printed it, or a PEM public half (default: the "
        "--config's [export] trusted_keys)",
    )


def _config(path: Path | None) -> FloorConfig:
    if path is None:
        raise UsageError("give --config FLOOR.toml")
    try:
        return load_floor_config(path)
    except FloorConfigError as err:
        raise UsageError(str(err)) from None


def _period(args: argparse.Namespace, config: FloorConfig) -> Period:
    gd = config.gaming_day
    if args.first is not None or args.last is not None:
        if args.first is None or args.last is None or args.day is not None:
            raise UsageError("a range takes both --from and --to, and no --day")
        try:
            return range_period(args.first, args.last, gd)
        except ValueError as err:
            raise UsageError(str(err)) from None
    if args.day is None:
        raise UsageError("say which period: --day YYYY-MM-DD, --shift NAME --day ..., or --from ... --to ...")
    if args.shift is not None:
        try:
            return shift_period(args.day, config.shift(args.shift), gd)
        except KeyError as err:
            raise UsageError(str(err.args[0])) from None
    return day_period(args.day, gd)


def main(args: argparse.Namespace) -> int:
    if args.action == "verify":
        return _verify(args)
    if args.action == "sign":
        return _sign(args.file, args.key)
    config = _config(args.config)
    if args.action is None and args.out is not None:
        _check_out(args.out)
    scope = None if args.action in ("export", "record") else Scope(_period(args, config), args.table, args.game)
    # The flag wins over the config's [report] work_mem; an error names whichever was used, where to change it.
    work_mem = args.work_mem if args.work_mem is not None else config.report.work_mem
    given = f"[report] work_mem = {work_mem!r} in {args.config}" if args.work_mem is None else f"--work-mem {work_mem}"
    try:
        with connect(config.database) as conn:
            waits = before_writing(conn, f"tablectl report {args.action}") if args.action else None
            if waits is not None:
                raise UsageError(waits)
            if args.action == "record":
                return _record(conn, config, args.file)
            if scope is None:
                return _export(conn, config, args.export_day, args.key, args.replace)
            _known_scope(conn, args.table, args.game)
            report = build(gather(conn, scope, work_mem), scope, config.name)
    except psycopg.OperationalError as err:
        raise UsageError(f"cannot reach the archive ({one_line(err)}); {unreachable(err, config.database)}") from None
    except psycopg.errors.InvalidParameterValue as err:
        raise UsageError(f"{given}: {str(err).strip()}; give e.g. 64MB") from None
    except (FloorConfigError, SummaryPending) as err:
        raise UsageError(str(err)) from None
    text = FORMATS[args.format](report)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
        print(f"tablectl: report written to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


Conn = psycopg.Connection[tuple[object, ...]]


def _check_out(out: Path) -> None:
    """Before the report is made (a month's takes minutes): a --out that cannot be written is said at once."""
    if out.is_dir():
        raise UsageError(f"--out {out}: is a directory: give a file name, e.g. --out {out / 'report.html'}")
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: the directory {out.parent} does not exist: create it, or give another --out")


def _known_scope(conn: Conn, table: str | None, game: str | None) -> None:
    problem = (unknown_table(conn, table) if table is not None else None) or (
        unknown_game(conn, game) if game is not None else None
    )
    if problem is not None:
        raise UsageError(problem)


def _export(conn: Conn, config: FloorConfig, day: date, key_path: Path | None, replace: bool) -> int:
    # The key first: a wrong --key is refused before anything is written.
    try:
        key = None if key_path is None else load_signing_key(key_path)
    except ExportError as err:
        raise UsageError(str(err)) from None
    period = day_period(day, config.gaming_day)
    now = _db_now(conn)
    if now < period.start:
        raise UsageError(
            f"gaming day {day} has not begun (it starts {period.start:%Y-%m-%d %H:%M} UTC): no event of it is "
            "archived; export a day that has ended"
        )
    signed = signed_export(conn, day)
    if signed is not None and not replace:
        raise UsageError(
            f"gaming day {day}'s export {signed[0]} is signed by {signed[1]}: exporting it again replaces the file and "
            "its signature stops counting (retention keeps the day until the new file is signed and recorded); "
            "give --replace to do so"
        )
    done = export_day(conn, day, config.export.directory, config.name)
    if signed is not None:
        print(f"tablectl: replaced the signed export of gaming day {day} (signed by {signed[1]})", file=sys.stderr)
    if now < period.end:
        print(
            f"tablectl: gaming day {day} is not over until {period.end:%Y-%m-%d %H:%M} UTC: this export holds only "
            "the events archived so far; export it again (--replace once signed) after the day ends and `tablectl "
            "floor gaps` shows none",
            file=sys.stderr,
        )
    print(f"{done.path}: {done.events} events of gaming day {day}, sha256 {done.sha256}")
    if key is None:
        print(
            f"not signed yet: the signer runs `tablectl report sign {done.path.name} --key THEIR.pem` where their key "
            f"is, and the .sig comes back beside it for `tablectl report --config F record {done.path}`"
        )
        return 0
    sign_file(done.path, key)
    return _record(conn, config, done.path)


def _db_now(conn: Conn) -> datetime:
    """The database's clock, the one every reader shares (docs/floor.md, "One clock: the database's")."""
    row = conn.execute("SELECT now()").fetchone()
    if row is None or not isinstance(row[0], datetime):
        raise UsageError("the archive did not say its time (SELECT now()): check [database] dsn")
    return row[0]


def _sign(path: Path, key_path: Path) -> int:
    try:
        sig = sign_file(path, load_signing_key(key_path))
    except ExportError as err:
        raise UsageError(str(err)) from None
    print(f"{sig}: Ed25519 signature of {path.name}")
    print(f"bring {sig.name} back beside {path.name} on the floor and run `tablectl report --config F record FILE`")
    return 0


def _record(conn: Conn, config: FloorConfig, path: Path) -> int:
    try:
        day, good = record_signature(conn, path, config.export.trusted_keys)
    except ExportError as err:
        print(f"tablectl: {err}", file=sys.stderr)
        return 1
    print(f"{good.describe()}\nrecorded as the signed export of gaming day {day}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    if args.public_key is not None:
        try:
            trusted = [export_public_key(args.public_key)]
        except ValueError as err:
            raise UsageError(f"--public-key {err}") from None
    else:
        trusted = _config(args.config).export.trusted_keys
        if not trusted:
            raise UsageError("give --public-key KEY, or a --config whose [export] trusted_keys lists the signers' keys")
    try:
        print(verify(args.file, trusted).describe())
    except ExportError as err:
        print(f"tablectl: {err}", file=sys.stderr)
        return 1
    return 0
