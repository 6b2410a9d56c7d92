"""A seq gap's age on one clock (docs/floor.md, "A gap that stays"): the floor stamps when a gap opened and measures
it, `tablectl floor gaps` measures it from any host with the database's now(); a floor host whose clock is off the
database's must show neither a fresh gap as stale nor a stale one as fresh.

A real PostgreSQL cluster (tests/floor/conftest.py). What cannot run here is a second host with another clock: the
floor host's wall clock is skewed by replacing `datetime` where the floor's modules read it (the only fake).
"""

from __future__ import annotations

import importlib
import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from floor.archive import ArchiveWriter, load_state
from floor.config import GamingDaySection, parse_floor_config
from floor.days import parse_ts
from floor.db import async_connect, connect
from floor.gaps import open_gaps
from floor.messages import Incoming, LinkIncoming, Rejected, parse
from floor.schema import migrate
from floor.status import gaps_text

pytestmark = pytest.mark.floor
PREFIX = "tablectl"
GRACE_S = 30.0
FLOOR_MODULES = (
    "floor.archive",
    "floor.service",
    "floor.writing",
    "floor.dbclock",
)  # where the floor reads its host's wall clock


def skew_floor_host(monkeypatch: pytest.MonkeyPatch, by: timedelta) -> None:
    class Skewed(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Skewed:
            real = datetime.now(tz) + by
            return cls.fromtimestamp(real.timestamp(), real.tzinfo)

    for name in FLOOR_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        monkeypatch.setattr(module, "datetime", Skewed, raising=False)


def event(seq: int, table: str) -> Incoming | Rejected:
    content = {
        "event_id": uuid.uuid4().hex,
        "boot_id": "b1",
        "seq": seq,
        "ts": f"2026-11-21T10:00:{seq:02d}.000000Z",
        "table_id": table,
        "round_id": f"{table}-r000001",
        "type": "wager.accepted",
        "rule": "655a.7(d)(1)",
        "payload": {"seat": 1, "spot": "ante", "amount": 500},
    }
    parsed = parse(PREFIX, f"{PREFIX}/{table}/event", json.dumps(content).encode())
    assert parsed is not None and not isinstance(parsed, LinkIncoming)
    return parsed


@pytest.mark.parametrize("skew", [timedelta(hours=-1), timedelta(hours=1)], ids=["floor-behind", "floor-ahead"])
async def test_a_gaps_age_is_the_same_on_the_floor_and_in_floor_gaps_whatever_the_floor_hosts_clock(
    floor_dsn: str, monkeypatch: pytest.MonkeyPatch, skew: timedelta
) -> None:
    config = parse_floor_config(f'[database]\ndsn = "{floor_dsn}"\n[gaps]\ngrace_s = {GRACE_S:g}\n')
    with connect(config.database) as sync:
        migrate(sync)
    conn = await async_connect(config.database)
    writer = ArchiveWriter(conn, GamingDaySection(), await load_state(conn))
    skew_floor_host(monkeypatch, skew)
    table = f"clock-{uuid.uuid4().hex[:8]}"

    await writer.write([event(s, table) for s in (1, 2, 5)])  # 3-4 missing: a gap opens now

    with connect(config.database) as sync:
        db_now = sync.execute("SELECT now()").fetchone()
        text, stale = gaps_text(sync, config)
    assert db_now is not None
    [line] = [ln for ln in text.splitlines() if ln.startswith(f"table {table} ")]
    # `tablectl floor gaps`: a gap just opened, not stale, a few seconds old at most (an hour off before the fix).
    assert stale == 0 and f"table {table} seq 3-4 missing (2 event(s)), open, " in line, text
    [gap] = [g for g in open_gaps(writer.state.live.values(), writer.clock.now(), GRACE_S) if g.table_id == table]
    # Stamped on the database's clock: within seconds of its now(), not an hour from it.
    assert abs((parse_ts(gap.since) - db_now[0].astimezone(UTC)).total_seconds()) < GRACE_S / 2, (gap.since, db_now)
    # The floor's own watch measures the same age, so it calls the gap stale when `floor gaps` does.
    assert not gap.stale and gap.age_s < GRACE_S / 2
    await conn.close()
