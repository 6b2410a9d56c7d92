"""A table's tile shows its last round's result: its number, the total wagered (the lock-out's wagers and the street
wagers after), what it paid out, the table's result, in dollars (controller.core.money.fmt), and each seat's hand as
its settlement named it. Only once the round is finished: while it is in play the tile keeps the round before (no
hand, nor any card, of a round still being dealt), and a voided round says so with its reason.

Real parts: the console's own model and updates (floor/console/server.py), fed the contract's messages as the
floor's MQTT parser makes them (floor/messages.py), and at its start the archive in a real PostgreSQL. No table or
broker: what is tested is what the tile carries; tests/floor/test_console_live_rounds.py shows it in the browser."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from controller.mqtt.contract import TableEvent
from floor.config import parse_floor_config
from floor.console.server import ConsoleServer
from floor.db import connect
from floor.live import TableLive
from floor.messages import Incoming, parse
from tests.floor.archiving import msg, writer

pytestmark = [pytest.mark.floor]


class Table:
    """Events of one table, numbered as it publishes them."""

    def __init__(self) -> None:
        self.seq = 0

    def event(self, round_id: str, type_: str, payload: dict[str, Any]) -> Incoming:
        self.seq += 1
        e = TableEvent.model_validate(
            {
                "event_id": f"t1-{self.seq}",
                "boot_id": "b",
                "seq": self.seq,
                "ts": f"2026-11-26T12:00:{self.seq:02d}.000000Z",
                "table_id": "t1",
                "round_id": round_id,
                "type": type_,
                "rule": "655a.11(j)",
                "payload": payload,
            }
        )
        parsed = parse("p", "p/t1/event", e.model_dump_json().encode())
        assert isinstance(parsed, Incoming), parsed
        return parsed


class Page:
    """A page's stream: the last tile of t1 the updates carried (a tile is sent again only when it changed)."""

    def __init__(self, server: ConsoleServer) -> None:
        self.queue: asyncio.Queue[tuple[str, str] | None] = asyncio.Queue()
        server.streams.add(self.queue)
        self.tile: dict[str, Any] = {}

    def last_round(self) -> Any:
        while not self.queue.empty():
            sent = self.queue.get_nowait()
            assert sent is not None and sent[0] == "update", sent
            for tile in json.loads(sent[1])["tiles"]:
                self.tile = tile
        return self.tile["last_round"]


def test_the_tile_shows_the_last_finished_round_in_dollars_and_never_one_in_play() -> None:
    server = ConsoleServer(parse_floor_config('[database]\ndsn = "host=unused"\n[console]\nlisten = "127.0.0.1:0"\n'))
    page = Page(server)
    live = {"t1": TableLive("t1", state="online")}
    t = Table()
    lockout = {"players": [1, 2], "wagers": {"1": {"ante": 500, "three_card_bonus": 100}, "2": {"ante": 1000}}}
    server.archived([t.event("t1-r7", "no_more_bets", lockout)], live)
    assert page.last_round() is None  # nothing finished yet
    server.archived([t.event("t1-r7", "street_wager.placed", {"seat": 1, "street": 3, "amount": 1500})], live)
    assert page.last_round() is None
    settled = {"seat": 1, "cards": ["KS", "KH"], "hand": "pair of kings", "wagers": [], "paid": 2000}
    bonus = {"seat": 2, "hand": "high card", "amount": 0, "outcome": "lose", "paid": 0}
    server.archived(
        [t.event("t1-r7", "hand.settled", settled), t.event("t1-r7", "three_card_bonus.settled", bonus)], live
    )
    assert page.last_round() is None  # settled, but the round is not finished: nothing shown of it yet
    done = {"round_no": 7, "players": 2, "paid": 2000, "collected": 1100, "table_result": -900}
    server.archived([t.event("t1-r7", "round.completed", done)], live)
    shown = page.last_round()
    assert shown["summary"] == "round 7: wagered $31.00, paid out $20.00, table result -$9.00"
    assert shown["hands"] == ["seat 1: pair of kings", "seat 2: high card"]
    assert (shown["round_no"], shown["wagered"], shown["paid"], shown["outcome"]) == (7, 3100, 2000, "completed")
    assert "KS" not in json.dumps(shown)  # the hand's name, not its cards

    # The next round in play keeps round 7 on the tile; its void replaces it, saying why, with its own wagers only.
    server.archived([t.event("t1-r8", "no_more_bets", {"players": [2], "wagers": {"2": {"ante": 2500}}})], live)
    assert page.last_round()["round_no"] == 7
    server.archived([t.event("t1-r8", "round.voided", {"reason": "shoe fault", "returned": {}})], live)
    voided = page.last_round()
    assert (voided["outcome"], voided["wagered"], voided["hands"]) == ("voided", 2500, [])
    assert voided["summary"] == "t1-r8 voided: shoe fault"


async def test_a_restarted_console_shows_the_last_round_from_the_archive(floor_dsn: str) -> None:
    """At start the console reads each table's last events from the archive (floor/console/loading.py): the tile's
    last round is there at once, not only after the table's next round."""
    t = Table()
    done = {"round_no": 4, "players": 1, "paid": 0, "collected": 500, "table_result": 500}
    events = [
        t.event("t1-r4", "no_more_bets", {"players": [1], "wagers": {"1": {"ante": 500}}}),
        t.event("t1-r4", "hand.settled", {"seat": 1, "cards": [], "hand": "high card", "wagers": [], "paid": 0}),
        t.event("t1-r4", "round.completed", done),
        t.event("t1-r5", "betting.opened", {"round_no": 5}),  # the next round begun: nothing of it shown
    ]
    w = await writer(floor_dsn)
    assert (await w.write([msg(e.content) for e in events])).events_new == 4
    server = ConsoleServer(parse_floor_config(f'[database]\ndsn = "{floor_dsn}"\n[console]\nlisten = "127.0.0.1:0"\n'))
    with connect(server.config.database) as conn:
        server.load({"t1": TableLive("t1", state="online")}, conn)
    shown = server.view.tile("t1", datetime(2026, 11, 26, 13, tzinfo=UTC))["last_round"]
    assert shown["summary"] == "round 4: wagered $5.00, paid out $0.00, table result $5.00"
    assert shown["hands"] == ["seat 1: high card"]
