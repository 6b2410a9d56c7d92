"""A stop reaches the link's tasks however a cancel lands: Python 3.11's `asyncio.wait_for` returns the inner result
instead of raising when the task is cancelled in the loop turn its inner wait completes (cpython#86296; 3.12 rewrote
it). The signs' loop waited on its wake-up event that way, and the probe sets that event every lease_ms/4: a SIGTERM
landing in that turn left the loop running, `ServiceTasks.close()` awaited it for ever, and `tablectl link` ignored
the stop (CI: the optimised link test's stop timed out after 30 s). The cancel is sent at each loop turn after the
wake-up, so one of them lands in that window; nothing here is faked (the real Signs, Broker and TableDesk; no
database is reached because the link's state is not read yet)."""

from __future__ import annotations

import asyncio

import pytest

from floor.sdnotify import Notifier
from link.broker import Broker
from link.config import parse_link_config
from link.database import LinkDatabase
from link.signs import Signs
from link.tables import TableDesk
from tests.link.conftest import link_toml

# Enough loop turns to cover the event's waiter, the inner task's end, wait_for's done callback and its resumption.
TURNS = 8


def _signs() -> Signs:
    config = parse_link_config(link_toml("host=127.0.0.1 dbname=unused", "mqtt://127.0.0.1:1", "t-cancel"))
    db = LinkDatabase(config, Notifier(None))
    broker = Broker("t-cancel/link/mega")
    return Signs(config, db, broker, TableDesk(config, db, broker))


@pytest.mark.parametrize("turns", range(TURNS))
async def test_a_cancel_landing_as_the_signs_wake_ends_their_loop(turns: int) -> None:
    signs = _signs()
    task = asyncio.create_task(signs.loop(), name="link-publisher")
    for _ in range(3):
        await asyncio.sleep(0)  # the loop is waiting on its wake-up
    signs.broker.wake.set()
    for _ in range(turns):
        await asyncio.sleep(0)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=2.5)  # the loop wakes at least every second if it ran on
    try:
        assert task in done and task.cancelled(), f"the cancel sent {turns} turn(s) after the wake-up was swallowed"
    finally:
        task.cancel()
        signs.db.executor.shutdown(wait=False)
