"""An event whose payload the report's SQL cannot cast is refused at ingest (floor/report/shapes.py), because archived
it stops every report of its period: shown here by writing each such event past the check, with the floor's real
writer into a real PostgreSQL, and running the report's real SQL (gather), which fails; the well-formed event of
the same type reports fine, and parse() refuses the bad one with the reason."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import psycopg
import pytest

from controller.mqtt.contract import TableEvent
from floor.config import DatabaseSection, GamingDaySection
from floor.days import day_period
from floor.db import connect
from floor.messages import Incoming, Rejected, content_digest, parse
from floor.report.figures import Scope, gather
from tests.floor.archiving import writer

pytestmark = pytest.mark.floor
DAY = date(2026, 11, 21)
WAGER = {"wager": "ante", "amount": 500, "outcome": "win", "collected": 0, "paid": 500, "odds": "1 to 1"}
# (type, good payload, bad payload, what the refusal says)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], str]] = [
    ("hand.settled", {"hand": "pair", "wagers": [WAGER]}, {"hand": "pair", "wagers": {"ante": 500}}, "an array"),
    (
        "hand.settled",
        {"hand": "pair", "wagers": [WAGER]},
        {"hand": "pair", "wagers": [{**WAGER, "amount": 1.5}]},
        "wagers[0].amount",
    ),
    ("three_card_bonus.settled", {"amount": 100, "paid": 0}, {"amount": "one hundred", "paid": 0}, "payload.amount"),
    (
        "seat.folded",
        {"seat": 1, "collected": {"ante": 500}},
        {"seat": 1, "collected": {"ante": "all"}},
        "collected.ante",
    ),
    (
        "wagers.abandoned",
        {"disposition": "lose", "wagers": {"ante": 500}},
        {"disposition": "lose", "wagers": [500]},
        "payload.wagers",
    ),
    (
        "progressive.paid",
        {"hit": "h1", "level": "mega", "amount": 5000},
        {"hit": "h1", "level": "mega", "amount": 5e3},
        "payload.amount",
    ),
    ("no_more_bets", {"wagers": {"1": {"ante": 500}}}, {"wagers": {"1": 500}}, "no_more_bets"),
    (
        "meter.contributed",
        {"level": "mega", "delta": {"in_count": 1, "in_cents": 100, "contributed_micro": 5_000_000}},
        {"level": "mega", "delta": {"in_count": 1, "in_cents": 100, "contributed_micro": 0.5}},
        "delta.contributed_micro",
    ),
    (
        "meter.contributions_reversed",
        {"level": "mega", "delta": {"in_count": -1, "in_cents": -100}},
        {"level": "mega", "delta": {"in_count": -1, "in_cents": "all"}},
        "payload.delta.in_cents",
    ),
]


def event(seq: int, type_: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "event_id": f"e{seq}",
        "boot_id": "b1",
        "seq": seq,
        "ts": f"{DAY.isoformat()}T12:00:{seq:02d}.000000Z",
        "table_id": "t1",
        "round_id": "t1-r1",
        "type": type_,
        "rule": None,
        "payload": payload,
    }


def report(dsn: str) -> None:
    scope = Scope(day_period(DAY, GamingDaySection()))
    with connect(DatabaseSection(dsn=dsn)) as conn:
        gather(conn, scope)


@pytest.mark.parametrize(("type_", "good", "bad", "says"), CASES)
async def test_a_payload_the_report_cannot_cast_is_refused_at_ingest(
    floor_dsn: str, type_: str, good: dict[str, Any], bad: dict[str, Any], says: str
) -> None:
    refused = parse("p", "p/t1/event", json.dumps(event(2, type_, bad)).encode())
    assert isinstance(refused, Rejected) and says in refused.reason and "the reports sum it" in refused.reason
    w = await writer(floor_dsn)
    accepted = parse("p", "p/t1/event", json.dumps(event(1, type_, good)).encode())
    assert isinstance(accepted, Incoming)
    await w.write([accepted])
    report(floor_dsn)  # the well-formed one reports
    past = event(2, type_, bad)  # as it was archived before the check
    await w.write([Incoming("event", "t1", TableEvent.model_construct(**past), past, content_digest(past))])
    with pytest.raises(psycopg.DataError):
        report(floor_dsn)
