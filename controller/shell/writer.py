"""The journal's writer thread: a step's commit (and its fsync) runs off the event loop.

While the disk syncs, the loop keeps reading the devices, ACKing their frames and queueing their inputs, which
the service then steps and commits together in the next transaction (group commit). Nothing else changes:
the service awaits the commit before it takes the new state, tells anyone, or sends a device command, so
nothing leaves the process before the journal holds the events that decided it (DESIGN.md, "journal first").

Events the shell journals itself (`TableService.note`) are commits handed to this thread too, in the order they were
made among the steps' commits, and announced in that order (controller/shell/notes.py), so the listeners still see
every event in seq order and no note waits for the journal's lock on the loop.

The moment a commit is durable in SQLite (its WAL synced, the anchor file written but not yet synced) the writer
thread hands its events to `on_durable` on the loop (the publisher's `offer`, docs/mqtt.md "Latency"), and only then
makes the anchor file durable (fdatasync), before it takes the next commit: the publisher sends the events while the
anchor syncs, instead of after (docs/journal.md, "The anchor": an anchor file one commit behind a power loss is the
benign case, and the broker's retained anchor is the other witness). The service itself resumes once both are synced,
so a disk that refuses the anchor stops the table as before.

The WAL's checkpoints run here too, between commits: every CHECKPOINT_EVERY commits, once the service was told of the
last one and no other commit is waiting (or, for a writer never idle, at CHECKPOINT_LATEST commits), instead of inside
the COMMIT that crossed SQLite's 1,000 pages, where one in about 130 commits held its events back for the checkpoint's
0.6-2.5 ms (Journal.checkpoint).
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import structlog

from controller.core.events import DomainEvent, JournaledEvent
from controller.core.invariant import present
from controller.shell.disk_progress import DiskProgress, device_stat, moved
from controller.store.journal import Journal
from controller.store.records import Record


@dataclass(eq=False)
class Commit:
    """One step batch's commit: set by the writer thread under the journal's lock, read by the loop."""

    journaled: list[JournaledEvent] | None = None
    announced: bool = False
    finished: threading.Event = field(default_factory=threading.Event)
    running: asyncio.Future[None] | None = None
    # Not finished while the stop waited for it (JournalWriter.wait_while_moving): the journal's disk does not answer.
    hung: bool = False
    # Set on the loop once finished, for the stop's wait (`running` is cancelled with a waiter that is cancelled).
    landed: asyncio.Future[None] | None = None


_Work = Callable[[], None]  # one commit, run on the writer thread
_STOP = None

# About 7.6 WAL pages a commit (bench/event_latency.py's table): a checkpoint every ~500 pages, well under the
# commits' own fallback (controller.store.journal.DEFERRED_CHECKPOINT_PAGES).
CHECKPOINT_EVERY = 64
# A writer that always finds the next commit waiting is never idle (the loop often submits it while this thread
# settles the last one): past this many commits the checkpoint runs anyway, delaying that one waiting commit, so a
# busy table's WAL stays near 600 pages instead of growing to the commits' own 4,000 and checkpointing inside one.
CHECKPOINT_LATEST = CHECKPOINT_EVERY + CHECKPOINT_EVERY // 4

# The stop at once waits for a commit in flight, and then for its own `table.stopped`, while the writer thread makes
# progress (controller/shell/disk_progress.py: a slow disk), up to STOP_BUDGET_S from the stop for both, and gives up
# after HUNG_COMMIT_S without any (a hung disk: a write that never returns holds the writer thread inside the commit):
# the stop must end before systemd's SIGKILL (systemd/tablectl.service, TimeoutStopSec=20), the publisher's drain
# (5 s) after it. Given up, the stop exits 3 (controller/shell/runner.py); the commit lands or not, as in a crash.
HUNG_COMMIT_S = 5.0
STOP_BUDGET_S = 12.0
# How often the progress is looked at meanwhile.
PROBE_S = 0.5

log = structlog.get_logger(__name__)


def _serve(work: queue.SimpleQueue[_Work | None]) -> None:
    """The writer thread: one commit at a time, until `_STOP`."""
    while (item := work.get()) is not _STOP:
        item()


def _stop(work: queue.SimpleQueue[_Work | None], thread: threading.Thread) -> None:
    work.put(_STOP)
    if thread is not threading.current_thread():
        thread.join()


class JournalWriter:
    """Runs Journal.append on one thread of its own, one commit at a time (the service steps one batch at a time).

    A thread with a queue, not an executor: a commit costs the loop one wake-up (a single call_soon_threadsafe that
    hands the events on and resolves the commit's future), not an executor future chained to an asyncio one and a
    shield around it; a step commits about 36 times a round (bench/footprint.py)."""

    def __init__(self, journal: Journal, on_durable: Callable[[list[JournaledEvent]], None] | None = None) -> None:
        self._journal = journal
        self._on_durable = on_durable
        self._work: queue.SimpleQueue[_Work | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self.in_flight: Commit | None = None
        self._commits = 0  # since the last checkpoint; counted on the writer thread only
        self._device = device_stat(journal.path)  # for the stop's look at the disk's progress (wait_while_moving)
        self.stop_deadline: float | None = None  # (loop time) set by the stop's first wait: STOP_BUDGET_S for all
        self.settling = False  # inside wait_while_moving: the stop need not cancel the service again meanwhile

    def _started(self) -> None:
        if self._thread is None:
            # A daemon thread, stopped and joined when the writer is closed, collected or the interpreter exits
            # (weakref.finalize runs at exit before daemon threads are dropped), so a commit is never cut short.
            self._thread = threading.Thread(target=_serve, args=(self._work,), name="journal-writer", daemon=True)
            self._thread.start()
            # The checkpoints between commits from now on (module docstring): on the writer thread, like every use of
            # the journal's lock here, so a stalled disk never holds up the loop in submit.
            self._work.put(self._defer_checkpoints)
            self._finalizer = weakref.finalize(self, _stop, self._work, self._thread)

    def submit(self, events: Sequence[DomainEvent], now: datetime, records: Sequence[Record]) -> Commit:
        """Hand a commit to the writer thread now (not when a task first runs, so a cancellation cannot leave it
        unsubmitted yet waited for); `wait` for it."""
        commit = Commit()
        self.in_flight = commit
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        commit.running = done
        on_durable = self._on_durable
        journal = self._journal

        def settle(error: BaseException | None) -> None:
            # On the loop: the commit's waiter (gone if it was cancelled meanwhile: the stop then waits on `landed`).
            if commit.landed is not None and not commit.landed.done():
                commit.landed.set_result(None)
            if done.done():
                return
            if error is None:
                done.set_result(None)
            else:
                done.set_exception(error)

        def work() -> None:
            error: BaseException | None = None
            with journal.serialised():
                try:
                    journaled = commit.journaled = journal.append(events, now, records)
                    if on_durable is not None and journaled:
                        # Durable in SQLite (synchronous=FULL) and the anchor written (exact after a kill -9): the
                        # events may leave now, ahead of the service resuming. The loop publishes them while this
                        # thread syncs the anchor file below; a power loss meanwhile leaves that file one commit behind
                        # the journal, never ahead (docs/journal.md, "The anchor").
                        with contextlib.suppress(RuntimeError):  # a loop already closed: they wait in the outbox
                            loop.call_soon_threadsafe(on_durable, journaled)
                    # The anchor's fdatasync here, before the next commit and off the loop (Journal.outbox makes it
                    # durable first for what the publisher reads from the file).
                    journal.make_durable()
                except BaseException as err:  # handed to the waiter on the loop, as the executor did
                    error = err
                finally:
                    # Before the lock goes: a note that appends next must find this commit finished.
                    commit.finished.set()
            # A loop already closed has nobody left to wait or publish to: the events wait in the outbox.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, error)
            self._checkpoint_when_idle()

        self._started()
        self._work.put(work)
        return commit

    def _defer_checkpoints(self) -> None:
        try:
            self._journal.checkpoint(defer=True)
        except Exception as err:  # the journal closed meanwhile, or its disk gone: the commits say so themselves
            log.warning("journal checkpoints left to the commits", error=str(err))

    def _checkpoint_when_idle(self) -> None:
        """On the writer thread, after a commit was settled: the WAL checkpointed when it is due and no commit waits,
        or once overdue (CHECKPOINT_LATEST) whatever waits (a commit that arrives meanwhile waits for it, which is
        rarer than every 130th commit carrying one). A failure
        is logged, not raised: the next commit meets a disk that is gone and stops the table."""
        self._commits += 1
        if self._commits < CHECKPOINT_EVERY or (self._commits < CHECKPOINT_LATEST and not self._work.empty()):
            return
        self._commits = 0
        try:  # the WAL's restart with it only while no commit waits (controller.store.wal)
            self._journal.checkpoint(idle=self._work.empty)
        except Exception as err:
            log.warning("journal checkpoint failed; the next commits checkpoint themselves", error=str(err))

    async def wait(self, commit: Commit) -> None:
        """Return once the commit is durable, or raise what the journal raised. Cancelled meanwhile (the stop at once),
        it first waits for the commit to finish while the disk moves (`wait_while_moving`): what the journal holds and
        what the service believes must not part."""
        running = present(commit.running, "the future of a commit handed to the writer")
        try:
            await running
        except asyncio.CancelledError:
            # Bounded: a commit that never returns (a hung disk) would hold the stop until systemd's SIGKILL. Not
            # finished by then, it did not happen as far as the service knows, and the stop says so (runner.py).
            await self.wait_while_moving(commit, HUNG_COMMIT_S)
            raise
        finally:
            if self.in_flight is commit and commit.finished.is_set():
                self.in_flight = None

    async def wait_while_moving(self, commit: Commit, still_s: float) -> bool:
        """Wait for `commit` to finish, on the loop (which keeps turning), while the writer thread makes progress:
        False, and the commit marked hung, once none was seen for `still_s` or past the stop's deadline (STOP_BUDGET_S
        from the first call). A cancel meanwhile (the stop cancels its service again each second) does not end the wait:
        it is bounded by itself."""
        loop = asyncio.get_running_loop()
        if self.stop_deadline is None:
            self.stop_deadline = loop.time() + STOP_BUDGET_S
        thread = self._thread
        probe = DiskProgress(self._device, None if thread is None else thread.native_id)
        if commit.landed is None:  # before `finished` is looked at: its setter on the loop comes after that is set
            commit.landed = loop.create_future()
        self.settling = True
        try:
            return await self._outlast(commit, still_s, probe, loop)
        finally:
            self.settling = False

    async def _outlast(
        self, commit: Commit, still_s: float, probe: DiskProgress, loop: asyncio.AbstractEventLoop
    ) -> bool:
        landed = present(commit.landed, "the commit's landing, made by wait_while_moving")
        deadline = present(self.stop_deadline, "the stop's deadline, set by wait_while_moving")
        now = loop.time()
        last, started, still_since, said = probe.sample(), now, now, False
        while not commit.finished.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait((landed,), timeout=PROBE_S)
            now, sample = loop.time(), probe.sample()
            if moved(last, sample):
                last, still_since = sample, now
            if commit.finished.is_set():
                break
            if now - still_since >= still_s or now >= deadline:
                commit.hung = True
                log.error(
                    "a journal commit did not return: the journal's disk does not answer",
                    still_s=round(now - still_since, 1),
                    waited_s=round(now - started, 1),
                )
                return False
            if not said and now - started >= still_s:  # it would have been taken for hung before: say why it is not
                said = True
                log.warning(
                    "a journal commit is slow but its disk moves: the stop waits for it", budget_s=STOP_BUDGET_S
                )
        return True

    def close(self) -> None:
        if self._thread is not None:
            self._finalizer()
