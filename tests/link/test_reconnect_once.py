"""The link reconnects to its database one connection at a time: the calls of an outage (the probe's, each table's
request) share the reconnect under way. Each of them used to ask for a connection of its own at once (floor/reach.py's
asynchronous ask, raced against the stop), so an outage with eight requests in flight opened eight connections to a
server that was struggling already. Counted where the server would see them: a proxy in front of a real cluster,
and a host gone dark (which takes each connection and never answers)."""

from __future__ import annotations

import asyncio

import psycopg
import pytest

from floor.pgcluster import PgCluster
from floor.sdnotify import Notifier
from link.config import parse_link_config
from link.database import DatabaseDown, LinkDatabase
from link.store import LinkStore
from tests.floor.dark_proxy import DarkAfter
from tests.link.conftest import link_toml

pytestmark = pytest.mark.floor
CALLS = 8


def _db(port: int, stopping: asyncio.Event) -> LinkDatabase:
    dsn = f"host=127.0.0.1 port={port} user=tablectl dbname=link connect_timeout=60"
    return LinkDatabase(parse_link_config(link_toml(dsn, "mqtt://127.0.0.1:1", "t-once")), Notifier(None), stopping)


def _select(store: LinkStore) -> None:
    store.conn.execute("SELECT 1")


async def _calls(db: LinkDatabase) -> list[object]:
    return list(await asyncio.gather(*(db.call(_select) for _ in range(CALLS)), return_exceptions=True))


async def test_the_calls_of_an_outage_wait_on_one_connection_to_a_dark_host() -> None:
    stopping = asyncio.Event()
    proxy = DarkAfter(1, relayed=0)  # every connection held unanswered
    try:
        db = _db(proxy.port, stopping)
        calls = asyncio.ensure_future(_calls(db))
        assert await asyncio.to_thread(proxy.held.wait, 30)
        stopping.set()  # the stop ends the reconnect's ask, and every call with it
        ended = await calls
        db.close()
    finally:
        proxy.close()
    assert all(isinstance(e, DatabaseDown) for e in ended), ended
    assert proxy.taken == 1  # the old code: one each (CALLS)


async def test_the_calls_after_a_lost_connection_reconnect_once() -> None:
    cluster = PgCluster.create(durable=False)
    stopping = asyncio.Event()
    try:
        cluster.start()
        cluster.create_database("link")
        proxy = DarkAfter(cluster.port, relayed=1000)  # relays all: it counts the connections the server sees
        db = _db(proxy.port, stopping)
        try:
            await db.call(_select)
            assert proxy.taken == 2  # the ask, then the database thread's connection
            with psycopg.connect(cluster.dsn(), autocommit=True) as admin:  # the server ends the link's session
                admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'tablectl-link'"
                )
            lost = await _calls(db)
            assert all(isinstance(e, DatabaseDown) for e in lost), lost  # the first found it lost, the rest queued
            before = proxy.taken
            assert await _calls(db) == [None] * CALLS
            assert proxy.taken - before == 2  # one ask and one connection; the old code asked CALLS times
        finally:
            db.close()
            proxy.close()
    finally:
        cluster.remove()
