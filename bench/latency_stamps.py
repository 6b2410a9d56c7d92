"""bench/event_latency.py's stamps: each stepped event's way from its engine step to the socket, stamped in the measured
process on CLOCK_MONOTONIC by patching the controller's seams for the bench's run (the step, the hand-off to the
journal's writer thread, its append and COMMIT, the anchor's fdatasync, the checkpoints, the offer to the publisher,
its drain, paho's publish) and the garbage collections. bench/latency_tail.py reads them.
"""

from __future__ import annotations

import contextlib
import gc
import sqlite3
import time
from collections.abc import Iterator
from typing import Any
from unittest.mock import patch

import paho.mqtt.client as paho

from controller.core.events import DomainEvent, JournaledEvent
from controller.core.settlement import ChapterRules
from controller.engine.round import RoundEngine
from controller.engine.state import TableState
from controller.mqtt.feed import EventFeed
from controller.mqtt.publisher import EventPublisher
from controller.shell.writer import JournalWriter
from controller.store import wal
from controller.store.critical import CriticalBook
from controller.store.journal import Journal
from controller.store.outbox import OutboxItem


@contextlib.contextmanager
def stamped() -> Iterator[dict[str, Any]]:
    """seq -> CLOCK_MONOTONIC ns at which the step that produced the event returned; and each commit's duration."""
    seen: dict[str, Any] = {"step_ns": {}, "position": {}, "commit_ms": [], "pending": [], "committed_ns": {}}
    seen.update(offered_ns={}, anchor_sync_ms=[], last=[], commit_of={}, commits=[], syncs=[], checkpoints=[])
    seen["commit_sql_ns"] = [0]
    step, append, offer = RoundEngine.step, Journal.append, EventPublisher.offer

    def timed_offer(self: EventPublisher, events: list[JournaledEvent]) -> None:
        # On the loop: the writer thread handed the durable events to the publisher (whichever sync came first).
        seen["offered_ns"].update(dict.fromkeys((ev.seq for ev in events), time.monotonic_ns()))
        offer(self, events)

    def timed_step(self: RoundEngine[ChapterRules], state: TableState, inp: Any) -> Any:
        result = step(self, state, inp)
        count = sum(isinstance(e, DomainEvent) for e in result[1])
        seen["pending"].append((time.monotonic_ns(), count))
        return result

    def timed_append(self: Journal, events: Any, now: Any, *rest: Any, **kw: Any) -> list[JournaledEvent]:
        start, began, cpu = time.perf_counter(), time.monotonic_ns(), time.thread_time()
        out = append(self, events, now, *rest, **kw)
        seen["append_cpu_ms"].append((time.thread_time() - cpu) * 1000)
        # Committed: the WAL synced (synchronous=FULL) and the anchor file written, not yet synced.
        seen["committed_ns"].update(dict.fromkeys((ev.seq for ev in out), time.monotonic_ns()))
        stepped, seen["pending"] = seen["pending"], []
        seen["last"] = [ev.seq for ev in out]
        if stepped:  # an engine step's events, not the shell's own (TableService.note)
            seen["commit_ms"].append((time.perf_counter() - start) * 1000)
            # A group commit holds several steps' events: each is timed from its own step and numbered within it.
            # Should the counts not add up (a step refused outside the engine), every event is timed from the first.
            counts = [n for _, n in stepped] if sum(n for _, n in stepped) == len(out) else [len(out)]
            at = 0
            for (ns, _), n in zip(stepped, counts, strict=False):
                for i, ev in enumerate(out[at : at + n]):
                    seen["step_ns"][ev.seq] = ns
                    seen["position"][ev.seq] = i
                at += n
            # The commit's last step -> handed to the writer thread -> its append began (the thread's wake-up).
            handed = seen["submitted"][-1] if seen["submitted"] else began
            seen["to_writer"].append((stepped[-1][0], handed, began))
            # Per commit, for the tail's stages (tail.py): handed, began, SQLite's COMMIT returned, the anchor written.
            seen["commit_of"].update(dict.fromkeys((ev.seq for ev in out), len(seen["commits"])))
            wal, sql_commit = seen["wal_ns"][0], seen["commit_sql_ns"][0]
            seen["commits"].append((handed, began, sql_commit, wal, seen["committed_ns"][out[-1].seq]))
        return out

    with (
        patch.object(RoundEngine, "step", timed_step),
        patch.object(Journal, "append", timed_append),
        patch.object(EventPublisher, "offer", timed_offer),
        journal_stamps(seen),
        wire_stamps(seen),
    ):
        yield seen


