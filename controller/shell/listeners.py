"""The service's listeners: who hears every journaled event, on a bounded queue, and what happens when one falls
behind (docs/supervision.md, "Listeners").

A queue nobody reads kept every event of the table's life in memory, silently (about 60 kB a seven-seat round,
issue 19's meters task). Every listener now has a bound, and declares at `subscribe` which kind it is:

- "lossy": a status or display consumer whose events can be told again from the table's state (the console, the
  systemd status line, the retained meter topics, the archiver's count of rounds). Behind by the bound, the oldest
  event is dropped, counted in `dropped` and logged (`listener behind: events dropped`); the consumer may see the
  count move and catch up from the state (the meters republish every level).
- "lossless": a consumer that acts on each event and has no other copy of it (the demo's people, `simulate`'s
  output). Behind by the bound, losing an event would lose what it holds: the listener is detached (the memory
  stops growing), the table raises the tilt `tilt:listener:<name>` naming it and the fix, and once the consumer
  has read what was queued its next `get` raises ListenerOverflow, so its supervised task fails where it is seen.
"""

from __future__ import annotations

import asyncio
from typing import Literal

import structlog

from controller.core.events import JournaledEvent

log = structlog.get_logger("tablectl.listeners")

ListenerKind = Literal["lossy", "lossless"]
# Events a listener may lag by: about thirty seven-seat rounds (~130 events each, well under 2 MB of events), far
# more than a reader that keeps up ever holds (tests/shell/test_listeners.py plays rounds and checks the high water).
LISTENER_BOUND = 4096
LISTENER_TILT = "tilt:listener:"
DROPPED = "listener behind: events dropped"
DETACHED = "listener behind: detached, tilt raised"


class ListenerOverflow(RuntimeError):
    """A lossless listener fell behind by its bound and was detached: the events after its last one are lost to it."""


class Listener(asyncio.Queue[JournaledEvent]):
    """One subscriber's queue. `offer` is the service's only way in; a consumer reads it as any asyncio.Queue."""

    def __init__(self, name: str, kind: ListenerKind, bound: int = LISTENER_BOUND) -> None:
        if bound < 1:
            raise ValueError(f"listener {name}: the bound must be at least 1, not {bound}")
        super().__init__(maxsize=bound)
        self.name = name
        self.kind: ListenerKind = kind
        self.dropped = 0  # events dropped (lossy)
        self.high_water = 0  # the most events it ever held at once
        self.overflowed: str | None = None  # why it was detached (lossless)

    def offer(self, ev: JournaledEvent) -> bool:
        """Queue `ev`; False when a lossless listener has just reached its bound (the caller detaches it)."""
        if self.overflowed is not None:
            return False
        if self.full():
            if self.kind == "lossless":
                self.overflowed = (
                    f"the {self.name} listener fell {self.maxsize} events behind the journal (its bound) and was "
                    f"detached at seq {ev.seq}: it has lost every event from there"
                )
                return False
            self.get_nowait()  # the oldest goes: a display wants the newest
            self.dropped += 1
            if self.dropped == 1 or self.dropped % self.maxsize == 0:  # once an episode, not once an event
                log.warning(DROPPED, listener=self.name, dropped=self.dropped, bound=self.maxsize, seq=ev.seq)
        self.put_nowait(ev)
        self.high_water = max(self.high_water, self.qsize())
        return True

    def tilt(self) -> tuple[str, str, str]:
        """The tilt a detached lossless listener raises: its name, the reason, the fix."""
        return (
            f"{LISTENER_TILT}{self.name}",
            self.overflowed or f"the {self.name} listener was detached",
            f"find why the {self.name} consumer stopped reading (the log's '{DETACHED}' and the task.failed "
            "events); reconcile what it missed from the journal (`tablectl journal`), then a supervisor clears "
            "the tilt",
        )

    async def get(self) -> JournaledEvent:
        if self.overflowed is not None and self.empty():
            raise ListenerOverflow(self.overflowed)
        return await super().get()
