"""`tablectl floor`: the service that archives every table's messages (docs/floor.md, "Operations").

Two tasks share a queue. The listener (floor/intake.py) holds a persistent MQTT v5 session (fixed client id, no clean
start, a long session expiry) and acknowledges nothing itself: paho's manual acknowledgement is on, and a message is
acknowledged to the broker only after the transaction that archived it committed. So a kill -9 at any instant leaves
every message either archived or still queued at the broker for the next start, which redelivers it; archiving is
idempotent, so a redelivered message changes nothing. The writer (floor/writing.py) takes what queued (up to
batch_max, waiting flush_ms for more) and archives it in one transaction (floor/archive.py), on a connection that
holds the floor's lock (floor/floor_lock.py: one floor per archive). A lost broker or database is retried with
backoff; the service stays up and says so in its log and its systemd status."""

from __future__ import annotations

import asyncio

import psycopg
import structlog

from floor import writing
from floor.archive import ArchiveWriter, AsyncConn, load_state
from floor.config import FloorConfig, FloorConfigError, read_secret
from floor.console.loading import load_unless_stopped
from floor.console.server import ConsoleServer
from floor.db import async_connect, connect, conninfo, password_refused, unreachable, where
from floor.floor_lock import AnotherFloor, hold
from floor.gaps import StaleWatch, open_gaps
from floor.intake import BACKOFF_MAX, Intake
from floor.reach import answered
from floor.refusal_log import RefusalLog
from floor.schema import SchemaError, migrate
from floor.sdnotify import Notifier
from floor.session_watch import SessionWatch
from floor.standby import watch_standby
from floor.tasks import ServiceTasks, stopped_within, unless_stopped
from floor.ts_index import older_days
from floor.write_log import say_left, say_stale

log = structlog.get_logger("tablectl.floor")
# What ends run() as a refusal a person fixes, not a fault a restart mends: `tablectl floor` exits 2 on them.
NOT_STARTED = (SchemaError, FloorConfigError, AnotherFloor)


