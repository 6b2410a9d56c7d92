"""The events' BRIN index on ts (schema migration 8), built on an archive's older days without blocking its writer.

A BRIN index keeps the least and greatest ts of each range of pages: the archive writer appends events as they
arrive, roughly in ts order, so a day's ranges are narrow and a statement over some hours of it (the report's
window and its edges) reads only their pages, from an index of a few hundred kB a day that the writer barely
updates (a range is summarised once, after it fills: autosummarize, by autovacuum).

Building it in one `CREATE INDEX` at a service start would hold a lock blocking writes on every partition for as
long as a long archive takes to read. So migration 8 only creates the index ON ONLY `events` (the parent's, at
once whatever the archive holds, marked invalid until every partition's index is attached); a partition made from
then on (floor/schema.py partition_ddl) is made with its own. The partitions archived before are indexed here, one
at a time, each with `CREATE INDEX CONCURRENTLY` (the writer goes on writing; it cannot run in a transaction, so
not in the migration's) then attached to the parent's; the service runs this beside the archiving, each partition
said in its log, and `tablectl floor fill-rounds` at a terminal, a line each (under the same lock: never both; a
service finding the lock held waits for it, and says "complete" itself once the other is done).
Interrupted (a stop, a crash), it leaves at most one partition's invalid index, which the next run drops and builds
again; a partition without the index is only read without it meanwhile.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import psycopg
import structlog

from controller.core.shown import one_line
from floor.config import DatabaseSection
from floor.db import connect, conninfo
from floor.reach import answered
from floor.rounds import fill_beside
from floor.stmt_stop import StatementStop, Stopped, run_stoppable
from floor.tasks import stopped_within

Conn = psycopg.Connection[tuple[Any, ...]]
log = structlog.get_logger("tablectl.floor")

INDEX = "events_ts_brin"
# The parent's index alone: no partition is read, so it is instantaneous on any archive (migration 8).
MIGRATION = f"CREATE INDEX IF NOT EXISTS {INDEX} ON ONLY events USING brin (ts) WITH (autosummarize = on)"
# Two services starting at once must not both build the same partition's index (the second would fail on it).
LOCK_KEY = 16016017
# A service finding the lock held tries it again this often (a stop ends the wait at once, whatever this is), and
# says the other's progress at least every PROGRESS_S.
LOCK_WAIT_S = 1.0
PROGRESS_S = 60.0
# The older days' work asked again this long after the database was lost, then twice as long each time, up to a max.
RETRY_FIRST_S = 1.0
RETRY_MAX_S = 30.0
STOPPED = "events ts index build stopped; the next start builds it"

# The partitions of `events` with no index attached to the parent's, oldest first.
UNINDEXED = f"""
SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'events'::regclass AND NOT EXISTS (
    SELECT 1 FROM pg_inherits ii JOIN pg_index x ON x.indexrelid = ii.inhrelid
    WHERE ii.inhparent = '{INDEX}'::regclass AND x.indrelid = c.oid)
