"""A flood of refused messages cannot fill the floor's disk (floor/refusals.py, docs/floor.md "Bad input"): through a
real mosquitto into a real PostgreSQL, thousands of junk messages on one topic and on a thousand topics leave a
bounded number of rows, each holding at most [ingest] refused_keep_bytes of its payload with the whole payload's
size and sha256, and coalesced rows whose counts and bytes add up to every message sent; the good events around the
flood are archived, and `floor status` counts every refusal. Before, each refusal was a row holding the payload
whole (up to 256 KiB): 3,000 rows and some 6 MB here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator

import aiomqtt
import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from floor.config import parse_floor_config
from floor.refusals import OTHERS, WINDOW_S, RefusalBudget
from floor.retention import apply_retention, plan_retention
from floor.schema import migrate
from floor.service import FloorService
from floor.status import live_tables, status_text
from tests.broker import Mosquitto, free_port
from tests.floor.service_running import running, until

pytestmark = [pytest.mark.e2e, pytest.mark.floor]
PREFIX = "flood"
PER_TOPIC, PER_MINUTE, KEEP = 20, 50, 64


def event(n: int) -> bytes:
    return json.dumps(
        {
            "event_id": f"t1-{n}",
            "boot_id": "b1",
            "seq": n,
            "ts": f"2026-11-21T10:00:{n:02d}.000000Z",
            "table_id": "t1",
            "round_id": "t1-r1",
            "type": "wager.accepted",
            "rule": "655a.7(d)(1)",
            "payload": {"seat": 1, "spot": "ante", "amount": 500},
        }
    ).encode()


def junk(i: int) -> bytes:
    return b"junk %06d " % i + b"x" * 2000  # not JSON, 2,012 bytes, each one different


@pytest.fixture
async def floor(mosquitto: Mosquitto, floor_dsn: str) -> AsyncIterator[FloorService]:
    config = parse_floor_config(
        f'[database]\ndsn = "{floor_dsn}"\n[mqtt]\nbroker = "{mosquitto.url}"\nprefix = "{PREFIX}"\n'
        f'client_id = "floor-{free_port()}"\n[ingest]\nrefused_keep_bytes = {KEEP}\n'
        f"refused_rows_per_topic = {PER_TOPIC}\nrefused_rows_per_minute = {PER_MINUTE}\n"
        '[console]\nlisten = "127.0.0.1:0"\n'
    )
    service = FloorService(config)
    async with running(service):
        yield service


async def test_a_flood_of_junk_leaves_bounded_rows_that_count_every_message(
    mosquitto: Mosquitto, floor: FloorService, floor_dsn: str
) -> None:
    one_topic, many = 3000, 1000
    async with aiomqtt.Client(mosquitto.host, mosquitto.port) as client:
        await client.publish(f"{PREFIX}/t1/event", event(1), qos=1)
        for i in range(one_topic):
            await client.publish(f"{PREFIX}/t1/event", junk(i), qos=1)
        for i in range(many):  # a flood spread over a thousand topics: no topic over its rate, the floor still is
            await client.publish(f"{PREFIX}/x{i}/event", junk(one_topic + i), qos=1)
        await client.publish(f"{PREFIX}/t1/event", event(2), qos=1)
    sent = one_topic + many
    await until(floor_dsn, "SELECT coalesce(sum(count), 0) FROM rejected_messages", sent)
    await until(floor_dsn, "SELECT count(*) FROM events", 2)
    with psycopg.connect(floor_dsn) as conn:
        rows = conn.execute(
            "SELECT topic, payload, size, sha256, count, bytes FROM rejected_messages ORDER BY id"
        ).fetchall()
        text = status_text(live_tables(conn), conn, 30.0)
    # The flood took well under a minute: the rows are what one minute may hold, the rest is counted in them.
    assert len(rows) <= PER_MINUTE + 1, len(rows)
    assert sum(r[5] for r in rows) == sent * 2012
    assert all(len(bytes(payload)) == KEEP and size == 2012 for _, payload, size, _, _, _ in rows)
    singles = [r for r in rows if r[4] == 1]
    coalesced = [r for r in rows if r[4] > 1]
    assert len([r for r in singles if r[0] == f"{PREFIX}/t1/event"]) == PER_TOPIC  # the first of t1's, each its own
    assert coalesced, "the flood was coalesced into counted rows"
    for topic, payload, _, sha, _, _ in rows:
        # The kept bytes are the first of the message whose sha256 the row holds: the whole one, as sent.
        number = int(bytes(payload)[5:11])
        assert bytes(sha) == hashlib.sha256(junk(number)).digest(), topic
    assert f"{sent} message(s) refused (not archived; {len(rows)} row(s) in rejected_messages)" in text
    assert "coalesced: over the rate" in text
    assert floor.writes.refused == sent and floor.failure is None
    # The console's floor page is told each batch's refusals (tests/floor/test_console_refused.py shows them).
    assert floor.console is not None and floor.console.view.refused["count"] == sent
    assert floor.console.view.refused["last_topic"] == f"{PREFIX}/x{many - 1}/event"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.floats(0, 5)), min_size=1, max_size=400))
def test_the_budget_adds_at_most_its_rows_a_minute_and_a_trickle_keeps_its_own(
    steps: list[tuple[int, float]],
) -> None:
    budget = RefusalBudget(per_topic=5, per_minute=12)
    now, added = 0.0, []
    for topic, dt in steps:
        now += dt
        before = {k: r for k, r in budget.runs.items()}
        run = budget.admit(f"t{topic}", now)
        if run is None or (run.key not in before and run.key != OTHERS):
            added.append(now)
        if run is not None and run.row is None:
            run.row = len(added)  # as the archive does once its row commits
    for i, t in enumerate(added):
        # At most per_minute new rows in any minute, plus the one shared row (made once, kept while it is used).
        assert len([u for u in added[i:] if u < t + WINDOW_S]) <= 12
    # A topic refused once in a quiet minute has a row of its own.
    assert budget.admit("lonely", now + 10 * WINDOW_S) is None


def test_refused_rows_past_their_own_retention_are_deleted_and_the_recent_kept(floor_dsn: str) -> None:
    config = parse_floor_config(f'[database]\ndsn = "{floor_dsn}"\n[retention]\nrefused_days = 30\n')
    with psycopg.connect(floor_dsn, autocommit=True) as conn:
        migrate(conn)
        for days in (31, 29):
            conn.execute(
                "INSERT INTO rejected_messages (topic, payload, reason, size, sha256, bytes, received_at, last_at)"
                " VALUES (%s, 'x', 'not JSON', 1, sha256('x'), 1, now() - make_interval(days => %s),"
                " now() - make_interval(days => %s))",
                (f"old{days}", days, days),
            )
        plan = plan_retention(conn, config)
        assert plan.refused_rows == 1 and "delete 1 refused-message row(s)" in plan.describe()
        assert any("deleted 1 refused-message row(s)" in line for line in apply_retention(conn, plan))
        assert conn.execute("SELECT topic FROM rejected_messages").fetchall() == [("old29",)]
