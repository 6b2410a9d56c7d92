"""The publisher's outbox marks (controller.mqtt.publisher): which PUBACKed events are still to be marked published
in the journal, and their commit, off the loop, one at a time, on the thread that reads the outbox
(controller.mqtt.offloop): never on the loop, where a hung disk would stop it, and in order with the reads.

An event is marked only after its PUBACK; the marks are committed lazily (MARK_EVERY acknowledged at once, or after
MARK_DELAY idle, or at a session's end and at close): a crash before that only publishes those events again, which
consumers dedupe by event_id, where a commit per batch would cost an fsync per round trip of the table.
"""

from __future__ import annotations

import asyncio

import structlog

from controller.mqtt.offloop import JournalThread
from controller.mqtt.wake import Wake
from controller.store.journal import Journal


class OutboxMarks:
    def __init__(
        self, journal: Journal, reads: JournalThread, wake: Wake, log: structlog.typing.FilteringBoundLogger
    ) -> None:
        self._journal = journal
        self._reads = reads
        self._wake = wake
        self._log = log
        self._acked: dict[bool, list[int]] = {True: [], False: []}  # PUBACKed, mark not yet committed, by replayed
        self._marking: asyncio.Future[None] | None = None  # marks being committed off the loop (soon)

    def __len__(self) -> int:
        return len(self._acked[True]) + len(self._acked[False])

    def acknowledged(self, seq: int, replayed: bool) -> None:
        self._acked[replayed].append(seq)

    def _take(self) -> dict[bool, list[int]]:
        acked, self._acked = self._acked, {True: [], False: []}
        return acked

    def _mark(self, acked: dict[bool, list[int]]) -> None:
        for replayed in (True, False):
            self._journal.mark_published(acked[replayed], replayed)

    def soon(self) -> None:
        """Commit the marks off the loop, one commit at a time: its fsync (1-20 ms on a busy disk, under the journal's
        lock) no longer holds up the loop while a step's events wait to be sent (bench/event_latency.py). A storage
        error it meets is raised here or at the next drain (`check`)."""
        self.check()
        if self._marking is not None or not len(self):
            return  # the one in flight first; what piles up meanwhile goes in the next
        acked = self._take()
        self._marking = self._reads.post(lambda: self._mark(acked))
        # Woken when it is done, so a failure is raised at once even on an idle table.
        self._marking.add_done_callback(lambda _: self._wake.set())

    def check(self) -> None:
        marking = self._marking
        if marking is not None and marking.done():
            self._marking = None
            marking.result()  # a disk that refuses the marks stops the table, as when they were committed here

    async def settle(self) -> None:
        """At close: the commit in flight done (its error raised), then the rest committed."""
        if self._marking is not None:
            await asyncio.wait((self._marking,))
            self.check()
        if len(self):
            acked = self._take()
            await self._reads.call(lambda: self._mark(acked))

    def forget(self) -> None:
        """A session ends: what was acknowledged is marked all the same, behind the marks in flight and before the next
        session's first outbox read (the same thread, in order); the outcome is only logged (at worst those events are
        published again, which consumers dedupe by event_id)."""
        marking, self._marking = self._marking, None
        if len(self):
            acked = self._take()
            rest = self._reads.post(lambda: self._mark(acked))
            rest.add_done_callback(self._retrieved)
        if marking is not None:
            marking.add_done_callback(self._retrieved)

    def _retrieved(self, done: asyncio.Future[None]) -> None:
        if not done.cancelled() and done.exception() is not None:
            self._log.warning(
                "outbox marks not committed; those events will be published again", error=str(done.exception())
            )