ORDER BY c.relname
"""


def partition_index(partition: str) -> str:
    return f"{partition}_ts_brin"


@dataclass(frozen=True, slots=True)
class Waiting:
    """How a service waits for another process's build: the lock tried every `poll_s`, and `pause(seconds)` between
    two tries, True once the service is stopping (it returns at once then: the stop is not left to the next try)."""

    poll_s: float
    pause: Callable[[float], bool]


def index_partitions(
    conn: Conn,
    progress: Callable[[int, int, str, float], None] | None = None,
    stopping: Callable[[], bool] = lambda: False,
    busy: Callable[[int], None] | None = None,
    waiting: Waiting | None = None,
    stop: StatementStop | None = None,
) -> int:
    """Index and attach every partition archived before migration 8; returns how many. `progress(done, total,
    partition, seconds)` after each; `stopping()` is asked before each; `busy(partitions)` when another process
    (a service, `floor fill-rounds`) holds the lock and is building them. Without `waiting` that ends the call;
    with it, the call waits for the lock (until `waiting.pause` says stop), logging the other's progress, and
    builds only what the other left (none, when it finished). `stop`, a service's: its stop cancels the partition's
    statement in flight, and the call returns then, what that partition was left with said in the log. Nothing to do
    (the usual case) costs one query. The connection is left in autocommit (CONCURRENTLY needs it)."""
    conn.commit()
    conn.autocommit = True
    row = conn.execute("SELECT to_regclass(%s) IS NOT NULL", (INDEX,)).fetchone()
    if row is None or not row[0]:
        return 0  # a schema before migration 8: the service migrates first, so only a caller's mistake
    todo = _unindexed(conn)
    if not todo:
        return 0
    got = conn.execute("SELECT pg_try_advisory_lock(%s)", (LOCK_KEY,)).fetchone()
    if got is None or not got[0]:
        log.info(
            "events ts index: another floor service or `floor fill-rounds` is building it",
            partitions=len(todo),
            then="waiting for it to finish" if waiting is not None else "left to it",
        )
        if busy is not None:
            busy(len(todo))
        if waiting is None or not _wait_for_lock(conn, len(todo), waiting):
            return 0
    try:
        # Taken after a wait, the other process built some or all of them meanwhile: those are not built again.
        todo = _unindexed(conn)
        done = 0
        for partition in todo:
            if stopping() or (stop is not None and stop.stopped.is_set()):
                break
            t0 = time.perf_counter()
            if not _index_one(conn, partition, stop):
                break
            done += 1
            if progress is not None:
                progress(done, len(todo), partition, time.perf_counter() - t0)
        return done
    finally:
        if not conn.broken:  # a lost session's locks are gone with it; raising here would hide why it was lost
            conn.execute("SELECT pg_advisory_unlock(%s)", (LOCK_KEY,))


def _unindexed(conn: Conn) -> list[str]:
    return [str(r[0]) for r in conn.execute(UNINDEXED.encode()).fetchall()]


def _wait_for_lock(conn: Conn, left: int, waiting: Waiting) -> bool:
    """The lock tried every `poll_s` until the other process lets it go, the days it still has to build counted at
    each try and said in the log when that changes (its progress) and at least every PROGRESS_S. False when
    stopping (said by `pause`, at once), or when the other left nothing to build (it finished: the lock is not
    needed to see the index complete).

    Tried, not waited for in a blocked `pg_advisory_lock`: a statement blocked there holds its snapshot, and the
    other's CREATE INDEX CONCURRENTLY waits for every older snapshot to end before it finishes, so each of its
    builds stalled on the service's wait until its lock_timeout, or PostgreSQL found the deadlock first (at its
    deadlock_timeout, 1 s by default: the wait's own second) and ended the service's wait with an error, which
    stopped the service."""
    t0 = said_at = time.monotonic()
    while not waiting.pause(waiting.poll_s):
        got = conn.execute("SELECT pg_try_advisory_lock(%s)", (LOCK_KEY,)).fetchone()
        if got is not None and got[0]:
            return True
        now_left = len(_unindexed(conn))
        if now_left == 0:
            return False
        if now_left != left or time.monotonic() - said_at >= PROGRESS_S:
            left, said_at = now_left, time.monotonic()
            log.info(
                "events ts index: still waiting for the other process building it",
                partitions_left=left,
                waited_s=round(said_at - t0, 1),
            )
    return False


class IndexBuildFailed(Exception):
    """PostgreSQL failed a partition's build or attach (a deadlock with another session, a statement_timeout, the
    server going away): the message names the partition, what PostgreSQL said, what the partition was left with
    and the fix, for an operator; the lock is let go and the partitions after it are left for the next run."""

    def __init__(self, partition: str, said: str, left: str, *, lost: bool = False) -> None:
        self.partition = partition
        # A lost connection is the server's doing (a restart, an administrator's pg_terminate_backend, the network),
        # not a session to stop; a statement PostgreSQL failed is another session's, holding a lock or deadlocked.
        again = (
            "If the connection is lost again, PostgreSQL's log says why (a restart, a terminated backend)"
            if lost
            else "If it fails again the same way, another session is in its way (holding a lock it needs, or in a "
            "deadlock with it: an older floor service still running during an upgrade, a long transaction): stop it "
            "first"
        )
        super().__init__(
            f"the ts index of {partition} was not built: PostgreSQL said {said}. {left}. Run `tablectl floor "
            "--config FLOOR.toml fill-rounds` again: it resumes from this day (or the floor service does at its "
            f"next start). {again}."
        )


def _index_one(conn: Conn, partition: str, stop: StatementStop | None = None) -> bool:
    """False when `stop` stopped it (said in the log, as what it left)."""
    if stop is not None and not stop.enter(conn):
        return False
    try:
        _build_and_attach(conn, partition, stop)
    except Stopped:  # stopped between two of its statements
        return _stopped(conn, partition)
    except psycopg.Error as err:
        if stop is not None and stop.stopped.is_set():
            return _stopped(conn, partition)  # its own cancel, or the server going away meanwhile
        left = _left(conn, partition_index(partition))
        raise IndexBuildFailed(partition, _pg_said(err), left, lost=conn.broken) from err
    finally:
        if stop is not None:
            stop.leave()
    return True


def _stopped(conn: Conn, partition: str) -> bool:
    # Either way the next start builds it. Nothing is dropped now: a DROP INDEX CONCURRENTLY waits for the same
    # writers the build waited for.
    log.info(STOPPED, partition=partition, left=_stopped_left(conn, partition_index(partition)))
    return False


def _pg_said(err: psycopg.Error) -> str:
    # The primary message and its detail (a deadlock's names the other process's pid), on one line.
    primary = " ".join((err.diag.message_primary or str(err)).split())
    about = [f"SQLSTATE {err.sqlstate}"] if err.sqlstate else []
    about += [" ".join(err.diag.message_detail.split())] if err.diag.message_detail else []
    return f'"{primary}"' + (f" ({': '.join(about)})" if about else "")


def _left(conn: Conn, name: str) -> str:
    """What the failed build left on the partition, an invalid index dropped (a rerun starts the day clean)."""
    if conn.broken:
        return "The connection was lost, so its index may be left INVALID: the next run drops it and builds it again"
    try:
        valid_now = _valid_now(conn, name)
        if valid_now is None:
            return "The day has no ts index, as before, and nothing was attached"
        if valid_now:
            return f"Its index {name} is built but not attached: the next run attaches it"
        conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}".encode())
    except psycopg.Error as err:
        return (
            f"Its index {name} is left INVALID (dropping it failed too: {_pg_said(err)}): the next run drops it "
            "and builds it again"
        )
    return f"Its INVALID index {name} was dropped: the day has no ts index, as before, and nothing was attached"


def _valid_now(conn: Conn, name: str) -> bool | None:
    """Whether the index `name` is valid; None when there is none."""
    row = conn.execute(
        "SELECT x.indisvalid FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid WHERE c.relname = %s", (name,)
    ).fetchone()
    return None if row is None else bool(row[0])


def _stopped_left(conn: Conn, name: str) -> str:
    """What a stopped build left on the partition, for the log (the stop's words: a start, not a run, goes on)."""
    lost = f"its index {name} maybe INVALID (the connection was lost): the next start drops it and builds it again"
    if conn.broken:
        return lost
    try:
        valid_now = _valid_now(conn, name)
    except psycopg.Error:
        return lost  # the server went away meanwhile
    if valid_now is None:
        return "no ts index yet: the next start builds it"
    if valid_now:
        return f"its index {name} built, not attached: the next start attaches it"
    return f"its index {name} INVALID: the next start drops it and builds it again"


def _build_and_attach(conn: Conn, partition: str, stop: StatementStop | None = None) -> None:
    name = partition_index(partition)
    run = conn.execute if stop is None else partial(stop.execute, conn)
    # An index of this name left invalid by an interrupted CONCURRENTLY build cannot be attached: build it again.
    invalid = conn.execute(
        "SELECT 1 FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid WHERE c.relname = %s AND NOT x.indisvalid",
        (name,),
    ).fetchone()
    if invalid is not None:
        run(f"DROP INDEX CONCURRENTLY IF EXISTS {name}".encode())
    # Names are the partitions' own (events_YYYYMMDD, from the catalogue), never input.
    run(
        f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {partition} USING brin (ts) WITH (autosummarize = on)"
        "".encode()
    )
    run(f"ALTER INDEX {INDEX} ATTACH PARTITION {name}".encode())


async def index_beside(db: DatabaseSection, stop: asyncio.Event, wait_s: float = LOCK_WAIT_S) -> None:
    """The service's task: the older partitions indexed beside the archiving, each said in the log. Another process
    building them (`floor fill-rounds`, a second service) is waited for, so "complete" is said here once it is. A
    stop ends the wait at once, and a partition's build by cancelling its statement (logged, with what it left); the
    next start goes on from there."""
    stop_build = StatementStop("events ts index")  # the stop, as the build's thread sees it

    def said(done: int, total: int, partition: str, seconds: float) -> None:
        log.info("events ts index built", partition=partition, seconds=round(seconds, 2), done=done, of=total)

    def build() -> bool:
        waited: list[int] = []
        waiting = Waiting(wait_s, stop_build.stopped.wait)
        with connect(db) as conn:
            if not index_partitions(conn, said, busy=waited.append, waiting=waiting, stop=stop_build) and not waited:
                return False  # nothing to do: the usual start says nothing
            return not stop_build.stopped.is_set() and valid(conn)

    if not await answered(conninfo(db), stop):  # as fill_beside: the thread connects once the server answered
        return
    try:
        complete = await run_stoppable(build, stop, stop_build)
    except IndexBuildFailed as failed:
        # A day without its ts index is only slower to read: the archiving goes on, and the next start builds it.
        log.error("events ts index not built; archiving goes on", partition=failed.partition, problem=str(failed))
        return
    if complete:
        log.info("events ts index complete")


def valid(conn: Conn) -> bool:
    """Whether every partition's index is attached (the parent's is then marked valid)."""
    row = conn.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", (INDEX,)).fetchone()
    return bool(row and row[0])


async def older_days(db: DatabaseSection, stop: asyncio.Event, retry_s: float = RETRY_FIRST_S) -> None:
    """The service's task for the days archived before migrations 7 and 8: their round summary first (a report over
    one refuses until then), then their ts index; one after the other, not both at once on the floor PC's cores.

    The database lost meanwhile (refused, gone dark, restarted) is waited out, said in the log, and the work asked
    again from where it was left: both steps go on from what they find. Before, it ended the task, and with it the
    whole floor (exit 1) over work the archiving does not need."""
    while not stop.is_set():
        try:
            await fill_beside(db, stop)
            if not stop.is_set():
                await index_beside(db, stop)
            return
        except psycopg.OperationalError as err:
            log.warning(
                "older days' work lost the database; archiving goes on, asking again",
                problem=one_line(err), retry_in_s=retry_s,
                fix="none needed if the database comes back; else see the writer's lines for the cause",
            )  # fmt: skip
            if await stopped_within(stop, retry_s):
                return
            retry_s = min(retry_s * 2, RETRY_MAX_S)
