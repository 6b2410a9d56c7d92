"""One floor service per archive: a PostgreSQL session advisory lock held on the writer's connection for as long as
the service runs (docs/floor.md, "One floor per archive").

Two floor services on one config (one run by hand beside systemd's, a second host started on the first's config)
share the fixed [mqtt] client_id, so the broker hands the persistent session from one to the other twice a second,
each archiving part of it, for ever. The second one now refuses to start (exit 2), naming the first. The lock is the
session's: lost with the writer's connection (a database restart, a failover), it is taken again on the new one,
and a floor that finds another holding it by then stops with the same words. An idle writer asks after its lock
every IDLE_CHECK_S (`held`), so a connection lost with no traffic is noticed then, not at the next write.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime

import structlog

from floor.archive import AsyncConn

log = structlog.get_logger("tablectl.floor")
# (classid, objid) of pg_try_advisory_lock(int, int): a key space of its own beside the bigint keys of the schema's
# migration (16016016) and the ts index build (16016017), which pg_locks tells apart by objsubid (1, theirs; 2, ours).
LOCK = (16016016, 1)
# The holder's host and pid, in its writer session's application_name, for a second floor to name it (63 bytes).
NAME = "tablectl-floor {host} pid {pid}"
# A floor host that dies without closing its connection (power, a kernel panic) leaves its session, and so the lock,
# to the server's TCP keepalive: two hours by the kernel's default, in which its replacement would refuse to start.
# Probed every 10 s from 10 s idle, the server ends that session some 40 s after the host went (PGC_USERSET).
KEEPALIVES = {"tcp_keepalives_idle": "10", "tcp_keepalives_interval": "10", "tcp_keepalives_count": "3"}
# How long the writer may sit idle before it asks whether its session still holds the lock: a connection lost with no
# traffic (a database restart, a terminated backend) is otherwise noticed only at the next write, and meanwhile a
# second floor may take the lock and the broker session beside this one. One round trip every 2 s, on the writer's
# own connection between its batches; a batch written is as good a check (docs/floor.md, "One floor per archive").
IDLE_CHECK_S = 2.0
HELD = (
    "SELECT EXISTS (SELECT FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid()"
    " AND classid::bigint = %s AND objid::bigint = %s AND objsubid = 2)"
)
HOLDER = (
    "SELECT a.application_name, host(a.client_addr), a.backend_start, l.pid FROM pg_locks l"
    " LEFT JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted"
    " AND l.classid::bigint = %s AND l.objid::bigint = %s AND l.objsubid = 2"
)


class AnotherFloor(Exception):
    """Another floor service holds this archive's lock: this one does not start (exit 2), or stops."""


async def hold(conn: AsyncConn, database: str) -> None:
    """The floor's lock taken on `conn` (autocommit: a session lock outlives every transaction), and the session
    named after this process; AnotherFloor, said in the log, when another session holds it."""
    got = await (await conn.execute("SELECT pg_try_advisory_lock(%s, %s)", LOCK)).fetchone()
    if got is not None and got[0] is True:
        name = NAME.format(host=socket.gethostname(), pid=os.getpid())[:63]
        await conn.execute("SELECT set_config('application_name', %s, false)", (name,))
        for setting, value in KEEPALIVES.items():  # ignored over a local socket, where an exit closes it at once
            await conn.execute("SELECT set_config(%s, %s, false)", (setting, value))
        return
    row = await (await conn.execute(HOLDER.encode(), LOCK)).fetchone()
    holder = _holder(row)
    fix = (
        "stop one of the two (`systemctl stop tablectl-floor` on the host named, or end the `tablectl floor` run "
        "by hand there: `pgrep -af 'tablectl.*floor'`); a second floor needs its own [database] dsn and [mqtt] "
        "client_id; if that host is down, the server ends its session within a minute: start this one again then"
    )
    log.error(
        "another floor service holds this archive; not archiving beside it",
        holder=holder,
        database=database,
        fix=fix,
    )
    raise AnotherFloor(
        f"another floor service holds this archive ({database}): {holder}; two floors on one archive take the "
        f"broker session from each other and each archives part of it: {fix}"
    )


async def held(conn: AsyncConn) -> bool:
    """Whether this session still holds the floor's lock; psycopg.OperationalError when the connection is gone (the
    writer then reconnects and takes it again, or stops naming the floor that took it: floor/writing.py)."""
    row = await (await conn.execute(HELD.encode(), LOCK)).fetchone()
    return row is not None and row[0] is True


def _holder(row: tuple[object, ...] | None) -> str:
    if row is None:  # it let go between the two statements: a start again takes it
        return "it stopped a moment ago: start this one again"
    name, addr, since, pid = row
    if name is None:  # pg_stat_activity hides other users' sessions
        return f"PostgreSQL backend pid {pid} (another database user: ask pg_stat_activity as a superuser)"
    started = since.isoformat(timespec="seconds") if isinstance(since, datetime) else "?"
    came = f"from {addr}" if addr is not None else "over the server's local socket"
    return f"{name!s} (its PostgreSQL session: backend pid {pid}, {came}, since {started})"
