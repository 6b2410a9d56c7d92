"""A batch of supervisor command payloads, as the listener (listener.py) takes them off the broker: judged payloads
cut into consecutive runs of one kind (rejections, shell verbs, engine inputs), each run journaled in one
transaction in arrival order; and the rate limit that turns a flood of rejections into a summary in the log. Pure:
no broker, no journal."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime

from controller.mqtt.contract import CommandReply
from controller.supervisor.gate import Accepted, Rejected

# How long a rejected command's reply waits for its `command.rejected` to be journaled (a note, committed on the
# journal's writer thread: controller/shell/notes.py): about a hundred commits' worth on a busy disk. Past it, on a
# journal whose disk hangs, the reply leaves without the seqs and the note lands in its turn once the disk answers.
NOTE_REPLY_S = 2.0


class RateLimit:
    """At most `burst` log lines per `window` seconds; the next line allowed says how many were held back."""

    def __init__(self, burst: int = 10, window: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.burst = burst
        self.window = window
        self._clock = clock
        self._start = clock()
        self._logged = 0
        self.suppressed = 0

    def allow(self) -> int | None:
        """None: do not log this one. Otherwise log it, saying the returned number were not logged before it."""
        now = self._clock()
        if now - self._start >= self.window:
            self._start, self._logged = now, 0
        if self._logged >= self.burst:
            self.suppressed += 1
            return None
        self._logged += 1
        held, self.suppressed = self.suppressed, 0
        return held


def kind_of(j: Accepted | Rejected) -> int:
    return 0 if isinstance(j, Rejected) else 1 if j.input is None else 2


def runs(judged: list[Accepted | Rejected]) -> Iterator[list[Accepted | Rejected]]:
    """The judged payloads as consecutive runs of rejections, of commands the shell carries out and of commands for
    the engine, in order."""
    run: list[Accepted | Rejected] = []
    for j in judged:
        if run and kind_of(j) != kind_of(run[0]):
            yield run
            run = []
        run.append(j)
    if run:
        yield run


def rejection_replies(run: list[Rejected], seqs: list[int | None], table_id: str, ts: datetime) -> list[CommandReply]:
    """Each rejection's reply, naming its `command.rejected` seq when it was journaled in time (None: not yet)."""
    return [
        CommandReply(
            command_id=r.command_id,
            table_id=table_id,
            verb=r.verb,
            outcome="rejected",
            reason=r.reason,
            code=r.code,
            event_seqs=[] if seq is None else [seq],
            ts=ts,
        )
        for r, seq in zip(run, seqs, strict=True)
    ]
