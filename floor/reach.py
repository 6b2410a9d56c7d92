"""Whether a database server answers, asked so that a stop ends the asking (`tablectl floor`, `tablectl link`).

Both services do their database work on synchronous psycopg connections in worker threads (the floor's schema
migration, the link's store), and a synchronous connect cannot be interrupted: to a host that takes the connection
and never answers (a database host gone dark, a firewall that drops the reply) it waits for the dsn's
connect_timeout, or for ever when none is set, and the process cannot exit while its thread waits (asyncio.run and
the interpreter join their worker threads). So the services first connect asynchronously, raced against their stop
(`answered`), and open the thread's connection only once the server has answered.
"""

from __future__ import annotations

import asyncio

import psycopg

from floor.tasks import unless_stopped


async def _answers(conninfo: str) -> bool:
    conn = await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
    await conn.close()
    return True


async def answered(conninfo: str, stopping: asyncio.Event) -> bool:
    """True once the server took a connection (closed at once), False once `stopping` was set first (the connect then
    cancelled); a server that refuses raises psycopg.OperationalError, as the threads' connect would."""
    return await unless_stopped(stopping, _answers(conninfo)) is True
