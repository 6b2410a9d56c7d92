"""A flood of refused messages does not flood the floor's log (floor/refusal_log.py, docs/floor.md "Refused messages
are bounded"): through a real mosquitto, 4,000 junk messages on one topic and on a thousand topics are said in a
bounded number of lines, the first of each topic one by one, the rest in one summary line per topic per minute whose
counts add up, with the lines said one by one, to every message sent. Before, each refusal was a `message refused`
warning of its own: 4,000 lines here, and journald's rate limit then dropped the service's other lines with them.

The minute is the service's monotonic clock, replaced here by one the test moves (a test may not wait a minute);
the broker, the database and the service's own summary task are real.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, MutableMapping
from typing import Any

import aiomqtt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from floor.config import parse_floor_config
from floor.refusal_log import SUMMARY, summary
from floor.refusals import OTHERS, WINDOW_S, RefusalBudget, RefusalLines, Tally
from floor.service import FloorService
from tests.broker import Mosquitto, free_port
from tests.floor.service_running import running, until

pytestmark = [pytest.mark.e2e, pytest.mark.floor]
PREFIX = "loud"
PER_TOPIC, PER_MINUTE = 20, 50
Log = MutableMapping[str, Any]


class Ticks:
    """The service's monotonic clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def junk(i: int) -> bytes:
    return b"junk %06d " % i + b"x" * 100  # not JSON


@pytest.fixture
async def floor(mosquitto: Mosquitto, floor_dsn: str) -> AsyncIterator[tuple[FloorService, Ticks, asyncio.Task[None]]]:
    config = parse_floor_config(
        f'[database]\ndsn = "{floor_dsn}"\n[mqtt]\nbroker = "{mosquitto.url}"\nprefix = "{PREFIX}"\n'
        f'client_id = "floor-{free_port()}"\n[ingest]\n'
        f"refused_rows_per_topic = {PER_TOPIC}\nrefused_rows_per_minute = {PER_MINUTE}\n"
    )
    service = FloorService(config)
    ticks = service.refusal_log.ticks = Ticks()
    async with running(service) as task:
        yield service, ticks, task


async def archived(dsn: str, want: int) -> None:
    """Until the archive counts `want` refusals (the listener said each before queueing it)."""
    await until(dsn, "SELECT coalesce(sum(count), 0) FROM rejected_messages", want)


async def said(logs: list[Log], want: int) -> list[Log]:
    """The summary lines, once `want` of them were said (by the service's own task, each second)."""
    async with asyncio.timeout(30):
        while len(found := [e for e in logs if e["event"] == SUMMARY]) < want:  # noqa: ASYNC110 (none to wait on)
            await asyncio.sleep(0.05)
    return found


def singles(logs: list[Log]) -> list[Log]:
    return [e for e in logs if e["event"] == "message refused"]


