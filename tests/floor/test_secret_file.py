"""A floor password file is read as its first line, every character of it kept (floor.config.read_secret).

A bare str.strip() took a leading or trailing U+00A0, U+3000 or other Unicode space, and ASCII spaces and tabs,
off the password; the database (or broker) then refused a password the operator had written correctly. Now only
the end of line goes: "\\n", or "\\r\\n" from a file saved on Windows. The database case runs against a real
PostgreSQL cluster (tests/floor/conftest.py) whose pg_hba.conf asks this test's role for a SCRAM password."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.mqtt.connection import read_secret as read_table_secret
from floor.config import DatabaseSection, FloorConfigError, read_secret
from floor.db import connect
from floor.pgcluster import PgCluster
from tests.floor.conftest import wait_for
from tests.floor.unicode_spaces import UNICODE_SPACES

ENDINGS = ["", "\n", "\r\n", "\n\nthe second line is not the password\n"]
# Any character but the line end: surrogates cannot be written as UTF-8.
INNER = st.characters(blacklist_characters="\n", blacklist_categories=["Cs"])
EDGE = st.sampled_from([*UNICODE_SPACES, " ", "\t", "\x1c", "\x1e", "\x85", "\u2028", "\u2029"])


@given(EDGE, st.text(INNER, min_size=1, max_size=20), EDGE, st.sampled_from(ENDINGS))
def test_a_secret_is_its_first_line_as_written(
    tmp_path_factory: pytest.TempPathFactory, before: str, core: str, after: str, ending: str
) -> None:
    password = before + core + after
    if password.endswith("\r"):  # "\r\n" is a Windows end of line: a password cannot end in "\r"
        password += "x"
    path = tmp_path_factory.mktemp("secret") / "password"
    path.write_bytes((password + ending).encode())
    assert read_secret(path, "database.password_file") == password
    # The table's mqtt.password_file the same way: str.splitlines() had cut it at U+001C..U+001E, U+0085, U+2028.
    assert read_table_secret(str(path)) == password


def test_an_empty_or_undecodable_secret_is_named(tmp_path: Path) -> None:
    path = tmp_path / "password"
    for data, problem in ((b"", "its first line is empty"), (b"\npw\n", "its first line is empty")):
        path.write_bytes(data)
        with pytest.raises(FloorConfigError, match=f"database.password_file: {path}: {problem}; put the password"):
            read_secret(path, "database.password_file")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # read unbounded, it froze the floor's start until someone wrote to it
    for device, problem in ((fifo, "is a FIFO"), (Path("/dev/zero"), "is a character device")):
        with pytest.raises(FloorConfigError, match=f"database.password_file: cannot read {device}: {problem}"):
            read_secret(device, "database.password_file")
    path.write_bytes("pässword\n".encode("latin-1"))
    with pytest.raises(FloorConfigError, match="is not UTF-8 text; put the password on the file's first line"):
        read_secret(path, "database.password_file")


@pytest.fixture
def scram_role(pg_cluster: PgCluster) -> Iterator[tuple[str, str]]:
    """A login role whose password has a no-break space and an ideographic space at its ends, which pg_hba.conf
    (a line for this role alone, put first) makes PostgreSQL ask for; yields (role, password)."""
    role = "floor_pw_" + uuid.uuid4().hex[:10]
    password = "\u00a0 s3cret\u3000"
    hba = pg_cluster.data / "pg_hba.conf"
    original = hba.read_text()
    dsn = f"host={pg_cluster.host} port={pg_cluster.port} user={role} dbname=postgres connect_timeout=5"
    with psycopg.connect(pg_cluster.dsn(), autocommit=True) as conn:
        conn.execute(
            psycopg.sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                psycopg.sql.Identifier(role), psycopg.sql.Literal(password)
            )
        )
        hba.write_text(f"host all {role} {pg_cluster.host}/32 scram-sha-256\n{original}")
        conn.execute("SELECT pg_reload_conf()")

    def asks_for_a_password() -> bool:
        try:
            psycopg.connect(dsn).close()
        except psycopg.OperationalError:
            return True
        return False

    try:
        wait_for(asks_for_a_password, 10, "pg_hba.conf reloaded")
        yield dsn, password
    finally:
        hba.write_text(original)
        with psycopg.connect(pg_cluster.dsn(), autocommit=True) as conn:
            conn.execute("SELECT pg_reload_conf()")
            conn.execute(psycopg.sql.SQL("DROP ROLE {}").format(psycopg.sql.Identifier(role)))


@pytest.mark.floor
@pytest.mark.parametrize("ending", ["\n", "\r\n", ""])
def test_the_archive_logs_in_with_the_password_as_written(
    scram_role: tuple[str, str], tmp_path: Path, ending: str
) -> None:
    dsn, password = scram_role
    path = tmp_path / "floor-db.password"
    path.write_text(password + ending, encoding="utf-8")
    with connect(DatabaseSection(dsn=dsn, password_file=path)) as conn:
        assert conn.execute("SELECT current_user").fetchone() == (dsn.split("user=")[1].split()[0],)
    # The stripped password is another password: the server refuses it (so the one above was checked).
    path.write_text(password.strip() + ending, encoding="utf-8")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        connect(DatabaseSection(dsn=dsn, password_file=path)).close()
