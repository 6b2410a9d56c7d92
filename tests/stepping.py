"""The demo's table with no devices, stepping in the test's own loop on the journal the test gives: shared by the tests
that drive a TableService directly (tests/journal/test_writer_thread.py, test_stop_hung_disk.py,
tests/systemd/test_listeners.py), so that none copies the start and the stop."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from controller.config.table import demo_config
from controller.shell.service import TableService
from controller.store.journal import Journal


@contextlib.asynccontextmanager
async def stepping(journal: Journal) -> AsyncIterator[tuple[TableService, asyncio.Task[None]]]:
    """The service once ready, and its task; cancelled and the journal closed after, a start that never got ready
    included."""
    svc = TableService(demo_config(), {}, journal)
    running = asyncio.create_task(svc.run())
    try:
        async with asyncio.timeout(10):
            await svc.ready.wait()
        yield svc, running
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        journal.close()
