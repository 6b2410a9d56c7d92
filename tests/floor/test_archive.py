"""The archive writer against a real PostgreSQL: idempotent on event_id and on (table, seq), a rolled-back table's
reused seq and a changed event raised as integrity alarms, seq gaps opened and filled, the retained messages kept
once, a message that breaks the contract kept with its reason, and the live model stored with the commit."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

import psycopg
import pytest

from floor.archive import load_state
from floor.days import parse_ts
from floor.dbclock import DbClock
from floor.messages import Incoming, Rejected, parse
from floor.schema import LATEST, partitions
from tests.floor.archiving import PREFIX, msg, writer
from tests.floor.conftest import count

pytestmark = pytest.mark.floor


def event(seq: int, type_: str = "wager.accepted", *, table: str = "t1", boot: str = "b1", **kw: Any) -> dict[str, Any]:
    return {
        "event_id": kw.pop("event_id", uuid.uuid4().hex),
        "boot_id": boot,
        "seq": seq,
        "ts": kw.pop("ts", f"2026-11-21T10:00:{seq % 60:02d}.000000Z"),
        "table_id": table,
        "round_id": kw.pop("round_id", f"{table}-r000001"),
        "type": type_,
        "rule": kw.pop("rule", "655a.7(d)(1)"),
        "payload": kw.pop("payload", {"seat": 1, "spot": "ante", "amount": 500}),
        **kw,
    }


class HeldClock(DbClock):
    """The database's clock held at the instant the test sets: PostgreSQL's clock_timestamp() cannot be set, and
    the test needs exact instants to say which gap opened when. The writer reads it as the service's (stamp())."""

    def __init__(self) -> None:
        super().__init__()
        self.at = ""

    @property
    def due(self) -> bool:
        return False  # never read the database's own clock

    def now(self) -> datetime:
        return parse_ts(self.at)


async def test_the_same_events_twice_are_archived_once(floor_dsn: str) -> None:
    w = await writer(floor_dsn)
    batch = [msg(event(s)) for s in range(1, 6)]
    first = await w.write(batch + batch[:2])  # duplicates inside a batch too
    assert (first.events_in, first.events_new, first.duplicates) == (5, 5, 0)
    replayed = [msg({**m.content, "replayed": True}) for m in batch if isinstance(m, Incoming)]
    again = await w.write(replayed)
    assert (again.events_new, again.duplicates, again.alarms) == (0, 5, [])
    assert count(floor_dsn, "SELECT count(*) FROM events") == 5
    assert count(floor_dsn, "SELECT count(*) FROM event_keys") == 5
    await w.conn.close()


async def test_a_seq_reused_with_another_event_id_is_an_integrity_alarm_and_kept(floor_dsn: str) -> None:
    w = await writer(floor_dsn)
    await w.write([msg(event(s)) for s in (1, 2, 3)])
    rolled_back = event(2, boot="b2", payload={"seat": 4, "spot": "ante", "amount": 900})
    changed = await w.write([msg(rolled_back)])
    assert [(a.kind, a.table_id, a.seq) for a in changed.alarms] == [("seq_reused", "t1", 2)]
    assert changed.events_new == 0
    again = await w.write([msg(rolled_back)])  # the same alarm is raised once
    assert again.alarms == []
    with psycopg.connect(floor_dsn) as conn:
        row = conn.execute("SELECT received FROM integrity_alarms").fetchone()
    assert row is not None and row[0]["payload"]["amount"] == 900
    assert w.state.live["t1"].alarms == 1
    await w.conn.close()


async def test_an_event_changed_after_publication_is_an_integrity_alarm(floor_dsn: str) -> None:
    w = await writer(floor_dsn)
    original = event(1)
    await w.write([msg(original)])
    tampered = {**original, "payload": {"seat": 1, "spot": "ante", "amount": 50000}}
    result = await w.write([msg(tampered)])
    assert [a.kind for a in result.alarms] == ["content_differs"]
    await w.conn.close()


async def test_a_seq_gap_is_opened_then_filled(floor_dsn: str) -> None:
    w = await writer(floor_dsn)
    result = await w.write([msg(event(s)) for s in (1, 2, 5, 6)])
    assert result.gaps_opened == {"t1": [(3, 4)]}
    assert w.state.live["t1"].gaps == [[3, 4]]
    assert count(floor_dsn, "SELECT count(*) FROM seq_gaps WHERE filled_at IS NULL") == 1
    result = await w.write([msg(event(s)) for s in (3, 4)])
    assert result.gaps_filled == {"t1": [(3, 4)]}
    assert w.state.live["t1"].gaps == []
    assert count(floor_dsn, "SELECT count(*) FROM seq_gaps WHERE filled_at IS NULL") == 0
    # A restart reads the same ranges back.
    state = await load_state(w.conn)
    assert state.seqs["t1"].through == 6
    await w.conn.close()


