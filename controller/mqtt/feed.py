"""What the publisher (controller.mqtt.publisher) sends next: the events offered straight from the journal's
writer thread while they follow on what was sent without a gap, otherwise the journal's outbox, read in seq order
(docs/mqtt.md, "Latency"). The offer is only a shortcut: the outbox holds every offered event anyway. The outbox is
read off the event loop (controller.mqtt.offloop): the read waits on the journal's lock, which a hung disk keeps.
"""

from __future__ import annotations

from collections import deque

from controller.core.events import JournaledEvent
from controller.mqtt.offloop import JournalThread
from controller.store.journal import Journal
from controller.store.outbox import OutboxItem

# Events offered straight from the journal's writer thread (offer) kept in memory at most; past that (a long outage)
# they are dropped and read from the outbox instead, where they are anyway.
FRESH_MAX = 1000
# The outbox is read this many rows at a time.
OUTBOX_ROWS = 200


class EventFeed:
    def __init__(self, journal: Journal, reads: JournalThread) -> None:
        self._journal = journal
        self._reads = reads
        # Durable commits' events handed over by offer(), oldest first: sent from memory while they follow on what
        # was sent without a gap; anything else (a note, a reconnect, a backlog) is read from the outbox (db_due).
        self.fresh: deque[JournaledEvent] = deque()
        self.db_due = True
        self.sent_upto = 0  # the highest seq PUBACKed in this session (or found published when the outbox was drained)

    def offer(self, events: list[JournaledEvent]) -> None:
        """A durable commit's events (EventPublisher.offer), kept while they fit under FRESH_MAX."""
        if len(self.fresh) + len(events) > FRESH_MAX:
            self.fresh.clear()
            self.db_due = True
        else:
            self.fresh.extend(events)

    async def next_rows(self) -> list[OutboxItem]:
        """The next events to send, in seq order: offered ones while they follow on the last sent without a gap, else
        the outbox's (which also holds every offered event: the offer is only a shortcut)."""
        fresh = self.fresh
        while fresh and fresh[0].seq <= self.sent_upto:
            fresh.popleft()
        if not self.db_due and fresh and fresh[0].seq == self.sent_upto + 1:
            run: list[OutboxItem] = [fresh.popleft()]
            while fresh and len(run) < OUTBOX_ROWS and fresh[0].seq == run[-1].seq + 1:
                run.append(fresh.popleft())
            return run
        if not self.db_due and not fresh:
            return []
        committed = self._journal.last_seq  # read first: everything up to it was committed before the outbox is read
        after, journal = self.sent_upto, self._journal
        rows = await self._reads.call(lambda: journal.outbox(OUTBOX_ROWS, after_seq=after))
        if not rows:
            # The outbox is drained up to `committed` (published in this session or an earlier one): from here on
            # offers that follow it are enough.
            self.sent_upto = max(self.sent_upto, committed)
            self.db_due = False
        return rows
