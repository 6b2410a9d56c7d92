"""The floor service's database side (floor/service.py): the writer takes what the listener queued (floor/intake.py),
up to batch_max, waiting flush_ms for more, archives it in one transaction (floor/archive.py) and only then has it
acknowledged. A lost database is retried with backoff on a new connection (the service's `reconnect`, which takes
the floor's lock again: floor/floor_lock.py); a message the database refuses is kept in rejected_messages instead.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import replace

import psycopg
import structlog

from floor.archive import REFUSED_BY_DATABASE, ArchiveWriter, AsyncConn, WriteResult
from floor.config import FloorConfig
from floor.console.server import ConsoleServer
from floor.floor_lock import IDLE_CHECK_S, held
from floor.intake import BACKOFF_MAX, Intake
from floor.messages import Incoming, LinkIncoming, Queued, Rejected, refused_by_archive, topic_owner
from floor.tasks import ServiceTasks, stopped_within
from floor.write_log import say_written

log = structlog.get_logger("tablectl.floor")
# An archive transaction longer than this is stuck (a database silent but connected: SIGSTOP, a hung disk): restart.
WRITE_STUCK_S = 20.0
WRITER = "floor-writer"


class WriteLoop:
    def __init__(
        self,
        config: FloorConfig,
        intake: Intake,
        tasks: ServiceTasks,
        stopping: asyncio.Event,
        console: ConsoleServer | None,
        reconnect: Callable[[], Awaitable[AsyncConn | None]],
    ) -> None:
        self.config = config
        self.intake = intake
        self.tasks = tasks
        self.stopping = stopping
        self.console = console
        self.reconnect = reconnect  # a new connection, None once stopped (or once another floor holds the lock)
        self.db_up = False
        self.archived = 0
        self.unarchived: set[int] = set()  # ids of the messages of the batch at hand the database refused
        self.in_hand: list[Queued] = []  # the batch taken from the queue and not yet archived and acknowledged
        self.refused = 0  # messages refused this run (rejected_messages keeps them; `floor status` counts them all)

    async def _next_batch(self) -> list[Queued] | None:
        """What queued, up to batch_max, waiting flush_ms after the first for more; None once stopping; empty after
        IDLE_CHECK_S with nothing queued (the loop then asks after the floor's lock)."""
        queue = self.intake.queue
        # Two waits raced for the first of them, awaited here and cancelled before returning or on cancellation.
        get = asyncio.create_task(queue.get())
        stop = asyncio.create_task(self.stopping.wait())
        try:
            await asyncio.wait({get, stop}, timeout=IDLE_CHECK_S, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not get.done():
                get.cancel()
        if not get.done() or get.cancelled():
            return None if self.stopping.is_set() else []
        batch = [get.result()]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.ingest.flush_ms / 1000
        while len(batch) < self.config.ingest.batch_max:
            try:
                batch.append(queue.get_nowait())
                continue
            except asyncio.QueueEmpty:
                pass
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            try:
                async with asyncio.timeout(remaining):
                    batch.append(await queue.get())
            except TimeoutError:
                break
        return batch

    async def loop(self, writer: ArchiveWriter) -> None:
        while True:
            batch = await self._next_batch()
            if batch is None:
                return
            if not batch:  # idle: a connection lost now would be noticed only at the next write
                if not await self._check_lock(writer):
                    return
                continue
            self.unarchived.clear()
            self.in_hand = batch
            if (result := await self._write(writer, batch)) is None:
                return  # stopped while the database was away: run() says what is left (say_left)
            for q in batch:
                self.intake.ack(q.generation, q.mid, q.qos)
            self.in_hand = []
            self._report(result, [q.message for q in batch])
            if self.console is not None:
                self._show(self.console, writer, batch, result)

    def _show(self, console: ConsoleServer, writer: ArchiveWriter, batch: list[Queued], result: WriteResult) -> None:
        try:
            console.archived(
                [
                    q.message
                    for q in batch
                    if not isinstance(q.message, Rejected) and id(q.message) not in self.unarchived
                ],
                writer.state.live,
                writer.state.links,
            )
        except Exception:  # what the browsers see must never stop the archive
            log.exception("console update failed")
        if result.rejected:
            try:
                console.refused(result.rejected, result.refused_last)
            except Exception:  # what the browsers see must never stop the archive
                log.exception("console update failed")

    async def _write(self, writer: ArchiveWriter, batch: list[Queued]) -> WriteResult | None:
        """The batch archived (in parts if the database refused one of its messages); None if the service stopped
        while the database was unreachable, the batch neither archived nor acknowledged."""
        delay = 0.5
        while True:
            try:
                with self.tasks.busy(WRITER, WRITE_STUCK_S):
                    result = await writer.write([q.message for q in batch])  # stamped by the database's clock
                self.db_up = True
                return result
            except REFUSED_BY_DATABASE as err:
                # A message's fault, not the server's: retried whole it would stall the archive at every redelivery.
                return await self._write_apart(writer, batch, err)
            except psycopg.OperationalError as err:
                self.db_up = False
                log.error(
                    "archive write failed; retrying the batch",
                    error=str(err).strip(),
                    messages=len(batch),
                    retry_in_s=delay,
                )
                if not await self._renew(writer, delay):
                    return None
                delay = min(delay * 2, BACKOFF_MAX)

    async def _check_lock(self, writer: ArchiveWriter) -> bool:
        """Idle: whether the writer's session still holds the floor's lock (floor/floor_lock.py). Lost with its
        connection (or let go), it is taken again on a new connection as after a failed write, and a floor that took
        it meanwhile stops this one (exit 2) within IDLE_CHECK_S and a reconnect; False once stopped so."""
        delay = 0.5
        while True:
            try:
                with self.tasks.busy(WRITER, WRITE_STUCK_S):
                    if await held(writer.conn):
                        return True
                problem = "the writer's session no longer holds the floor's lock"
            except psycopg.OperationalError as err:
                problem = str(err).strip()
            self.db_up = False
            log.error(
                "archive connection lost while idle; taking the floor's lock again on a new one",
                error=problem,
                retry_in_s=delay,
            )
            if not await self._renew(writer, delay):
                return False
            delay = min(delay * 2, BACKOFF_MAX)

    async def _renew(self, writer: ArchiveWriter, delay: float) -> bool:
        """The writer on a new connection after `delay` (which a stop cuts short), holding the floor's lock again;
        False once stopped, or once another floor holds the lock (the service's reconnect said so and stops)."""
        if await stopped_within(self.stopping, delay):
            return False
        with contextlib.suppress(psycopg.Error):
            await writer.conn.close()
        if (conn := await self.reconnect()) is None:  # stopped while the database did not answer
            return False
        writer.use(conn)
        return True

    async def _write_apart(self, writer: ArchiveWriter, batch: list[Queued], err: BaseException) -> WriteResult | None:
        """Each message of a batch the database refused in a transaction of its own; one refused alone is kept in
        rejected_messages with the database's reason instead, so the good ones around it are archived."""
        if len(batch) == 1:
            q = batch[0]
            if isinstance(q.message, Rejected):  # not even its refusal can be stored: said here, at least
                log.error("a refused message could not be kept", topic=q.topic, error=str(err).strip()[:300])
                return WriteResult(rejected=1)
            refused = refused_by_archive(q.topic, q.message, err)
            self.unarchived.add(id(q.message))  # not for the console's tiles either
            log.warning(
                "message refused by the archive",
                topic=q.topic,
                table_id=topic_owner(self.config.mqtt.prefix, q.topic),
                reason=refused.reason,
            )
            return await self._write(writer, [replace(q, message=refused)])
        # Halved while refused: 1 bad message in 5,000 costs ~26 synchronous commits, not 5,000; the order is kept.
        log.error("archive refused a batch; writing it in halves", messages=len(batch), error=str(err).strip()[:300])
        total = WriteResult()
        for half in (batch[: len(batch) // 2], batch[len(batch) // 2 :]):
            if (part := await self._write(writer, half)) is None:
                return None  # stopped: a half archived before is not acknowledged; redelivered, it changes nothing
            total.add(part)
        return total

    def _report(self, result: WriteResult, messages: list[Incoming | LinkIncoming | Rejected]) -> None:
        self.archived += result.events_new
        self.refused += result.rejected
        say_written(result, messages)