class FloorService:
    def __init__(self, config: FloorConfig, notifier: Notifier | None = None) -> None:
        self.config = config
        self.notifier = notifier or Notifier(None)
        self.stale_gaps = 0
        self.stopping = asyncio.Event()
        self.failure: BaseException | None = None
        self.console: ConsoleServer | None = ConsoleServer(config) if config.console.listen else None
        self.console_ready = asyncio.Event()
        self.tasks = ServiceTasks("floor", self._died)
        self.refusal_log = RefusalLog.floor(log, config.ingest)  # its lines bounded as the rows are
        self.session = SessionWatch(config.mqtt.client_id, config.mqtt.broker, config.mqtt.session_expiry_s)
        self.intake = Intake(config, self.notifier, self.console, self.refusal_log, self.session)
        self.writes = writing.WriteLoop(config, self.intake, self.tasks, self.stopping, self.console, self._reconnect)

    @property
    def mqtt_up(self) -> bool:
        return self.intake.mqtt_up

    @property
    def generation(self) -> int:
        """How many times the listener connected: a test waits for a reconnection with it."""
        return self.intake.generation

    async def run(self) -> None:
        """Until stop(): migrate, load the state, listen and archive. A task that dies stops it, never silently."""
        read_secret(self.config.mqtt.password_file, "mqtt.password_file")  # a missing file is a config error now
        if not await self._migrate() or (conn := await self._connect_db()) is None:
            return
        writer = ArchiveWriter(conn, self.config.gaming_day, await load_state(conn), ingest=self.config.ingest)
        log.info("floor archive ready", tables=len(writer.state.live), database=where(self.config.database))
        self.session.had = bool(writer.state.live)  # an earlier run archived tables: it had a session
        if self.console is not None and not await self._start_console(self.console, writer):
            return await writer.conn.close()  # stopped while the console loaded (said)
        self.tasks.start("floor-listener", self.intake.listen())
        self.tasks.start("floor-watchdog", self._watchdog(), may_return=self.notifier.watchdog_interval is None)
        self.tasks.start("floor-gaps", self._watch_gaps(writer))
        self.tasks.start("floor-refusal-log", self.refusal_log.run())
        if (
            self.console is not None
        ):  # the lost session's alert and its end kept for a restart; a stalled write holds it
            self.tasks.start("floor-console-session", self.console.lost_desk.run(self.stopping), may_return=True)
        self.tasks.start("floor-older-days", older_days(self.config.database, self.stopping), may_return=True)
        self.tasks.start("floor-standby", watch_standby(self.config.database, self.stopping), may_return=True)
        # The write loop is a task like the others (not run() itself): cancelled or ended, it is reported the same.
        loop = self.tasks.start(writing.WRITER, self.writes.loop(writer), may_return=True)
        self.notifier.send(READY=1, STATUS="archiving")
        try:
            await self.stopping.wait()
        finally:
            log.info("floor stopping", failed=self.failure is not None)
            self.notifier.send(STOPPING=1, STATUS="stopping")
            # A stop lets the batch in hand commit and be acknowledged; a stuck write, uncommitted, is redelivered.
            waited_s = writing.WRITE_STUCK_S / 2
            if not (await asyncio.wait({loop}, timeout=waited_s))[0]:
                log.warning("floor writer still busy after the stop's wait; cancelling it", waited_s=waited_s)
            await self.tasks.close()
            say_left(len(self.writes.in_hand) + self.intake.queue.qsize())  # what the broker keeps and sends again
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
            log.info("floor stopped before its console was loaded", database=where(self.config.database))
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
        said, fix = str(err).strip(), unreachable(err, self.config.database)
        # A refused password is no outage: the line says the cause and the file to fix, not "unreachable" for ever.
        what = "PostgreSQL refused the floor's password" if password_refused(err) else "PostgreSQL unreachable"
        log.error(f"{what}; retrying", error=said, fix=fix, retry_in_s=delay)
        self.notifier.send(STATUS=f"{what}: {fix}"[:300] if password_refused(err) else f"{what}: {said[:200]}")
        return await stopped_within(self.stopping, delay) and self._stopped_at_start()

    def _stopped_at_start(self) -> bool:
        if not self.tasks.started:  # once running, run() says what the writer left (say_left)
            log.info("floor stopped before its archive was reachable", database=where(self.config.database))
        return True

    async def _connect_db(self) -> AsyncConn | None:
        """The writer's connection, holding the floor's lock (floor/floor_lock.py: AnotherFloor when another floor
        holds it); None once stopped first."""
        delay = 0.5
        while True:
            try:
                # A connect that hangs (a host gone dark) is cut short by a stop too: None, as a stopped backoff.
                if (conn := await unless_stopped(self.stopping, async_connect(self.config.database))) is None:
                    self._stopped_at_start()
                    return None
                try:
                    await hold(conn, where(self.config.database))
                except BaseException:
                    await conn.close()
                    raise
                self.writes.db_up = True
                return conn
            except psycopg.OperationalError as err:
                self.writes.db_up = False
                if await self._unreachable(err, delay):
                    return None
                delay = min(delay * 2, BACKOFF_MAX)

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
                if self.writes.db_up and self.mqtt_up:  # else the status says what is down, which matters more
                    self.notifier.send(STATUS=self._status())
            # A lost session's alert ends with time alone too (floor/console/floor_alerts.py).
            if self.console is not None and (watch.said != before or self.console.view.session_lost):
                try:
                    self.console.refresh({t for t, _, _ in watch.said ^ before})
                except Exception:  # what the browsers see must never stop the watch
                    log.exception("console update failed")
            await asyncio.sleep(min(1.0, config.gaps.grace_s / 2))

    async def _reconnect(self) -> AsyncConn | None:
        """The writer's new connection after its database was lost. The lock went with the old session: another
        floor that took it meanwhile archives now, and this one stops (exit 2, as at a start beside it)."""
        try:
            return await self._connect_db()
        except AnotherFloor as err:
            self._died(err)
            return None

    def _status(self) -> str:
        stale = f"; {self.stale_gaps} stale seq gap(s): tablectl floor gaps" if self.stale_gaps else ""
        refused = f"; {self.writes.refused} message(s) refused: tablectl floor status" if self.writes.refused else ""
        return f"archiving: {self.writes.archived} events this run{stale}{refused}"

    async def _watchdog(self) -> None:
        interval = self.notifier.watchdog_interval
        if interval is None:
            return
        while True:
            stuck = self.tasks.stuck()
            if stuck:
                said = "; ".join(f"{s.task} stuck for {s.seconds:.0f} s" for s in stuck)
                self.notifier.send(STATUS=f"UNHEALTHY ({said}): systemd restarts the service")
            elif self.writes.db_up and self.mqtt_up:
                self.notifier.send(WATCHDOG=1, STATUS=self._status())
            await asyncio.sleep(interval)
