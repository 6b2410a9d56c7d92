"""A seq gap filled by a resend leaves every page at once. The resent events are older than the last line the page
shows, so the console rightly drew no line for them; but it skipped the table altogether, and the gap's alert (and
its resend button) stayed on the tile and in the alerts though the floor had logged "seq gap filled", until the
table's next new event.

Real parts: the console's own model and updates (floor/console/server.py), fed the contract's messages as the
floor's MQTT parser makes them (floor/messages.py) and the live model as the archive leaves it (the gap closed by the
batch). No table or broker: what is tested is what the console sends on the gap's fill."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from controller.mqtt.contract import TableEvent
from floor.config import parse_floor_config
from floor.console.server import ConsoleServer
from floor.live import TableLive
from floor.messages import Incoming, parse

pytestmark = [pytest.mark.floor]


def event(seq: int, replayed: bool = False) -> Incoming:
    e = TableEvent.model_validate(
        {
            "event_id": f"t1-{seq}",
            "boot_id": "b",
            "seq": seq,
            "ts": f"2026-11-26T12:00:{seq:02d}.000000Z",
            "table_id": "t1",
            "round_id": "t1-r1",
            "type": "wager.accepted",
            "rule": "655a.7(a)",
            "payload": {"seat": 1, "spot": "ante", "amount": 500},
            "replayed": replayed,
        }
    )
    parsed = parse("p", "p/t1/event", e.model_dump_json().encode())
    assert isinstance(parsed, Incoming), parsed
    return parsed


def test_a_filled_gap_leaves_the_tile_and_the_alerts_at_once() -> None:
    server = ConsoleServer(parse_floor_config('[database]\ndsn = "host=unused"\n[console]\nlisten = "127.0.0.1:0"\n'))
    page: asyncio.Queue[tuple[str, str] | None] = asyncio.Queue()
    server.streams.add(page)
    live = TableLive("t1", state="online", gaps=[[2, 3]])  # seqs 2-3 missed, 4 archived
    server.view.live["t1"] = live
    server.archived([event(1), event(4)], {"t1": live})
    first = _update(page)
    assert first["tiles"][0]["gaps"] == [[2, 3]]
    assert [a["kind"] for a in first["alerts"]["table:t1"]] == ["gap"]

    live.gaps = []  # the archive took the resent 2-3: the gap is closed
    server.archived([event(2, replayed=True), event(3, replayed=True)], {"t1": live})
    filled = _update(page)
    assert filled["tiles"][0]["gaps"] == [], filled
    assert filled["alerts"]["table:t1"] == [], filled
    assert filled["lines"] == []  # older than the last line shown: not drawn again


def _update(page: asyncio.Queue[tuple[str, str] | None]) -> dict[str, Any]:
    assert not page.empty(), "the console sent the pages nothing"
    sent = page.get_nowait()
    assert sent is not None and sent[0] == "update", sent
    update: dict[str, Any] = json.loads(sent[1])
    return update
