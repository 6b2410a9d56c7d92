"""The floor service while PostgreSQL refuses its password: it retried for ever saying "PostgreSQL unreachable" (the
server answered: it refused), so an operator looked for a network fault. The retry line now says the password was
refused, for which user, and the file to fix, as the CLI verbs do (floor/db.py `unreachable`). Real parts: a real
PostgreSQL with a scram-sha-256 rule for the test's own user, the service in this process."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path

import psycopg
import pytest
from structlog.testing import capture_logs

from floor.config import parse_floor_config
from floor.pgcluster import PgCluster
from floor.service import FloorService
from tests.floor.conftest import floor_toml

pytestmark = pytest.mark.floor
REFUSED = "PostgreSQL refused the floor's password; retrying"


async def test_a_refused_password_is_said_with_the_user_and_the_password_file(
    tmp_path: Path, pg_cluster: PgCluster, floor_dsn: str, unique_id: str
) -> None:
    user = "pw_" + uuid.uuid4().hex[:8]
    hba = pg_cluster.data / "pg_hba.conf"
    hba.write_text(f"host all {user} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
    with psycopg.connect(pg_cluster.dsn(), autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {user} LOGIN PASSWORD 'right'".encode())
        conn.execute("SELECT pg_reload_conf()")
    secret = tmp_path / "floor-db.password"
    secret.write_text("wrong\n")
    text = floor_toml(floor_dsn.replace("user=tablectl", f"user={user}"), "mqtt://127.0.0.1:1", unique_id, "f")
    service = FloorService(
        parse_floor_config(text.replace("[database]\n", f'[database]\npassword_file = "{secret}"\n'))
    )
    with capture_logs() as logs:
        run = asyncio.create_task(service.run())
        try:
            async with asyncio.timeout(60):
                while not any(e["event"] == REFUSED for e in logs):  # noqa: ASYNC110 (a log line has no event)
                    await asyncio.sleep(0.05)
        finally:
            service.stop()
            await asyncio.wait_for(run, 30)
    said = next(e for e in logs if e["event"] == REFUSED)
    assert said["log_level"] == "error" and "password authentication failed" in said["error"], said
    assert f"refused the password of user {user}" in said["fix"] and str(secret) in said["fix"], said
    assert not any("unreachable" in e["event"] for e in logs), logs
