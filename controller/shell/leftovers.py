"""What a start leaves behind that the open table never uses again, let go once READY=1 is out (issue 19: `tablectl
run`'s resident memory, docs/performance-history.md).

The start's threads: the devices' ports open together in the loop's default executor (drivers/serial_port.py), so
a ten-device table left five or six idle worker threads for the process's life, each with its stack and, once it had
allocated, a malloc arena of its own; playing needs one at a time (controller/mqtt/marks.py). The start runs on a pool
of its own, and once the table is ready the loop gets a fresh default executor (threads made as work comes) and the
start's pool is shut down, so its idle threads end.

Not let go: the loading's cyclic garbage that controller.cli.main froze with the loaded modules. Collecting it once
ready freed 0.1-0.2 MB for a full collection that held the loop 56-313 ms, long enough for a device's ACK timer to
expire (docs/performance-history.md, "Memory, part 8").
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor


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
