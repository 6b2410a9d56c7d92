"""The publisher's outbox marks (controller.mqtt.publisher): which PUBACKed events are still to be marked published
in the journal, and their commit, off the loop, one at a time.

An event is marked only after its PUBACK; the marks are committed lazily (MARK_EVERY acknowledged at once, or after
MARK_DELAY idle, or at a session's end and at close): a crash before that only publishes those events again, which
consumers dedupe by event_id, where a commit per batch would cost an fsync per round trip of the table.
"""

from __future__ import annotations

import asyncio

import structlog

from controller.mqtt.wake import Wake
from controller.store.journal import Journal


class OutboxMarks:
    def __init__(self, journal: Journal, wake: Wake, log: structlog.typing.FilteringBoundLogger) -> None:
        self._journal = journal
        self._wake = wake
        self._log = log
        self._acked: dict[bool, list[int]] = {True: [], False: []}  # PUBACKed, mark not yet committed, by replayed
        self._marking: asyncio.Future[None] | None = None  # marks being committed off the loop (soon)

    def __len__(self) -> int:
        return len(self._acked[True]) + len(self._acked[False])

    def acknowledged(self, seq: int, replayed: bool) -> None:
        self._acked[replayed].append(seq)

    def flush(self) -> None:
        """Commit the marks now, on the loop (a session's end, the close)."""
        acked, self._acked = self._acked, {True: [], False: []}
        self._mark(acked)

    def _mark(self, acked: dict[bool, list[int]]) -> None:
        for replayed in (True, False):
            self._journal.mark_published(acked[replayed], replayed)

    def soon(self) -> None:
        """Commit the marks on a thread of the loop's default executor, one commit at a time: its fsync (1-20 ms on a
        busy disk, under the journal's lock) no longer holds up the loop while a step's events wait to be sent
        (bench/event_latency.py). A storage error it meets is raised here or at the next drain (`check`)."""
        self.check()
        if self._marking is not None or not len(self):
            return  # the one in flight first; what piles up meanwhile goes in the next
        acked, self._acked = self._acked, {True: [], False: []}
        self._marking = asyncio.get_running_loop().run_in_executor(None, self._mark, acked)
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
        self.flush()

    def forget(self) -> None:
        """A session ends with marks still being committed: their outcome is only logged (at worst those events are
        published again, which consumers dedupe by event_id)."""
        marking, self._marking = self._marking, None

        def retrieved(done: asyncio.Future[None]) -> None:
            if not done.cancelled() and done.exception() is not None:
                self._log.warning(
                    "outbox marks not committed; those events will be published again", error=str(done.exception())
                )

        if marking is not None:
            marking.add_done_callback(retrieved)
