"""Reference-protocol progressive meter sign: shows every level's amount and announces wins.

Updates are paced (drivers.sign_pacing): meter values at most `max_updates_per_second`, the latest values of
every level coalesced; a win goes at once, ahead of them. While the sign is away the latest values wait and are
sent again once it is back; a win asked for while it is away is reported as a fault, not queued, so the
controller decides whether to announce it again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator

from drivers.interfaces import EventSink, MetersShown
from drivers.reference.device import BadMessage, ReferenceDevice, ReferenceSettings, Translator
from drivers.sign_pacing import (
    Clock,
    LoopClock,
    SignPacer,
    Win,
    check_updates_per_second,
    give_up_wins,
    levels_problem,
    win_problem,
)
from drivers.tasks import cancel_and_wait


class ReferenceProgressiveSignSettings(ReferenceSettings):
    driver: Literal["reference-progressive-sign"] = "reference-progressive-sign"
    max_updates_per_second: float = Field(
        default=4.0,
        le=50,
        description="most meter updates sent a second (newer values replace waiting ones); at "
        "least one every 10 s. Wins are not held back",
    )

    @field_validator("max_updates_per_second")
    @classmethod
    def _often_enough(cls, v: float) -> float:
        return check_updates_per_second(v)


class ReferenceProgressiveSign(ReferenceDevice):
    Settings: ClassVar[type[ReferenceProgressiveSignSettings]] = ReferenceProgressiveSignSettings

    def __init__(self, device_id: str, settings: ReferenceProgressiveSignSettings) -> None:
        super().__init__(device_id, settings)
        self.clock: Clock = LoopClock()  # a test may set another before start()
        self.pacer: SignPacer[Win] = SignPacer(settings.max_updates_per_second)
        self._last_levels: dict[str, int] | None = None
        self._wake = asyncio.Event()
        self._online_now = asyncio.Event()
        self._sender: asyncio.Task[None] | None = None

    async def start(self, sink: EventSink) -> None:
        self._sender = asyncio.get_running_loop().create_task(self._send_paced(), name=f"pacer:{self.device_id}")
        await super().start(sink)

    async def stop(self) -> None:
        await cancel_and_wait(self._sender)
        self._sender = None
        give_up_wins(self.pacer, "the driver stopped", self.fault)
        await super().stop()

    async def _connect(self) -> str | None:
        reason = await super()._connect()
        if reason is None:
            self._online_now.set()
            if self._last_levels is not None and self.pacer.wanted_levels is None:
                # A sign that was away may have restarted blank: show it the latest values again.
                self.pacer.want_levels(self._last_levels)
            self._wake.set()
        return reason

    def _set_offline(self, reason: str) -> None:
        self._online_now.clear()
        give_up_wins(self.pacer, f"device offline: {reason}", self.fault)
        super()._set_offline(reason)

    async def _sleep_unless_woken(self, delay: float) -> None:
        self._wake.clear()
        sleep = asyncio.ensure_future(self.clock.sleep(delay))
        woken = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait({sleep, woken}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleep.cancel()
            woken.cancel()

    async def _send_paced(self) -> None:
        """The one place updates leave: in pacer slots, only while the sign is online."""
        while True:
            if not self.pacer.pending:
                self._wake.clear()
                await self._wake.wait()
                continue
            if not self._online_now.is_set():
                await self._online_now.wait()
                continue
            delay = self.pacer.due_at() - self.clock.now()
            if delay > 0:
                await self._sleep_unless_woken(delay)  # a win asked for meanwhile does not wait for the slot
            taken = self.pacer.take(self.clock.now())
            if taken is None:
                continue
            if taken[0] == "win":  # the pacer's kinds type each item: a win's tuple, the levels' dict
                level, amount, seat, done = taken[1]
                sent = False
                try:
                    sent = await self.command({"cmd": "show_win", "level": level, "amount": amount, "seat": seat})
                finally:
                    if not done.done():  # also when stopped mid-send: the caller in show_win is told
                        done.set_result(sent)
            else:
                await self.command({"cmd": "show_levels", "levels": taken[1]})

    def translators(self) -> Mapping[str, Translator]:
        return {"levels_shown": self._levels_shown}

    def _levels_shown(self, message: Mapping[str, Any]) -> MetersShown:
        levels = message.get("levels")
        problem = levels_problem(levels)
        if problem is not None or not isinstance(levels, Mapping):  # no problem means a mapping
            raise BadMessage(f"levels_shown: 'levels': {problem or 'must be an object'}")
        return MetersShown(self.device_id, dict(levels))

    async def show_levels(self, levels: Mapping[str, int]) -> None:
        """Queue these values for the next slot (replacing values still waiting); MetersShown follows."""
        problem = levels_problem(levels)
        if problem is not None:
            # Nothing is sent: a sign must never be asked to display a value the host itself cannot vouch for.
            self.fault("bad_request", f"show_levels: 'levels': {problem}")
            return
        self._last_levels = dict(levels)
        self.pacer.want_levels(levels)
        self._wake.set()

    async def show_link(self, up: bool, message: str, pending: Sequence[tuple[str, str, int]]) -> None:
        """A linked progressive's state (drivers.interfaces.LinkedSign), sent at once: it changes rarely (the lease
        lapsing or returning, a jackpot pending). A sign away when it changes is told again at the next change."""
        if not self._online_now.is_set():
            self.fault("offline", "cannot send show_link: device offline")
            return
        await self.command(
            {
                "cmd": "show_link",
                "up": up,
                "message": message[:64],
                "pending": [{"asset": a, "level": lv, "amount": c} for a, lv, c in pending],
            }
        )

    async def show_win(self, level: str, amount_cents: int, seat: int) -> None:
        problem = win_problem(level, amount_cents, seat)
        if problem is not None:
            self.fault("bad_request", f"show_win: {problem}")
            return
        if not self._online_now.is_set():
            self.fault("offline", "cannot send show_win: device offline")
            return
        done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self.pacer.want_win((level, amount_cents, seat, done))
        self._wake.set()
        # Returns once the sign has it (or it failed, reported as a fault): the win goes out at the next slot.
        # Shielded: a caller that stops waiting does not take the win back.
        await asyncio.shield(done)
