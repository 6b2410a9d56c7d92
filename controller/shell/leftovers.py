"""What a start leaves behind that the open table never uses again, let go once READY=1 is out (issue 19: `tablectl
run`'s resident memory, docs/performance-history.md).

Two things, each measured with bench/resident.py and bench/footprint.py against main:

- The start's threads. The devices' ports open together in the loop's default executor (drivers/serial_port.py),
  so a ten-device table left five or six idle worker threads for the process's life, each with its stack and,
  once it had allocated, a malloc arena of its own; playing needs one at a time (controller/mqtt/marks.py). The
  start runs on a pool of its own, and once the table is ready the loop gets a fresh default executor (threads made
  as work comes) and the start's pool is shut down, so its idle threads end.
- The start's garbage. controller.cli.main loads the verb's modules with the collector off and then freezes
  everything alive (gc.freeze), which also froze the loading's cyclic garbage (the classes dataclasses(slots=True)
  replaces, pydantic's schema building, import machinery): frozen, it is never collected. Once the table is ready it
  is collected once and what is left frozen again. That costs one full collection (tens of ms) on the event loop
  after READY=1, instead of before it, where it would count in the start.
"""

from __future__ import annotations

import asyncio
import gc
import time
from concurrent.futures import ThreadPoolExecutor

import structlog

log = structlog.get_logger("tablectl.leftovers")


class StartLeftovers:
    """Made at the start of the run (it installs the start's executor); let_go() once the table is ready."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._start_pool = ThreadPoolExecutor(thread_name_prefix="start")
        loop.set_default_executor(self._start_pool)

    async def let_go(self, ready: asyncio.Event) -> None:
        await ready.wait()
        # systemd's notifier and the other waiters on `ready` run first: READY=1 goes out before this work.
        await asyncio.sleep(0)
        self._loop.set_default_executor(ThreadPoolExecutor(thread_name_prefix="asyncio"))
        # wait=False: the loop never blocks here; a call still running in the start's pool completes, then its
        # thread ends with the idle ones.
        self._start_pool.shutdown(wait=False)
        # Only a process whose start was frozen by controller.cli.main: a test that runs the table in its own
        # process (nothing frozen) keeps its collector as it was.
        if gc.get_freeze_count():
            began, frozen = time.perf_counter(), gc.get_freeze_count()
            gc.unfreeze()
            freed = gc.collect()
            gc.freeze()
            log.debug(
                "the start's garbage collected",
                objects_frozen_before=frozen,
                unreachable=freed,
                objects_frozen_after=gc.get_freeze_count(),
                ms=round((time.perf_counter() - began) * 1000, 1),
            )
