"""`tablectl settle`: recompute a recorded round's settlement for a dispute.

The chapter of the config's [game] chooses the round record's model and the settlement function, through
controller.games.registry; the record's own `chapter` must agree. The result lists, per seat in settlement
order and per wager, the outcome, the amounts paid, returned and collected, and the rule.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from controller.cli import options
from controller.cli.verb import Subparsers, UsageError
from controller.config.errors import ConfigError, describe_errors
from controller.config.files import FileRefused, read_bounded
from controller.config.table import TableConfig
from controller.core.cards import CardError
from controller.core.money import Cents
from controller.core.settlement import Settled, SettlementError
from controller.games.registry import settle_record
from controller.store.reader import JournalReader

ROUND_MAX_BYTES = 1024 * 1024  # one round's record: cards, wagers, decisions, meters


def load_round(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(read_bounded(path, ROUND_MAX_BYTES).decode("utf-8"))
    except FileRefused as err:
        # A FIFO or a device would have blocked the read for ever (tablectl settle /dev/zero).
        raise ConfigError(f"cannot read round {err.path}: {err.problem}; pass the round's JSON file") from None
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"{path} is not UTF-8 text (byte offset {err.start}): save the round record as UTF-8"
        ) from None
    except json.JSONDecodeError as err:
        raise ConfigError(f"{path} is not valid JSON: {err}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a round record is a JSON object, see docs/settle.md")
    return data


def load_journaled_round(journal: Path, round_id: str) -> dict[str, Any]:
    """The round record the table journaled when it settled `round_id` (`round.recorded`, docs/events.md): the same
    cards, wagers, decisions, bound players and meters its settlement used."""
    try:
        with JournalReader(journal) as reader:
            found = [r for r in reader.rows() if r["type"] == "round.recorded" and r["round_id"] == round_id]
    except (OSError, sqlite3.Error, ValueError) as err:
        raise ConfigError(f"cannot read journal {journal}: {err}; pass the table's journal file") from None
    if not found:
        raise ConfigError(
            f"{journal}: no settled round {round_id!r} (no round.recorded event with that round_id): give a round_id "
            "as the journal has it, e.g. from `tablectl journal tail`; a voided round has no settlement to recompute "
            "unless its optional wagers were settled (683a.13(d))"
        )
    record = found[-1]["payload"]["record"]
    if not isinstance(record, dict):
        raise ConfigError(f"{journal}: round {round_id}'s round.recorded holds no record object")
    return record


def settle_file(config: TableConfig, path: Path) -> dict[str, Any]:
    return settle_data(config, load_round(path), str(path))


def settle_data(config: TableConfig, data: dict[str, Any], path: str) -> dict[str, Any]:
    """Settle a round record (`path` says where it came from, for the errors)."""
    chapter = config.game.chapter
    if data.get("chapter") != chapter:
        raise ConfigError(
            f'{path}: "chapter" is {data.get("chapter")!r} but the config\'s table plays chapter '
            f'{chapter}: settle it with that chapter\'s config, or set "chapter": "{chapter}"'
        )
    try:
        rows, meters = settle_record(config.game, data)
    except ValidationError as err:
        raise ConfigError(f"{path} is not a valid {chapter} round record:\n{describe_errors(err)}") from None
    except (SettlementError, CardError) as err:
        raise ConfigError(f"{path}: {err}") from None
    return report(config, data, rows, meters)


def report(config: TableConfig, data: dict[str, Any], rows: list[Settled], meters: dict[str, Cents]) -> dict[str, Any]:
    # A seat's rows stay in the order they were settled; seats are listed in the order their settlement
    # completed (a fold's wagers may be collected early, its optional wagers settled in the seat's turn).
    by_seat: dict[int, list[dict[str, Any]]] = {}
    last: dict[int, int] = {}
    for i, row in enumerate(rows):
        by_seat.setdefault(row.seat, []).append({k: v for k, v in row.as_dict().items() if k != "seat"})
        last[row.seat] = i
    seats: list[dict[str, Any]] = [{"seat": n, "wagers": by_seat[n]} for n in sorted(by_seat, key=lambda n: last[n])]
    for s in seats:
        s["paid"] = sum(w["paid"] for w in s["wagers"])
        s["collected"] = sum(w["collected"] for w in s["wagers"])
        s["net"] = s["paid"] - s["collected"]
    out: dict[str, Any] = {
        "table_id": config.table_id,
        "chapter": config.game.chapter,
        "round_id": data.get("round_id"),
        "seats": seats,
        "totals": {
            "paid": sum(r.paid for r in rows),
            "returned": sum(r.returned for r in rows),
            "collected": sum(r.collected for r in rows),
        },
    }
    if meters or data.get("meters"):
        out["meters"] = {"before": data.get("meters", {}), "after": meters}
    return out


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "settle",
        description="Settles a round from its record (cards, wagers, decisions, meter values, random draws) with "
        "the config's paytables and prints, per seat and per wager, the outcome, the amounts paid, "
        "returned and collected, and the rule, as JSON. The record format is in docs/settle.md; "
        "examples are in docs/examples/.",
    )
    p.add_argument("--config", type=Path, required=True, help="the table's config TOML (its [game] decides)")
    p.add_argument("round", type=Path, nargs="?", metavar="ROUND.json", help="the round record")
    p.add_argument(
        "--journal",
        type=Path,
        help="settle a round the table journaled instead of a ROUND.json: its journal file (read-only), with --round",
    )
    p.add_argument("--round", dest="round_id", metavar="ROUND_ID", help="the journaled round's id, e.g. cajun-r000004")


def main(args: argparse.Namespace) -> int:
    config = options.load_table(args.config)
    _one_round(args.round, args.journal, args.round_id)
    try:
        if args.journal is not None:
            source = f"{args.journal} round {args.round_id}"
            result = settle_data(config, load_journaled_round(args.journal, args.round_id), source)
        else:
            result = settle_file(config, args.round)
    except ConfigError as err:
        raise UsageError(str(err)) from None
    print(json.dumps(result, indent=2))
    return 0


def _one_round(round_file: Path | None, journal: Path | None, round_id: str | None) -> None:
    """Which round: one message for every wrong mix, which said "give a ROUND.json" even to an operator who had."""
    if round_file is not None and (journal is not None or round_id is not None):
        raise UsageError(
            f"give {round_file} or --journal with --round, not both: the ROUND.json is a round already taken out of a "
            "journal"
        )
    if journal is not None and round_id is None:
        raise UsageError(
            f"--journal {journal} needs --round ROUND_ID: the round's id, e.g. from `tablectl journal tail`"
        )
    if round_id is not None and journal is None:
        raise UsageError(f"--round {round_id} needs --journal FILE: the journal of the table that played it")
    if round_file is None and journal is None:
        raise UsageError("give a ROUND.json, or --journal FILE with --round ROUND_ID (a round the table journaled)")
