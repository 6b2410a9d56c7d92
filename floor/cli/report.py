"""`tablectl report`: shift, gaming-day and period reports from the floor's archive; signed exports.

tablectl report --config FLOOR.toml --day 2026-11-21 [--table ID | --game 655a] [--format text|csv|json|html]
tablectl report --config FLOOR.toml --shift swing --day 2026-11-21 ...
tablectl report --config FLOOR.toml --from 2026-11-01 --to 2026-11-30 ...
tablectl report --config FLOOR.toml export --day 2026-11-21      the signed CSV export of the day
tablectl report verify FILE.csv (--public-key KEY | --config FLOOR.toml)
"""

from __future__ import annotations

import argparse
import sys
from datetime import date
from pathlib import Path

import psycopg

from controller.cli.verb import Subparsers, UsageError
from floor.config import FloorConfig, FloorConfigError, load_floor_config
from floor.days import Period, day_period, range_period, shift_period
from floor.db import connect
from floor.export import ExportError, export_day, load_signing_key, public_b64, verify
from floor.report.build import build
from floor.report.figures import Scope, gather
from floor.report.html import to_html
from floor.report.render import to_csv, to_json, to_text

FORMATS = {"text": to_text, "csv": to_csv, "json": to_json, "html": to_html}


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date: write YYYY-MM-DD, e.g. 2026-11-21") from None


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "report",
        description="Reports from the floor's archive per table, game and floor (docs/floor.md gives every "
        "definition): rounds, handle, win and hold by wager, take rates, hit frequencies against expectation, "
        "jackpots and progressive liability, voids and irregularities, device downtime, tilts, supervisor commands.",
    )
    p.add_argument("--config", type=Path, help="the floor config")
    p.add_argument("--day", type=_day, help="the gaming day (it starts at [gaming_day] starts_at)")
    p.add_argument("--shift", help="a shift of --day, by its name in [[shifts]]")
    p.add_argument("--from", dest="first", type=_day, help="the first gaming day of a range")
    p.add_argument("--to", dest="last", type=_day, help="the last gaming day of a range (included)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--table", help="one table's figures only")
    which.add_argument("--game", help="one game's tables only, by chapter, e.g. 655a")
    p.add_argument("--format", choices=sorted(FORMATS), default="text")
    p.add_argument("--out", type=Path, help="write to this file (default: standard output)")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    ex = actions.add_parser("export", help="write the signed CSV export of a gaming day")
    ex.add_argument("--day", dest="export_day", type=_day, required=True)
    v = actions.add_parser("verify", help="check a signed export's signature")
    for action in (ex, v):  # --config before or after the action; SUPPRESS keeps the one given before
        action.add_argument("--config", type=Path, default=argparse.SUPPRESS, help="the floor config")
    v.add_argument("file", type=Path, metavar="FILE")
    v.add_argument("--public-key", help="the export key's public key (base64), as `tablectl command keygen` printed")


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
    config = _config(args.config)
    scope = None if args.action == "export" else Scope(_period(args, config), args.table, args.game)
    try:
        with connect(config.database) as conn:
            if scope is None:
                return _export(conn, config, args.export_day)
            report = build(gather(conn, scope), scope, config.name)
    except psycopg.OperationalError as err:
        raise UsageError(f"cannot reach the archive ({str(err).strip()}); check [database] dsn") from None
    except FloorConfigError as err:
        raise UsageError(str(err)) from None
    text = FORMATS[args.format](report)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
        print(f"tablectl: report written to {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0


def _export(conn: psycopg.Connection[tuple[object, ...]], config: FloorConfig, day: date) -> int:
    if config.export.signing_key is None:
        raise UsageError("set [export] signing_key in the floor config (make a key with `tablectl command keygen`)")
    try:
        key = load_signing_key(config.export.signing_key)
    except ExportError as err:
        raise UsageError(str(err)) from None
    done = export_day(conn, day, config.export.directory, key, config.name)
    print(f"{done.path}: {done.events} events of gaming day {day}, sha256 {done.sha256}")
    print(f"{done.signature}: Ed25519 signature by {public_b64(key.public_key())}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    trusted = args.public_key
    if trusted is None:
        config = _config(args.config)
        if config.export.signing_key is None:
            raise UsageError("give --public-key KEY, or a --config whose [export] signing_key is the export key")
        try:
            trusted = public_b64(load_signing_key(config.export.signing_key).public_key())
        except ExportError as err:
            raise UsageError(str(err)) from None
    try:
        print(verify(args.file, trusted))
    except ExportError as err:
        print(f"tablectl: {err}", file=sys.stderr)
        return 1
    return 0
