"""Connections to the archive: the DSN from FLOOR.toml [database], its password from a file of its own.

A multi-host DSN (`host=db1,db2 target_session_attrs=read-write`) follows the writable primary after a failover.
"""

from __future__ import annotations

import os
import re
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from floor.config import DatabaseSection, read_secret
from floor.interrupt import PromptConnection


def connect_bound(db: DatabaseSection) -> dict[str, int]:
    """connect_timeout=[database] connect_timeout_s, unless the dsn sets its own or, the key left to its default,
    PGCONNECT_TIMEOUT does (a keyword given to libpq beats its environment)."""
    if "connect_timeout" in conninfo_to_dict(db.dsn):
        return {}
    if "connect_timeout_s" not in db.model_fields_set and os.environ.get("PGCONNECT_TIMEOUT"):
        return {}
    return {"connect_timeout": db.connect_timeout_s}


def conninfo(db: DatabaseSection) -> str:
    password = read_secret(db.password_file, "database.password_file")
    extra: dict[str, str | int] = {"password": password} if password is not None else {}
    extra.update(connect_bound(db))
    # UTC sessions: date_trunc('hour', ts) and every timestamp shown mean the same on every server.
    return make_conninfo(db.dsn, application_name="tablectl-floor", options="-c TimeZone=UTC", **extra)


def connect(db: DatabaseSection) -> psycopg.Connection[tuple[Any, ...]]:
    # A command's Ctrl-C mid-statement ends within about 2 s, not psycopg's 10 s (floor/interrupt.py).
    return PromptConnection.connect(conninfo(db))


async def async_connect(db: DatabaseSection) -> psycopg.AsyncConnection[tuple[Any, ...]]:
    # autocommit: each batch is one explicit transaction (conn.transaction()); an implicit one would stay open.
    return await psycopg.AsyncConnection.connect(conninfo(db), autocommit=True)


def where(db: DatabaseSection) -> str:
    """The DSN without its password, for the log, with the connect_timeout it is given when it sets none."""
    info = conninfo_to_dict(make_conninfo(db.dsn, **connect_bound(db)))
    return " ".join(f"{k}={v}" for k, v in info.items() if k != "password")


def unreachable(err: psycopg.Error, db: DatabaseSection) -> str:
    """The fix for a failed connect, named from libpq's words: with a multi-host dsn libpq says each host's failure,
    so a wrong password on the primary sat between the standby's "session is read-only" lines, and the advice "check
    [database] dsn" sent the operator past the password file."""
    said = str(err)
    user = conninfo_to_dict(db.dsn).get("user") or os.environ.get("PGUSER") or "(libpq's default: your login)"
    if password_refused(err):
        where = (
            f"in {db.password_file}" if db.password_file is not None else "in a file named by [database] password_file"
        )
        return (
            f"PostgreSQL refused the password of user {user}: put that user's password {where}, or fix user= in "
            "[database] dsn"
        )
    if re.search(r'database "[^"]*" does not exist', said):
        return (
            "the database named by dbname= does not exist on that server: fix dbname= in [database] dsn, or create it"
        )
    return "check host=, port= and dbname= in [database] dsn, and that the server is up"


def password_refused(err: psycopg.Error) -> bool:
    """libpq's words for a password the server refused (or one it asked for and the floor has none)."""
    said = str(err)
    return "password authentication failed" in said or "no password supplied" in said
