"""The progressive/<level> retained topics follow the meters: after every journaled `meter.*` event the
publisher is handed each changed level's values (it sends them once those events are out, docs/mqtt.md)."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Iterable

from controller.core.events import JournaledEvent
from controller.mqtt.contract import ProgressiveMeter
from controller.mqtt.publisher import EventPublisher
from controller.progressive.model import MICRO, LevelMeters, Meters
from controller.progressive.parameters import LevelParameters, TableProgressives, ppm_to_percent


async def follow_meters(
    events: asyncio.Queue[JournaledEvent],
    meters: Callable[[], Meters | None],
    params: TableProgressives,
    table_id: str,
    publisher: EventPublisher,
    dropped: Callable[[], int] = lambda: 0,
) -> None:
    """Until cancelled: `events` is every journaled event from now on, `meters` the meters as journaled. `dropped`
    counts the events the queue lost falling behind (controller/shell/listeners.py): when it moved, a level's event
    may be among them, so every level is published again from the journaled meters."""
    if not params.levels:
        return
    publish(meters(), params, table_id, publisher, levels=params.levels, seq=0)  # what the table starts with
    lost = dropped()
    while True:
        ev = await events.get()
        level = ev.payload.get("level") if ev.type.startswith("meter.") else None
        if dropped() != lost:
            lost = dropped()
            publish(meters(), params, table_id, publisher, levels=params.levels, seq=ev.seq)
        elif isinstance(level, str):
            publish(meters(), params, table_id, publisher, levels=[level], seq=ev.seq)


def publish(
    meters: Meters | None,
    params: TableProgressives,
    table_id: str,
    publisher: EventPublisher,
    *,
    levels: Iterable[str],
    seq: int,
) -> None:
    """Hand the publisher these levels' values as of journal `seq` (levels not seeded or not configured are
    left out)."""
    if meters is None:
        return
    now = dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")
    for name in sorted(levels):
        lv, p = meters.levels.get(name), params.levels.get(name)
        if lv is not None and p is not None:
            publisher.publish_progressive(meter_message(table_id, lv, p, seq, now))


def meter_message(table_id: str, lv: LevelMeters, p: LevelParameters, seq: int, ts: str) -> ProgressiveMeter:
    """The retained progressive/<level> message: what the sign shows, the figures behind it, and the seq of the
    last journaled event it reflects."""
    return ProgressiveMeter(
        table_id=table_id,
        level=lv.level,
        display_cents=lv.display_cents,
        seed_cents=p.seed_cents,
        reseed_cents=p.reseed_cents,
        primary_rate_percent=ppm_to_percent(p.primary_ppm),
        reserve_rate_percent=ppm_to_percent(p.reserve_ppm),
        reserve_cents=lv.reserve_micro // MICRO,
        hits=lv.hits,
        rule=p.rule,
        as_of_seq=seq,
        ts=ts,
    )
