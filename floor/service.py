"""`tablectl floor`: the service that archives every table's messages (docs/floor.md, "Operations").

Two tasks share a queue. The listener holds a persistent MQTT v5 session (fixed client id, no clean start, a long
session expiry) and acknowledges nothing itself: paho's manual acknowledgement is on, and a message is acknowledged
to the broker only after the transaction that archived it committed. So a kill -9 at any instant leaves every
message either archived or still queued at the broker for the next start, which redelivers it; archiving is
idempotent, so a redelivered message changes nothing. The writer takes what queued (up to batch_max, waiting
flush_ms for more) and archives it in one transaction (floor/archive.py). A lost broker or database is retried with
backoff; the service stays up and says so in its log and its systemd status.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import replace

import aiomqtt
import psycopg
import structlog

from floor.archive import REFUSED_BY_DATABASE, ArchiveWriter, AsyncConn, WriteResult, load_state
from floor.config import FloorConfig, read_secret
from floor.console.loading import load_unless_stopped
from floor.console.server import ConsoleServer
from floor.db import async_connect, connect, conninfo, where
from floor.gaps import StaleWatch, open_gaps
from floor.listener_client import Connack, broker_lost, listener_client
from floor.messages import (
    Incoming,
    LinkIncoming,
    Queued,
    Rejected,
    parse,
    refused_by_archive,
    subscriptions,
    topic_owner,
)
from floor.reach import answered
from floor.refusal_log import RefusalLog
from floor.schema import migrate
from floor.sdnotify import Notifier
from floor.session_watch import SessionWatch
from floor.standby import watch_standby
from floor.tasks import ServiceTasks, stopped_within, unless_stopped
from floor.ts_index import older_days
from floor.write_log import say_left, say_stale, say_written

log = structlog.get_logger("tablectl.floor")
BACKOFF_MAX = 10.0
# An archive transaction longer than this is stuck (a database silent but connected: SIGSTOP, a hung disk): restart.
WRITE_STUCK_S = 20.0
WRITER = "floor-writer"


class FloorService:
    def __init__(self, config: FloorConfig, notifier: Notifier | None = None) -> None:
        self.config = config
        self.notifier = notifier or Notifier(None)
        self.queue: asyncio.Queue[Queued] = asyncio.Queue()
        self.client: aiomqtt.Client | None = None
        self.generation = 0
        self.mqtt_up = False
        self.db_up = False
        self.archived = 0
        self.unarchived: set[int] = set()  # ids of the messages of the batch at hand the database refused
        self.in_hand: list[Queued] = []  # the batch taken from the queue and not yet archived and acknowledged
        self.refused = 0  # messages refused this run (rejected_messages keeps them; `floor status` counts them all)
        self.stale_gaps = 0
        self.stopping = asyncio.Event()
        self.failure: BaseException | None = None
        self.console: ConsoleServer | None = ConsoleServer(config) if config.console.listen else None
        self.console_ready = asyncio.Event()
        self.tasks = ServiceTasks("floor", self._died)
        self.refusal_log = RefusalLog.floor(log, config.ingest)  # its lines bounded as the rows are
        self.session = SessionWatch(config.mqtt.client_id, config.mqtt.broker, config.mqtt.session_expiry_s)

    async def run(self) -> None:
        """Until stop(): migrate, load the state, listen and archive. A task that dies stops it, never silently."""
        read_secret(self.config.mqtt.password_file, "mqtt.password_file")  # a missing file is a config error now
        if not await self._migrate() or (conn := await self._connect_db()) is None:
            return
        writer = ArchiveWriter(conn, self.config.gaming_day, await load_state(conn), ingest=self.config.ingest)
        log.info("floor archive ready", tables=len(writer.state.live), database=where(self.config.database.dsn))
        self.session.had = bool(writer.state.live)  # an earlier run archived tables: it had a session
        if self.console is not None and not await self._start_console(self.console, writer):
            return await writer.conn.close()  # stopped while the console loaded (said)
        self.tasks.start("floor-listener", self._listen())
        self.tasks.start("floor-watchdog", self._watchdog(), may_return=self.notifier.watchdog_interval is None)
        self.tasks.start("floor-gaps", self._watch_gaps(writer))
        self.tasks.start("floor-refusal-log", self.refusal_log.run())
        self.tasks.start("floor-older-days", older_days(self.config.database, self.stopping), may_return=True)
        self.tasks.start("floor-standby", watch_standby(self.config.database, self.stopping), may_return=True)
        # The write loop is a task like the others (not run() itself): cancelled or ended, it is reported the same.
        writing = self.tasks.start(WRITER, self._write_loop(writer), may_return=True)
        self.notifier.send(READY=1, STATUS="archiving")
        try:
            await self.stopping.wait()
        finally:
            log.info("floor stopping", failed=self.failure is not None)
            self.notifier.send(STOPPING=1, STATUS="stopping")
            # A stop lets the batch in hand commit and be acknowledged; a stuck write, uncommitted, is redelivered.
            if not (await asyncio.wait({writing}, timeout=WRITE_STUCK_S / 2))[0]:
                log.warning("floor writer still busy after the stop's wait; cancelling it", waited_s=WRITE_STUCK_S / 2)
            await self.tasks.close()
            say_left(len(self.in_hand) + self.queue.qsize())  # what the broker keeps and sends again
            self.refusal_log.say_due(everything=True)  # a flood's last counts are said, not lost with the process
            await writer.conn.close()
            if self.console is not None:
                await self.console.stop()
        if self.failure is not None:
            raise self.failure

    async def _start_console(self, console: ConsoleServer, writer: ArchiveWriter) -> bool:
        """The console loaded from the archive and serving; False once stopped first (said)."""
        console.clock = writer.clock.now  # the tiles' gap ages and links' times on the clock that stamped them
        if not await load_unless_stopped(console.view, writer.state.live, self.config.database, self.stopping):
            log.info("floor stopped before its console was loaded", database=where(self.config.database.dsn))
            return False
        url = await console.start()
        # Said on stdout too: `tablectl demo --floor` and the tests read the address a port 0 was given.
        print(f"tablectl floor: console at {url}", flush=True)
        self.console_ready.set()
        return True

    def stop(self) -> None:
        self.stopping.set()

    def _died(self, err: BaseException) -> None:
        """A task ended (floor/tasks.py logged it): the service stops with its error, so `tablectl` exits 1."""
        if self.failure is None:
            self.failure = err
        self.stopping.set()

    async def _migrate(self) -> bool:
        """The schema brought up to date once the database answers (the PC may boot first); False if stopped first."""

        def once() -> int:
            with connect(self.config.database) as conn:
                return migrate(conn)

        delay = 0.5
        while True:
            try:
                if not await answered(conninfo(self.config.database), self.stopping):
                    return not self._stopped_at_start()
                before = await asyncio.to_thread(once)
                log.info("archive schema checked", version_found=before)
                return True
            except psycopg.OperationalError as err:
                if await self._unreachable(err, delay):
                    return False
                delay = min(delay * 2, BACKOFF_MAX)

    async def _unreachable(self, err: psycopg.OperationalError, delay: float) -> bool:
        """Said, then the retry's backoff cut short by a stop: True then. At the start (no task runs yet) and in the
        running writer's reconnect alike, a SIGTERM ends the wait at once (the writer's, not after run()'s 10 s)."""
        log.error("PostgreSQL unreachable; retrying", error=str(err).strip(), retry_in_s=delay)
        self.notifier.send(STATUS=f"PostgreSQL unreachable: {str(err).strip()[:200]}")
        return await stopped_within(self.stopping, delay) and self._stopped_at_start()

    def _stopped_at_start(self) -> bool:
        if not self.tasks.started:  # once running, run() says what the writer left (say_left)
            log.info("floor stopped before its archive was reachable", database=where(self.config.database.dsn))
        return True

    async def _connect_db(self) -> AsyncConn | None:
        delay = 0.5
        while True:
            try:
                # A connect that hangs (a host gone dark) is cut short by a stop too: None, as a stopped backoff.
                if (conn := await unless_stopped(self.stopping, async_connect(self.config.database))) is None:
                    self._stopped_at_start()
                    return None
                self.db_up = True
                return conn
            except psycopg.OperationalError as err:
                self.db_up = False
                if await self._unreachable(err, delay):
                    return None
                delay = min(delay * 2, BACKOFF_MAX)

    # -- the broker side ------------------------------------------------------------------------------------

    async def _listen(self) -> None:
        delay = 0.5
        prefix, tables = self.config.mqtt.prefix, frozenset(self.config.ingest.tables)
        while True:
            try:
                client = listener_client(self.config, connack := Connack())
                async with client:
                    self.generation += 1
                    self.client, delay = client, 0.5
                    lost = self.session.connected(connack.session_present)
                    await client.subscribe([(topic, 1) for topic in subscriptions(prefix)])
                    # Subscribed: a fresh session gets nothing published before its SUBACK; the broker holds ours now.
                    self.mqtt_up = self.session.had = True
                    if self.console is not None:  # every page says the floor hears the tables again
                        self.console.broker(None)
                        if lost:
                            self.console.session_lost()
                    log.info("subscribed to the tables", broker=self.config.mqtt.broker, prefix=prefix)
                    async for message in client.messages:
                        parsed = parse(prefix, str(message.topic), bytes(message.payload), tables)
                        if parsed is None:
                            self._ack(self.generation, message.mid, message.qos)
                            continue
                        if isinstance(parsed, Rejected):  # a line each, or its topic's summary once a minute
                            owner = topic_owner(prefix, parsed.topic)
                            self.refusal_log.refused(
                                "message refused", parsed.topic, parsed.size, parsed.reason, table_id=owner
                            )
                        self.queue.put_nowait(
                            Queued(parsed, str(message.topic), self.generation, message.mid, message.qos)
                        )
            except aiomqtt.MqttError as err:
                self.mqtt_up = False
                why = broker_lost(err, self.config.mqtt.client_id)
                log.error("broker connection lost; reconnecting", error=why, retry_in_s=delay)
                self.notifier.send(STATUS=f"broker unreachable: {why}")
                if self.console is not None:
                    self.console.broker(why)
                await asyncio.sleep(delay)
                delay = min(delay * 2, BACKOFF_MAX)

    def _ack(self, generation: int, mid: int, qos: int) -> None:
        if qos > 0 and self.client is not None and generation == self.generation and self.mqtt_up:
            self.client._client.ack(mid, qos)

    # -- the database side ----------------------------------------------------------------------------------

    async def _next_batch(self) -> list[Queued] | None:
        """What queued, up to batch_max, waiting flush_ms after the first for more; None once stopping."""
        # Two waits raced for the first of them, awaited here and cancelled before returning or on cancellation.
        get = asyncio.create_task(self.queue.get())
        stop = asyncio.create_task(self.stopping.wait())
        try:
            done, _ = await asyncio.wait({get, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
            if not get.done():
                get.cancel()
        if get not in done:
            return None
        batch = [get.result()]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.ingest.flush_ms / 1000
        while len(batch) < self.config.ingest.batch_max:
            try:
                batch.append(self.queue.get_nowait())
                continue
            except asyncio.QueueEmpty:
                pass
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            try:
                async with asyncio.timeout(remaining):
                    batch.append(await self.queue.get())
            except TimeoutError:
                break
        return batch

    async def _write_loop(self, writer: ArchiveWriter) -> None:
        while True:
            batch = await self._next_batch()
            if batch is None:
                return
            self.unarchived.clear()
            self.in_hand = batch
            if (result := await self._write(writer, batch)) is None:
                return  # stopped while the database was away: run() says what is left (say_left)
            for q in batch:
                self._ack(q.generation, q.mid, q.qos)
            self.in_hand = []
            self._report(result, [q.message for q in batch])
            if self.console is not None:
                try:
                    self.console.archived(
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
                        self.console.refused(result.rejected, result.refused_last)
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
                if await stopped_within(self.stopping, delay):
                    return None
                delay = min(delay * 2, BACKOFF_MAX)
                with contextlib.suppress(psycopg.Error):
                    await writer.conn.close()
                if (conn := await self._connect_db()) is None:  # stopped while the database did not answer
                    return None
                writer.use(conn)

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

    # -- gaps that stay open (floor/gaps.py): said, never asked for (the floor holds no key) ------------------

    async def _watch_gaps(self, writer: ArchiveWriter) -> None:
        """Every second: a gap open past [gaps] grace_s is stale; the log warns once for it with the command a person
        runs, the status line counts them and the console's tiles show them (time alone makes a gap stale, with no
        message archived to update them)."""
        config = self.config
        watch = StaleWatch()
        while True:
            before = set(watch.said)
            # Measured with the clock that stamped them, the database's, as `tablectl floor gaps` does.
            gaps = open_gaps(writer.state.live.values(), writer.clock.now(), config.gaps.grace_s)
            for g in watch.newly_stale(gaps):
                say_stale(g, config.mqtt)
            if watch.said != before:
                self.stale_gaps = len(watch.said)
                if self.db_up and self.mqtt_up:  # else the status says what is down, which matters more
                    self.notifier.send(STATUS=self._status())
            # A lost session's alert ends with time alone too (floor/console/floor_alerts.py).
            if self.console is not None and (watch.said != before or self.console.view.session_lost):
                try:
                    self.console.refresh({t for t, _, _ in watch.said ^ before})
                except Exception:  # what the browsers see must never stop the watch
                    log.exception("console update failed")
            await asyncio.sleep(min(1.0, config.gaps.grace_s / 2))

    def _status(self) -> str:
        stale = f"; {self.stale_gaps} stale seq gap(s): tablectl floor gaps" if self.stale_gaps else ""
        refused = f"; {self.refused} message(s) refused: tablectl floor status" if self.refused else ""
        return f"archiving: {self.archived} events this run{stale}{refused}"

    async def _watchdog(self) -> None:
        interval = self.notifier.watchdog_interval
        if interval is None:
            return
        while True:
            stuck = self.tasks.stuck()
            if stuck:
                said = "; ".join(f"{s.task} stuck for {s.seconds:.0f} s" for s in stuck)
                self.notifier.send(STATUS=f"UNHEALTHY ({said}): systemd restarts the service")
            elif self.db_up and self.mqtt_up:
                self.notifier.send(WATCHDOG=1, STATUS=self._status())
            await asyncio.sleep(interval)