class StampedConnection:
    """The journal's connection, stamping when its COMMIT statement begins (the WAL's frames written and fsynced
    from there); everything else passed through."""

    def __init__(self, conn: sqlite3.Connection, began: list[int]) -> None:
        self._conn, self._began = conn, began

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql == "COMMIT":
            self._began[0] = time.monotonic_ns()
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


@contextlib.contextmanager
def wire_stamps(seen: dict[str, Any]) -> Iterator[None]:
    """The stamps around the journal's commit and the publish: each hand-off to the writer thread, each event's
    PUBLISH written to the socket, each garbage collection."""
    publish, submit, after_commit = paho.Client.publish, JournalWriter.submit, CriticalBook.after_commit
    next_rows = EventFeed.next_rows
    seen.update(submitted=[], append_cpu_ms=[], to_writer=[], wal_ns=[0], taken_ns={}, arrived_ns={})
    seen["written"] = []  # (ns, body) once paho wrote an event's PUBLISH to the socket (controller.mqtt.batch)
    seen["gc"] = []  # (start ns, end ns, generation) of each collection while the table played
    gc_start: list[int] = [0]

    def timed_submit(self: JournalWriter, *args: Any) -> Any:
        seen["submitted"].append(time.monotonic_ns())  # on the loop: the step's records built, the commit handed on
        return submit(self, *args)

    def timed_after_commit(self: CriticalBook, ts: str, sync: bool = False) -> None:
        seen["wal_ns"][0] = time.monotonic_ns()  # on the writer thread: SQLite's COMMIT (the WAL's fsync) returned
        after_commit(self, ts, sync)

    async def timed_next_rows(self: EventFeed) -> list[OutboxItem]:
        rows = await next_rows(self)  # on the loop: the publisher's drain takes its next batch (the outbox off it)
        now = time.monotonic_ns()
        for row in rows:
            seen["taken_ns"].setdefault(row.seq, now)
        return rows

    def timed_publish(self: paho.Client, topic: str, payload: Any = None, *rest: Any, **kw: Any) -> Any:
        info = publish(self, topic, payload, *rest, **kw)
        if topic.endswith("/event"):
            seen["written"].append((time.monotonic_ns(), payload))
        return info

    def timed_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            gc_start[0] = time.monotonic_ns()
        else:
            seen["gc"].append((gc_start[0], time.monotonic_ns(), info["generation"]))

    with (
        patch.object(paho.Client, "publish", timed_publish),
        patch.object(JournalWriter, "submit", timed_submit),
        patch.object(CriticalBook, "after_commit", timed_after_commit),
        patch.object(EventFeed, "next_rows", timed_next_rows),
    ):
        gc.callbacks.append(timed_gc)
        try:
            yield
        finally:
            gc.callbacks.remove(timed_gc)


@contextlib.contextmanager
def journal_stamps(seen: dict[str, Any]) -> Iterator[None]:
    """The journal's own stamps: its COMMIT statement begun (StampedConnection), the anchor's fdatasync, the idle
    checkpoints."""
    make_durable, checkpoint, journal_init = Journal.make_durable, Journal.checkpoint, Journal.__init__

    def stamped_init(self: Journal, *args: Any, **kw: Any) -> None:
        journal_init(self, *args, **kw)
        if self._conn is not None:
            self._conn = StampedConnection(self._conn, seen["commit_sql_ns"])  # type: ignore[assignment]

    def timed_make_durable(self: Journal) -> None:
        start, began = time.perf_counter(), time.monotonic_ns()
        make_durable(self)
        seen["anchor_sync_ms"].append((time.perf_counter() - start) * 1000)
        seen["syncs"].append((began, time.monotonic_ns()))

    def timed_checkpoint(self: Journal, defer: bool = False, **kw: Any) -> None:
        began = time.monotonic_ns()
        checkpoint(self, defer, **kw)
        if not defer:
            seen["checkpoints"].append((began, time.monotonic_ns()))

    restart = wal.restart

    def timed_restart(db: sqlite3.Connection) -> None:
        began = time.monotonic_ns()
        restart(db)
        seen["restarts"].append((began, time.monotonic_ns()))

    seen["restarts"] = []
    with (
        patch.object(wal, "restart", timed_restart),
        patch.object(Journal, "make_durable", timed_make_durable),
        patch.object(Journal, "checkpoint", timed_checkpoint),
        patch.object(Journal, "__init__", stamped_init),
    ):
        yield
