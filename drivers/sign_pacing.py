"""Pacing for progressive signs: meter values coalesced into at most N updates a second, wins at once.

A meter rises with every wager and a busy table can ask for several updates a second; a sign (and its serial
line) need not show each one, only the latest, and every level in it, so meter values wait for a slot and
newer values replace waiting ones. A win is rare, never merged with anything and never dropped while the
sign is reachable: it goes out as soon as the sender is free, ahead of waiting meter values and without
using their slot, so it is on the sign well within WIN_DEADLINE however slow the meter pace. Time comes from a
Clock so tests measure the pacing on a clock they move themselves, not on the wall.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import re
from collections import deque
from collections.abc import Callable, Mapping
from typing import Generic, Literal, Protocol, TypeVar

WIN_DEADLINE = 30.0  # seconds from the controller's request to the win on the sign (issue 7, item 5)
# A win waits for nothing but a send in progress; keeping meter slots at least this often bounds how stale the
# meters on the sign can be, and how long a win can wait behind a meter update that is retrying.
MAX_SLOT_INTERVAL = WIN_DEADLINE / 3
MIN_UPDATES_PER_SECOND = 1 / MAX_SLOT_INTERVAL

LEVEL_NAME = re.compile(r"[a-z_]{1,32}")  # what a sign can show as a level's name

W = TypeVar("W")


class Clock(Protocol):
    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class LoopClock:
    """The event loop's monotonic clock: what a driver uses unless a test gives it another."""

    def now(self) -> float:
        return asyncio.get_running_loop().time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class ManualClock:
    """A clock that moves only when told (`advance`); `sleep` returns once the clock has passed its deadline."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self._changed: asyncio.Event | None = None

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._order), future))
        self._signal()
        await future

    def advance(self, seconds: float) -> None:
        self._now += seconds
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)

    @property
    def sleeping(self) -> int:
        """Sleepers still waiting (a cancelled sleep is not counted)."""
        return sum(1 for _, _, f in self._sleepers if not f.done())

    async def until_sleeping(self, count: int = 1) -> None:
        """Wait until `count` tasks sleep on this clock: then advancing it is meaningful (bound it by a timeout)."""
        while self.sleeping < count:
            self._changed = asyncio.Event()
            await self._changed.wait()

    def _signal(self) -> None:
        if self._changed is not None:
            self._changed.set()


class SignPacer(Generic[W]):
    """Decides what a sign is sent next, and when: pure bookkeeping, no I/O.

    Wins go first, in order, at once; the meter values asked for since the last update are merged into the
    latest (which always names every level), and each meter update takes a slot at least `min_interval` after
    the last one.
    """

    def __init__(self, updates_per_second: float) -> None:
        if not updates_per_second >= MIN_UPDATES_PER_SECOND:
            raise ValueError(
                f"updates_per_second = {updates_per_second}: meters that rise must reach the sign, and "
                f"a win within {WIN_DEADLINE:g} s, so allow at least one update every "
                f"{MAX_SLOT_INTERVAL:g} s ({MIN_UPDATES_PER_SECOND:.2f} a second)"
            )
        self.min_interval = 1.0 / updates_per_second
        self._wins: deque[W] = deque()
        self._levels: dict[str, int] | None = None
        self._last_slot = float("-inf")
        self.coalesced = 0  # meter updates merged into a later one (not sent on their own)

    def want_levels(self, levels: Mapping[str, int]) -> None:
        if self._levels is not None:
            self.coalesced += 1
        self._levels = dict(levels)

    def want_win(self, win: W) -> None:
        self._wins.append(win)

    def drop_wins(self) -> list[W]:
        """Give up the waiting wins (the sign went away); the caller reports them."""
        wins = list(self._wins)
        self._wins.clear()
        return wins

    @property
    def pending(self) -> bool:
        return bool(self._wins) or self._levels is not None

    @property
    def wanted_levels(self) -> dict[str, int] | None:
        return None if self._levels is None else dict(self._levels)

    def due_at(self) -> float:
        """When the next send may go: at once for a win, else the next meter slot."""
        return float("-inf") if self._wins else self._last_slot + self.min_interval

    def take(self, now: float) -> tuple[Literal["win"], W] | tuple[Literal["levels"], dict[str, int]] | None:
        """("win", win) if one waits; else ("levels", levels) if they wait and their slot is open; else None."""
        if self._wins:
            return "win", self._wins.popleft()
        levels = self._levels
        if levels is None or now < self.due_at():
            return None
        self._last_slot = now
        self._levels = None
        return "levels", levels

    def retry_levels(self, levels: Mapping[str, int]) -> None:
        """Put back meter values that did not get through, unless newer ones are already waiting."""
        if self._levels is None:
            self._levels = dict(levels)


# --- what a sign may be asked to show (every sign driver checks its requests with these) -------------------


def check_updates_per_second(v: float) -> float:
    if not v >= MIN_UPDATES_PER_SECOND:
        raise ValueError(
            f"{v} is too slow: meters must reach the sign and a win within 30 s, so send at least "
            f"one update every 10 s (max_updates_per_second >= {MIN_UPDATES_PER_SECOND:.2f})"
        )
    return v


def level_problem(level: object) -> str | None:
    """Why `level` is not a level name, or None if it is one."""
    if isinstance(level, str) and LEVEL_NAME.fullmatch(level):
        return None
    return f"level name {level!r} must be 1 to 32 of a-z and _"


def amount_problem(amount: object) -> str | None:
    """Why `amount` is not an amount in cents, or None if it is one."""
    # bool is an int subclass; True cents is a bug upstream, not a meter value.
    if isinstance(amount, int) and not isinstance(amount, bool) and amount >= 0:
        return None
    return f"amount {amount!r} must be a non-negative integer (cents)"


def seat_problem(seat: object) -> str | None:
    if isinstance(seat, int) and not isinstance(seat, bool) and seat >= 1:
        return None
    return f"seat {seat!r} must be an integer >= 1"


def levels_problem(levels: object) -> str | None:
    """Why `levels` is not a non-empty mapping of level name to cents, or None if it is one."""
    if not isinstance(levels, Mapping) or not levels:
        return f"must be a non-empty object of level name to cents, got {levels!r}"
    for level, amount in levels.items():
        problem = level_problem(level) or amount_problem(amount)
        if problem is not None:
            return problem
    return None


def win_problem(level: object, amount_cents: object, seat: object) -> str | None:
    """Why show_win(level, amount_cents, seat) cannot be sent ("'field': problem"), or None if it can."""
    for name, problem in (
        ("level", level_problem(level)),
        ("amount", amount_problem(amount_cents)),
        ("seat", seat_problem(seat)),
    ):
        if problem is not None:
            return f"{name!r}: {problem}"
    return None


Win = tuple[str, int, int, "asyncio.Future[bool]"]  # level, cents, seat, resolved once sent (or not)


def give_up_wins(pacer: SignPacer[Win], why: str, fault: Callable[[str, str], None]) -> None:
    """The sign went away (or the driver stopped): every waiting win is reported, so it can be announced again,
    and its caller in show_win is released."""
    for level, amount, seat, done in pacer.drop_wins():
        fault("win_not_shown", f"show_win {level} {amount} cents seat {seat}: {why}; announce it again")
        if not done.done():
            done.set_result(False)
