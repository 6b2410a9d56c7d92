"""What a supervisor connecting now reads on a table's retained progressive/<level> topics, against the meters as
journaled: the kill -9 campaign's and the stopping table's shared check."""

from __future__ import annotations

from controller.mqtt.contract import Topics
from controller.progressive.model import MICRO, Meters
from tests.broker import Subscribe


def assert_retained_meters(subscribe: Subscribe, topics: Topics, meters: Meters) -> None:
    """Every level's retained topic is there, retained, with the display, reserve and hits of `meters`."""
    levels = {topics.progressive(level): lv for level, lv in meters.levels.items()}
    fresh = subscribe(*levels)
    fresh.wait_until(lambda ms: levels.keys() <= {m.topic for m in ms}, timeout=10, what="every retained meter")
    for m in fresh.messages:
        lv, shown = levels[m.topic], m.json()
        assert m.retain and (shown["display_cents"], shown["reserve_cents"], shown["hits"]) == (
            lv.display_cents,
            lv.reserve_micro // MICRO,
            lv.hits,
        ), (m.topic, shown, lv)