async def test_a_flood_is_said_in_bounded_lines_whose_counts_add_up_to_every_message(
    mosquitto: Mosquitto, floor: tuple[FloorService, Ticks, asyncio.Task[None]], floor_dsn: str
) -> None:
    service, ticks, running = floor
    one_topic, many, again = 3000, 1000, 100
    t1 = f"{PREFIX}/t1/event"
    with capture_logs() as logs:
        async with aiomqtt.Client(mosquitto.host, mosquitto.port) as client:
            for i in range(one_topic):
                await client.publish(t1, junk(i), qos=1)
            for i in range(many):  # a flood over a thousand topics, none over its own rate: the floor's rate holds
                await client.publish(f"{PREFIX}/x{i}/event", junk(one_topic + i), qos=1)
        await archived(floor_dsn, one_topic + many)
        assert not [e for e in logs if e["event"] == SUMMARY], "no summary before its minute is over"
        ticks.now += WINDOW_S + 1
        summaries = await said(logs, 2)
        first = singles(logs)
        # The first PER_TOPIC of t1 a line each, then its run; the floor's rate leaves room for 29 of the others.
        assert len([e for e in first if e["topic"] == t1]) == PER_TOPIC
        assert len(first) == PER_MINUTE - 1
        by_key = {e["topic"] if e["topics"] == 1 else OTHERS: e for e in summaries}
        assert by_key[t1]["count"] == one_topic - PER_TOPIC
        assert by_key[t1]["bytes"] == (one_topic - PER_TOPIC) * len(junk(0))
        assert by_key[t1]["said"].startswith(f"{one_topic - PER_TOPIC} more refused on {t1} in the last 61 s")
        assert "latest reason: " in by_key[t1]["said"] and by_key[t1]["reason"]
        others = by_key[OTHERS]
        assert others["count"] == many - (PER_MINUTE - 1 - PER_TOPIC) and others["topics"] == others["count"]
        assert others["topic"] == f"{PREFIX}/x{many - 1}/event"
        assert len(first) + sum(e["count"] for e in summaries) == one_topic + many
        # A minute later the topic is under the rate again: its first refusals are said again, and what a stop
        # interrupts is said at the stop, not lost.
        async with aiomqtt.Client(mosquitto.host, mosquitto.port) as client:
            for i in range(again):
                await client.publish(t1, junk(i), qos=1)
        await archived(floor_dsn, one_topic + many + again)
        service.stop()
        await asyncio.wait_for(asyncio.shield(running), 30)
        summaries = [e for e in logs if e["event"] == SUMMARY]
        sent = one_topic + many + again
        assert len(singles(logs)) == PER_MINUTE - 1 + PER_TOPIC
        assert len(singles(logs)) + sum(e["count"] for e in summaries) == sent
        assert summaries[-1]["topic"] == t1 and summaries[-1]["count"] == again - PER_TOPIC
    refusal_lines = [e for e in logs if e["event"] in ("message refused", SUMMARY)]
    assert len(refusal_lines) == PER_MINUTE - 1 + PER_TOPIC + 3, "4,100 refusals in 72 lines"
    assert service.failure is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.floats(0, 5), st.booleans()), min_size=1, max_size=400))
def test_lines_said_and_summaries_count_every_refusal_and_stay_bounded(
    steps: list[tuple[int, float, bool]],
) -> None:
    lines = RefusalLines(RefusalBudget(per_topic=3, per_minute=5))
    now, one_by_one, counted, summaries = 0.0, [], 0, 0
    for topic, dt, look in steps:
        now += dt
        if lines.admit(f"t{topic}", 7, f"why {topic}", now):
            one_by_one.append(now)
        if look:  # the service looks every second; here at random moments
            due = lines.due(now)
            assert len(due) <= 5 + 1 and all(t.count > 0 and t.bytes == 7 * t.count for t in due)
            counted += sum(t.count for t in due)
            summaries += len(due)
    counted += sum(t.count for t in lines.due(now, everything=True))
    assert len(one_by_one) + counted == len(steps)  # none lost
    for i, t in enumerate(one_by_one):  # at most per_minute lines of their own in any minute
        assert len([u for u in one_by_one[i:] if u < t + WINDOW_S]) <= 5
    assert not lines.tallies


def test_past_per_minute_summaries_the_rest_are_said_in_one() -> None:
    """Runs that stay over the rate minute after minute (each a row updated, not a new one) could be many: their
    summaries are per_minute lines at most, the biggest, and one line for the rest, which counts them all."""
    lines = RefusalLines(RefusalBudget(per_topic=1, per_minute=3))
    for n in range(1, 11):
        tally = lines.tallies[f"t{n}"] = Tally(f"t{n}", 0.0)
        for _ in range(n):
            tally.add(f"t{n}", 2, "not JSON", float(n))
    due = lines.due(WINDOW_S)
    assert [(t.key, t.count) for t in due] == [("t10", 10), ("t9", 9), ("t8", 8), (OTHERS, 28)]
    assert due[-1].bytes == 56 and due[-1].topics == {f"t{n}" for n in range(1, 8)}
    assert summary(due[-1], WINDOW_S)["said"] == (
        "28 more refused on 7 topic(s), the latest t7 in the last 60 s, latest reason: not JSON"
    )
    assert not lines.tallies
