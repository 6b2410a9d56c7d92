"""The progressive/<level> retained topics follow the meters: after every journaled `meter.*` event the
publisher is handed each changed level's values (it sends them once those events are out, docs/mqtt.md)."""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from controller.contract import ProgressiveMeter
from controller.progressive.parameters import ppm_to_percent

if TYPE_CHECKING:
    from controller.mqtt import EventPublisher
    from controller.service import TableService


async def follow_meters(service: TableService, publisher: EventPublisher) -> None:
    params = service.engine.meter_params
    if not params.levels:
        return
    events = service.subscribe()
    publish(service, publisher, set(params.levels), 0)  # what the table starts with, restored or seeded
    while True:
        ev = await events.get()
        level = ev.payload.get("level") if ev.type.startswith("meter.") else None
        if isinstance(level, str):
            publish(service, publisher, {level}, ev.seq)


def publish(service: TableService, publisher: EventPublisher, levels: set[str], seq: int) -> None:
    meters = service.state.meters
    if meters is None:
        return
    params = service.engine.meter_params.levels
    now = dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z")
    for name in sorted(levels):
        lv, p = meters.levels.get(name), params.get(name)
        if lv is None or p is None:
            continue
        publisher.publish_progressive(
            ProgressiveMeter(
                table_id=service.config.table_id,
                level=name,
                display_cents=lv.display_cents,
                seed_cents=p.seed_cents,
                reseed_cents=p.reseed_cents,
                primary_rate_percent=ppm_to_percent(p.primary_ppm),
                reserve_rate_percent=ppm_to_percent(p.reserve_ppm),
                reserve_cents=lv.reserve_micro // 1_000_000,
                hits=lv.hits,
                rule=p.rule,
                as_of_seq=seq,
                ts=now,
            )
        )
