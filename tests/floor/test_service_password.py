"""The floor service while PostgreSQL refuses its password: it retried for ever saying "PostgreSQL unreachable" (the
server answered: it refused), so an operator looked for a network fault. The retry line now says the password was
refused, for which user, and the file to fix, as the CLI verbs do (floor/db.py `unreachable`). Real parts: a real
PostgreSQL with a scram-sha-256 rule for the test's own user, the service in this process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from floor.config import parse_floor_config
from floor.pgcluster import PgCluster
from floor.service import FloorService
from tests.floor.conftest import floor_toml
from tests.floor.pgroles import wrong_password

pytestmark = pytest.mark.floor
REFUSED = "PostgreSQL refused the floor's password; retrying"


async def test_a_refused_password_is_said_with_the_user_and_the_password_file(
    tmp_path: Path, pg_cluster: PgCluster, floor_dsn: str, unique_id: str
) -> None:
    wrong = wrong_password(pg_cluster, floor_dsn, tmp_path)
    user, secret = wrong.user, wrong.secret
    text = floor_toml(wrong.dsn, "mqtt://127.0.0.1:1", unique_id, "f")
    service = FloorService(parse_floor_config(wrong.database_section(text)))
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
