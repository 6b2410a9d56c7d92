"""The publisher's wake-up (controller.mqtt.publisher): one waiter, resolved in place on the loop's thread."""

from __future__ import annotations

import asyncio


class Wake:
    """The drain loop's wake-up: `set()` (on the loop's thread) resolves the one waiter's bare future in place, so the
    publisher runs on the loop's next turn. An asyncio.Event awaited through a task and asyncio.wait took three turns,
    each behind whatever else was ready then (the service announcing the same step, the devices): about 0.1-0.3 ms of
    an offered event's way out (docs/mqtt.md "Latency", bench/event_latency.py)."""

    def __init__(self) -> None:
        self._set = False
        self._waiter: asyncio.Future[None] | None = None

    def set(self) -> None:
        self._set = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def clear(self) -> None:
        self._set = False

    async def wait(self, lost: asyncio.Future[None], give_up: float | None) -> bool:
        """Until set, `lost` done or `give_up` seconds passed (a timer, not a task's timeout); whether it was set."""
        if self._set or lost.done():
            return self._set
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()

        def wake(_: object = None) -> None:
            if not waiter.done():
                waiter.set_result(None)

        lost.add_done_callback(wake)
        timer = None if give_up is None else loop.call_later(give_up, wake)
        try:
            await waiter
        finally:
            self._waiter = None
            lost.remove_done_callback(wake)
            if timer is not None:
                timer.cancel()
        return self._set
