"""The report counts the wagers a departed player abandoned (.7(b)) as the table's events say where they went:
collected at once (`abandoned_wagers = "lose"`) or released to the house later (`held_wagers.released`, to
"house"): collected, in the handle and the win; held: shown as held until released; released to the player: the
wager returned, neither a win nor handle. The events are the real engine's (tests/engine's pure table), archived
by the floor's real writer in a real PostgreSQL cluster (tests/floor/conftest.py); the report runs its real SQL.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from controller.core.events import DomainEvent
from controller.engine.inputs import PlayerLeft, ReleaseHeld
from floor.config import DatabaseSection, GamingDaySection
from floor.days import day_period
from floor.db import connect
from floor.report.build import Report, build
from floor.report.figures import Scope, gather
from floor.report.html import to_html
from tests.engine.conftest import PureTable, decide_all
from tests.engine.mississippi_table import make
from tests.floor.archiving import events_published, msg, writer

pytestmark = pytest.mark.floor
DAY = date(2026, 11, 21)


def leave_mid_round(t: PureTable) -> None:
    """Seat 1 (Ante $5, Three Card Bonus $1) leaves after "no more bets"; seat 2 plays the round out."""
    t.wager(1, "ante", 500)
    t.wager(1, "three_card_bonus", 100)
    t.wager(2, "ante", 500)
    t.press("no_more_bets")
    decide_all(t, t.feed(PlayerLeft(1)))


def settled(events: list[DomainEvent], wager: str, key: str) -> int:
    """`key` (amount, collected, paid) summed over the wager's settlements: the figure without any abandoned wager."""
    return sum(
        int(w[key]) for e in events if e.type == "hand.settled" for w in e.payload["wagers"] if w["wager"] == wager
    )


def row(report: Report, section: str, **match: object) -> dict[str, Any]:
    rows = report.to_json()["sections"][section]
    (found,) = [r for r in rows if all(r[k] == v for k, v in match.items())]
    return dict(found)


async def test_abandoned_wagers_are_collected_held_or_returned_as_the_events_say(floor_dsn: str) -> None:
    lose = make(abandoned_wagers="lose")
    leave_mid_round(lose)
    hold = make(abandoned_wagers="hold")
    leave_mid_round(hold)
    hold.feed(ReleaseHeld(1, "house"))  # the house keeps them: losing wagers
    leave_mid_round(hold)
    hold.feed(ReleaseHeld(1, "player"))  # he came back: his wagers are returned
    leave_mid_round(hold)  # still held when the day ends
    kinds = [(e.type, e.rule, e.payload.get("disposition") or e.payload.get("to")) for e in hold.events]
    assert [k for k in kinds if k[0] in ("wagers.abandoned", "held_wagers.released")] == [
        ("wagers.abandoned", "655a.7(b)", "hold"),
        ("held_wagers.released", "655a.7(b)", "house"),
        ("wagers.abandoned", "655a.7(b)", "hold"),
        ("held_wagers.released", "655a.7(b)", "player"),
        ("wagers.abandoned", "655a.7(b)", "hold"),
    ]
    w = await writer(floor_dsn)
    batch = [
        msg(m) for m in events_published("ms-lose", lose.events, DAY) + events_published("ms-hold", hold.events, DAY)
    ]
    result = await w.write(batch)
    assert result.events_new == len(batch)
    with connect(DatabaseSection(dsn=floor_dsn)) as conn:
        report = build(
            gather(conn, Scope(day_period(DAY, GamingDaySection()))), Scope(day_period(DAY, GamingDaySection())), "test"
        )

    # Collected at once: in "collected" and the win, per wager, besides what the settlements collected.
    assert row(report, "abandoned", scope="table", id="ms-lose") == {
        "scope": "table",
        "id": "ms-lose",
        "rule": "655a.7(b)",
        "collected_at_once_cents": 600,
        "held_cents": 0,
        "released_to_house_cents": 0,
        "released_to_player_cents": 0,
        "held_at_end_cents": 0,
    }
    ante = row(report, "wagers", scope="table", id="ms-lose", wager="ante")
    assert ante["collected_cents"] == settled(lose.events, "ante", "collected") + 500
    assert ante["handle_cents"] == settled(lose.events, "ante", "amount") + 500
    assert ante["win_cents"] == ante["collected_cents"] - settled(lose.events, "ante", "paid")
    bonus = row(report, "wagers", scope="table", id="ms-lose", wager="three_card_bonus")
    assert (bonus["handle_cents"], bonus["collected_cents"]) == (100, 100)  # no settlement but the abandoned one

    # Held: three holds of $6; one released to the house (collected), one to the player (returned), one still held.
    assert row(report, "abandoned", scope="table", id="ms-hold") == {
        "scope": "table",
        "id": "ms-hold",
        "rule": "655a.7(b)",
        "collected_at_once_cents": 0,
        "held_cents": 1800,
        "released_to_house_cents": 600,
        "released_to_player_cents": 600,
        "held_at_end_cents": 600,
    }
    ante = row(report, "wagers", scope="table", id="ms-hold", wager="ante")
    assert ante["collected_cents"] == settled(hold.events, "ante", "collected") + 500  # the house's release alone
    assert ante["handle_cents"] == settled(hold.events, "ante", "amount") + 500
    bonus = row(report, "wagers", scope="table", id="ms-hold", wager="three_card_bonus")
    assert (bonus["handle_cents"], bonus["collected_cents"], bonus["paid_cents"]) == (100, 100, 0)
    assert row(report, "abandoned", scope="floor", id="all")["held_at_end_cents"] == 600

    # The picture: the abandoned wagers' chart, and the hold chart's win includes what the house collected.
    page = to_html(report)
    assert "Wagers abandoned by a player who left, by table" in page
    assert "Wagers abandoned by a player who left (.7(b))" in page
