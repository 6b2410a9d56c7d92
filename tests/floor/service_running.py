"""A real floor service run in the test's own event loop, and a poll of its archive: shared by the floor's ingest,
refusal and console tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import psycopg

from floor.service import FloorService


@asynccontextmanager
async def running(service: FloorService, *, console: bool = False) -> AsyncIterator[asyncio.Task[None]]:
    """Runs `service` for the block, entered once it is subscribed (and, with `console`, its console listens); stopped
    and awaited after, so a failure inside the service fails the test."""
    task = asyncio.create_task(service.run())
    try:
        async with asyncio.timeout(60):
            if console:
                await service.console_ready.wait()
            while not service.mqtt_up:  # noqa: ASYNC110 (the service has no event for it; retained topics wait)
                await asyncio.sleep(0.05)
        yield task
    finally:
        service.stop()
        await asyncio.wait_for(task, 30)


async def until(dsn: str, sql: str, want: int, what: str = "", seconds: float = 120) -> None:
    """Poll the archive until `sql`'s one value is `want` (a database has no notification a test could wait on)."""
    try:
        async with asyncio.timeout(seconds):
            while True:
                async with await psycopg.AsyncConnection.connect(dsn) as conn:
                    row = await (await conn.execute(sql.encode())).fetchone()
                if row is not None and row[0] == want:
                    return
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(what or f"{sql} never gave {want}") from None
