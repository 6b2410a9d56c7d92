"""The longest pause of the test's event loop: which of a test's strict assertions a stall of its process allows.

A stall (a loaded machine, tools/stall.py's SIGSTOP) holds the simulated devices in the test's process too, whose
answers real devices would have sent meanwhile: past the host's ACK timeout, the host rightly sends a frame again. A
test keeps its strict assertions (nothing sent twice) when no pause reached that timeout."""

from __future__ import annotations

import asyncio


class LoopPauses:
    """The longest this process went without a turn of its event loop while watched. Sampled every TICK; used only to
    say which assertions hold."""

    TICK = 0.002

    def __init__(self) -> None:
        self.longest = 0.0
        self.over_20ms: list[float] = []  # every pause as long, in order: a test that stalls on purpose tells its own
        self._task = asyncio.ensure_future(self._watch())

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        last = loop.time()
        while True:
            await asyncio.sleep(self.TICK)
            now = loop.time()
            pause = now - last - self.TICK
            self.longest = max(self.longest, pause)
            if pause >= 0.02:
                self.over_20ms.append(pause)
            last = now

    async def stop(self) -> None:
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)
