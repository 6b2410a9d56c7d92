"""Connections to the archive: the DSN from FLOOR.toml [database], its password from a file of its own.

A multi-host DSN (`host=db1,db2 target_session_attrs=read-write`) follows the writable primary after a failover.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from floor.config import DatabaseSection, read_secret


def conninfo(db: DatabaseSection) -> str:
    password = read_secret(db.password_file, "database.password_file")
    extra = {"password": password} if password is not None else {}
    # UTC sessions: date_trunc('hour', ts) and every timestamp shown mean the same on every server.
    return make_conninfo(db.dsn, application_name="tablectl-floor", options="-c TimeZone=UTC", **extra)


def connect(db: DatabaseSection) -> psycopg.Connection[tuple[Any, ...]]:
    return psycopg.connect(conninfo(db))


async def async_connect(db: DatabaseSection) -> psycopg.AsyncConnection[tuple[Any, ...]]:
    # autocommit: each batch is one explicit transaction (conn.transaction()); an implicit one would stay open.
    return await psycopg.AsyncConnection.connect(conninfo(db), autocommit=True)


def where(dsn: str) -> str:
    """The DSN without its password, for the log."""
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    return " ".join(f"{k}={v}" for k, v in info.items() if k != "password")
