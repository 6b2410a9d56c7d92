"""`tablectl par --config TABLE.toml [--format text|json|html] [--meter LEVEL=AMOUNT ...]`: the exact par sheet of
the configured game with its configured paytables (controller.par; docs/par.md)."""

from __future__ import annotations

import argparse
import re
import sys

import structlog

from controller.cli import numbers
from controller.cli.verb import Subparsers, UsageError
from controller.config.errors import ConfigError
from controller.config.table import load_config
from controller.core.digits import is_ascii_digits
from controller.core.spaces import strip_ascii
from controller.par.analyse import meter_levels, par_sheet
from controller.par.render import FORMATS
from controller.progressive.parameters import LEVEL_PATTERN


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "par",
        help="the exact par sheet of a table's configured game (docs/par.md)",
        description="Computes the exact par sheet of the game a table config sets up: the house edge and the return "
        "of each wager, every paytable row's frequency and the strategy the figures assume (docs/par.md).",
    )
    p.add_argument("--config", required=True, help="a table config (configs/*.toml; not the floor's config)")
    p.add_argument(
        "--format",
        choices=sorted(FORMATS),
        default="text",
        help="text to read, json for a program, html for a page (default text), e.g. --format html > par.html",
    )
    p.add_argument(
        "--meter",
        action="append",
        default=[],
        metavar="LEVEL=CENTS",
        help="a progressive meter's value in cents to evaluate the return at (default: its seed), e.g. mega=1500000",
    )
    p.add_argument(
        "--others",
        type=numbers.whole("--others", 0, 6, "--others 3"),
        default=0,
        help="other players at the table, for envy bonuses (655a.12(c)(5), 643a.12(d)(5), (e)(5))",
    )


# The most a --meter may say: $100,000,000, far above any table game's meter (the largest pay a few million dollars).
# A longer figure is a slip of the keyboard, and the sheet would price the wager at a meter no table ever shows.
METER_CAP_CENTS = 10_000_000_000


def _meters(items: list[str]) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        level, sep, amount = (strip_ascii(part) for part in item.partition("="))
        if not sep or not re.fullmatch(LEVEL_PATTERN, level) or not is_ascii_digits(amount):
            raise UsageError(
                f"--meter {numbers.shown(item)}: write LEVEL=CENTS, the cents in ASCII digits 0-9, "
                "e.g. --meter mega=1500000 (LEVEL is a meter's name: a-z and _)"
            )
        # By length first: int() of thousands of digits is slow and its message says nothing useful here.
        if len(amount.lstrip("0")) > len(str(METER_CAP_CENTS)) or int(amount) > METER_CAP_CENTS:
            raise UsageError(
                f"--meter {level}={numbers.shown(amount, 20)}: give at most {METER_CAP_CENTS:,} cents "
                f"(${METER_CAP_CENTS // 100:,}), more than any table game's meter shows: a longer figure is a typo"
            )
        out[level] = int(amount)
    return out


def _check_levels(meters: dict[str, int], levels: tuple[str, ...], chapter: str, path: str) -> None:
    """A --meter the configured game has no meter for would be ignored and the sheet priced at the seeds: refused."""
    unknown = sorted(set(meters) - set(levels))
    if not unknown:
        return
    has = (
        f"its meters are {', '.join(levels)}: give e.g. --meter {levels[0]}=1500000"
        if levels
        else "it has no progressive meter: give no --meter"
    )
    raise UsageError(f"--meter {', '.join(unknown)}: the {chapter} game of {path} has no such meter; {has}")


def main(args: argparse.Namespace) -> int:
    meters = _meters(args.meter)
    if not 0 <= args.others <= 6:
        raise UsageError(f"--others {args.others}: a table has 0 to 6 other players")
    try:
        config = load_config(args.config)
    except ConfigError as err:
        raise UsageError(
            f"{err}\n(tablectl par reads a table config such as configs/mississippi-stud.toml; configs/floor.toml "
            "is the floor service's config, not a table's)"
        ) from None
    _check_levels(meters, meter_levels(config.game), config.game.chapter, args.config)
    log = structlog.get_logger("tablectl.par")
    log.info("analysing", table_id=config.table_id, chapter=config.game.chapter)
    sheet = par_sheet(config.table_id, config.game, meters, args.others)
    log.info("analysed", seconds=round(sheet.seconds or 0.0, 2))
    sys.stdout.write(FORMATS[args.format](sheet))
    return 0
