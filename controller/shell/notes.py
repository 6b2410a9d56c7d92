"""The shell's own notes (a rejected command, a task's failure, a quarantined row, the check of the code) journaled on
the writer thread, in the one order of every commit (docs/journal.md, "A disk that slows or hangs").

A note was an append on the event loop under the journal's lock, which the writer thread holds through a commit: one
that landed behind a commit that never returns (a hung disk) stopped the loop with it (no signal handled, no MQTT
keepalive, no device frame answered). Now it is handed to the writer thread like a step's commit, behind the commits
handed before it and ahead of those handed after, so a note keeps its place relative to the steps around it, and the
loop awaits nothing unless the caller chooses to.

What a caller gets is a future of the journaled events. A caller that only records (a task's failure, the listener's
`command.listening`) leaves it: a failure is logged here, and the next step's commit meets the same disk and stops the
table. A caller whose next act depends on the note awaits it: a resend (its `command.accepted` before any row goes
out), the demo's floorperson (the reason before the close), the archive's failure at close (before the journal closes).
A caller that answers someone outside the process awaits it for a bound only (the listener's rejections, NOTE_REPLY_S
in controller/supervisor/batches.py): the answer then goes without the seqs, and the note lands in its turn once the
disk answers. No caller on the loop waits on the journal's lock itself.

The listeners hear every commit's events in seq order: each commit is announced once it and every commit handed
before it finished (`CommitOrder.through`), whichever of a step's waiter or a note's callback comes first.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

import structlog

from controller.core.events import JournaledEvent
from controller.core.invariant import present
from controller.shell.writer import Commit

log = structlog.get_logger("tablectl.service")

Noted = asyncio.Future[list[JournaledEvent]]


class CommitOrder:
    """The commits handed to the writer thread, in the order handed, until each is announced."""

    def __init__(self, announce: Callable[[Commit], None]) -> None:
        self._waiting: deque[Commit] = deque()
        self._announce = announce

    def add(self, commit: Commit) -> Commit:
        self._waiting.append(commit)
        return commit

    def through(self, commit: Commit) -> None:
        """Announce the finished commits handed up to `commit`, in order (one that failed is passed over: it journaled
        nothing). Stops at one not finished: a commit ahead still inside the disk (hung), which those behind wait for
        on the writer thread anyway."""
        while self._waiting and self._waiting[0].finished.is_set():
            head = self._waiting.popleft()
            self._announce(head)
            if head is commit:
                return

    def hung(self) -> bool:
        """A commit handed and not finished was given up on by the stop (JournalWriter.wait_while_moving)."""
        return any(c.hung for c in self._waiting)

    def unfinished(self) -> list[asyncio.Future[None]]:
        return [present(c.running, "a commit's future") for c in self._waiting if not c.finished.is_set()]


def noted(commit: Commit, order: CommitOrder, what: list[str]) -> Noted:
    """The future of a note handed to the writer as `commit`: its events, once they and every commit ahead of them are
    announced; or what the journal raised, logged here too, so a caller that does not await it loses nothing unsaid."""
    running = present(commit.running, "the future of a commit handed to the writer")
    done: Noted = running.get_loop().create_future()

    def landed(f: asyncio.Future[None]) -> None:
        error = None if f.cancelled() else f.exception()
        order.through(commit)
        if done.done():
            return
        if error is None:
            done.set_result(commit.journaled or [])
            return
        log.error("a note of the shell could not be journaled", events=what, error=str(error) or type(error).__name__)
        done.set_exception(error)

    running.add_done_callback(landed)
    done.add_done_callback(lambda f: f.cancelled() or f.exception())  # raised to whoever awaits it, logged above
    return done


def nothing() -> Noted:
    done: Noted = asyncio.get_running_loop().create_future()
    done.set_result([])
    return done