async def test_a_gap_keeps_when_it_opened_across_partial_fills_and_a_restart(floor_dsn: str) -> None:
    """floor/gaps.py says a gap is stale by its age: the age must survive a partial fill and the service's restart."""
    clock = HeldClock()
    w = await writer(floor_dsn, clock)
    t0, t1, t2 = "2026-11-21T10:00:00.000000Z", "2026-11-21T10:00:05.000000Z", "2026-11-21T10:00:09.000000Z"
    clock.at = t0
    await w.write([msg(event(s)) for s in (1, 9)])
    assert (w.state.live["t1"].gaps, w.state.live["t1"].gap_since) == ([[2, 8]], [t0])
    clock.at = t1
    await w.write([msg(event(s)) for s in (5, 12)])  # 2-8 splits; 10-11 opens now
    assert (w.state.live["t1"].gaps, w.state.live["t1"].gap_since) == ([[2, 4], [6, 8], [10, 11]], [t0, t0, t1])
    clock.at = t2
    await w.write([msg(event(s)) for s in (2, 3, 4)])
    assert (w.state.live["t1"].gaps, w.state.live["t1"].gap_since) == ([[6, 8], [10, 11]], [t0, t1])
    state = await load_state(w.conn)
    assert (state.live["t1"].gaps, state.live["t1"].gap_since) == ([[6, 8], [10, 11]], [t0, t1])
    await w.conn.close()


async def test_events_go_to_the_partition_of_their_gaming_day(floor_dsn: str) -> None:
    w = await writer(floor_dsn)
    # The gaming day starts at 06:00 UTC (the default): 05:59 still belongs to the day before.
    early = event(1, ts="2026-11-21T05:59:00.000000Z")
    late = event(2, ts="2026-11-21T06:00:00.000000Z")
    await w.write([msg(early), msg(late)])
    with psycopg.connect(floor_dsn) as conn:
        days = [str(d) for (d,) in conn.execute("SELECT gaming_day FROM events ORDER BY seq").fetchall()]
        assert [str(d) for d in partitions(conn)] == ["2026-11-20", "2026-11-21"]
        assert conn.execute("SELECT max(version) FROM floor_schema").fetchone() == (LATEST,)
    assert days == ["2026-11-20", "2026-11-21"]
    await w.conn.close()


async def test_retained_messages_are_kept_once_and_bad_ones_with_their_reason(floor_dsn: str) -> None:
    w = await writer(floor_dsn)
    status = {"state": "online", "table_id": "t1", "boot_id": "b1", "ts": "2026-11-21T10:00:00.000000Z"}
    meter = {
        "table_id": "t1",
        "level": "mega",
        "display_cents": 1_000_900,
        "seed_cents": 1_000_000,
        "reseed_cents": 1_000_000,
        "primary_rate_percent": "9",
        "reserve_rate_percent": "0",
        "reserve_cents": 0,
        "hits": 0,
        "rule": "655a.12(c)(3)",
        "as_of_seq": 12,
        "ts": "2026-11-21T10:00:01.000000Z",
    }
    s = msg(status, f"{PREFIX}/t1/status")
    m = msg(meter, f"{PREFIX}/t1/progressive/mega")
    bad = parse(PREFIX, f"{PREFIX}/t1/event", b'{"seq": "one"}')
    other = parse(PREFIX, f"{PREFIX}/t1/status", json.dumps({**status, "table_id": "t2"}).encode())
    assert isinstance(bad, Rejected) and isinstance(other, Rejected)
    assert "names table 't2'" in other.reason
    result = await w.write([s, m, s, m, bad])
    await w.write([s, m])  # the retained copies a reconnect brings again
    assert result.rejected == 1
    assert count(floor_dsn, "SELECT count(*) FROM statuses") == 1
    assert count(floor_dsn, "SELECT count(*) FROM meter_reports") == 1
    assert count(floor_dsn, "SELECT count(*) FROM rejected_messages") == 1
    assert w.state.live["t1"].state == "online"
    assert w.state.live["t1"].meters["mega"]["display_cents"] == 1_000_900
    await w.conn.close()


async def test_the_live_model_follows_the_round_and_is_stored(floor_dsn: str) -> None:
    w = await writer(floor_dsn)
    hit = {"hit": "h1", "seat": 2, "level": "minor", "amount": 25_000, "wager": "progressive"}
    events = [
        event(1, "betting.opened", payload={"round_no": 1}),
        event(2, "progressive.hit", payload=hit),
        event(3, "table.blocked", round_id=None, payload={"reasons": {"tilt:meters": "copy A damaged"}}),
    ]
    await w.write([msg(e) for e in events])
    live = w.state.live["t1"]
    assert (live.phase, live.round_id, live.last_seq) == ("blocked", "t1-r000001", 3)
    assert live.pending_jackpots == {"h1": {"seat": 2, "level": "minor", "amount": 25_000, "wager": "progressive"}}
    assert list(live.tilts) == ["tilt:meters"]
    paid = event(4, "progressive.paid", payload={"hit": "h1", "amount": 25_000})
    cleared = event(5, "table.block_cleared", round_id=None, payload={"block": "tilt:meters"})
    await w.write([msg(paid), msg(cleared)])
    with psycopg.connect(floor_dsn) as conn:
        row = conn.execute("SELECT live FROM floor_tables WHERE table_id = 't1'").fetchone()
    assert row is not None
    assert row[0]["pending_jackpots"] == {} and row[0]["tilts"] == {} and row[0]["last_seq"] == 5
    await w.conn.close()
