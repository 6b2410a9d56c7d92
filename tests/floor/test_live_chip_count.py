"""The live phase of a table counting chips (643a.8(b)(1): a Five Card Bonus on a table game system, counted before
any card): the tile said `dealing` from the lock-out while the dealer's count was awaited (the engine's RECONCILING);
it now says `counting chips` until the table's `deal.started`, and `dealing` from there. A table older than
`deal.started` reads `dealing` from the count that matches, as it deals there. The round is the pure engine's,
published to a real mosquitto as a table publishes its events (QoS 1) and read back as the floor reads them."""

from __future__ import annotations

import json
from datetime import date
from typing import Any

import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from controller.core.events import DomainEvent
from controller.mqtt.contract import TableEvent
from floor.live import TableLive
from floor.messages import Incoming, parse
from tests.broker import Mosquitto, Subscribe
from tests.floor.archiving import events_published
from tests.floor.chip_count_round import counted_round

pytestmark = [pytest.mark.floor]


def phases_heard(mosquitto: Mosquitto, subscribe: Subscribe, prefix: str, events: list[DomainEvent]) -> list[Any]:
    """(event type, the live phase after it) for each event, as the floor hears them through the broker."""
    table = f"{prefix}-t"
    said = events_published(table, events, date(2026, 11, 28))
    sub = subscribe(f"{prefix}/{table}/event")
    client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"{prefix}-pub")
    client.connect(mosquitto.host, mosquitto.port)
    client.loop_start()
    try:
        infos = [client.publish(f"{prefix}/{table}/event", json.dumps(e), qos=1) for e in said]
        for info in infos:
            info.wait_for_publish(timeout=10)
        sub.wait_until(lambda ms: len(ms) >= len(said), what="every event")
    finally:
        client.disconnect()
        client.loop_stop()
    live, out = TableLive(table, state="online"), []
    for m in sub.messages:
        parsed = parse(prefix, m.topic, m.payload)
        assert isinstance(parsed, Incoming) and parsed.kind == "event"
        e = TableEvent.model_validate(parsed.content)
        live.apply_event(e)
        out.append((e.type, live.phase))
    return out


def around_the_count(heard: list[Any]) -> list[Any]:
    """From the lock-out to the first cards."""
    types = [t for t, _ in heard]
    return heard[types.index("lockout.confirmed") : types.index("cards.dealt") + 1]


def test_a_table_counting_chips_says_so_until_its_deal_starts(
    mosquitto: Mosquitto, subscribe: Subscribe, unique_id: str
) -> None:
    heard = phases_heard(mosquitto, subscribe, unique_id, counted_round())
    assert around_the_count(heard) == [
        ("lockout.confirmed", "dealing"),
        ("chip_count.requested", "counting chips"),
        ("chip_count.reconciled", "dealing"),
        ("deal.started", "dealing"),
        ("cards.dealt", "dealing"),
    ]


def test_a_table_older_than_deal_started_deals_from_the_count_that_matches(
    mosquitto: Mosquitto, subscribe: Subscribe, unique_id: str
) -> None:
    older = [e for e in counted_round() if e.type != "deal.started"]
    heard = phases_heard(mosquitto, subscribe, unique_id, older)
    assert around_the_count(heard) == [
        ("lockout.confirmed", "dealing"),
        ("chip_count.requested", "counting chips"),
        ("chip_count.reconciled", "dealing"),
        ("cards.dealt", "dealing"),
    ]
