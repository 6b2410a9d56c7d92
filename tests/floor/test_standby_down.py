"""The floor's synchronous standby down, as an operator meets it (the real CLI, a real primary and standby made as
systemd/postgresql.md describes, by floor.pgcluster): every commit on the primary then waits for the standby, so the
floor archives nothing, and `floor status` showed the tables "ok" (their last state, ageing) and `check-config` said
"database reachable", with not a word that the archive had stopped."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from floor.config import DatabaseSection
from floor.db import connect
from floor.pgcluster import PgCluster
from floor.schema import migrate
from tests.floor.conftest import FloorProcess, count, floor_toml, wait_for
from tests.tablectl_runs import tablectl

# One primary and standby for the module (initdb and pg_basebackup: some 3 s a test), on one worker.
pytestmark = [pytest.mark.floor, pytest.mark.xdist_group("standby_down")]
SYNC = "SELECT count(*) FROM pg_stat_replication WHERE application_name = 'standby1' AND sync_state = 'sync'"


@pytest.fixture(scope="module")
def clusters() -> Iterator[tuple[PgCluster, PgCluster]]:
    primary = PgCluster.create(durable=False)
    standby: PgCluster | None = None
    try:
        primary.start()
        standby = primary.add_standby("standby1", synchronous=True)
        yield primary, standby
    finally:
        if standby is not None:
            standby.remove()
        primary.remove()


@pytest.fixture
def primary_and_standby(clusters: tuple[PgCluster, PgCluster]) -> tuple[PgCluster, PgCluster]:
    """The module's pair, its standby streaming and synchronous again (the test before stopped it)."""
    primary, standby = clusters
    standby.start()  # at once when it runs
    wait_for(lambda: count(primary.dsn(), SYNC) == 1, 30, "the standby synchronous")
    return primary, standby


def fresh_database(primary: PgCluster) -> str:
    """A database of the test's own on the module's primary."""
    return primary.create_database("floor_" + uuid.uuid4().hex[:12])


def test_status_and_check_config_say_the_synchronous_standby_is_down(
    tmp_path: Path, primary_and_standby: tuple[PgCluster, PgCluster]
) -> None:
    primary, standby = primary_and_standby
    dsn = fresh_database(primary)
    with connect(DatabaseSection(dsn=dsn)) as conn:
        migrate(conn)
        conn.commit()
    config = tmp_path / "floor.toml"
    config.write_text(floor_toml(dsn, "mqtt://127.0.0.1:1", "t", "floor-t"))
    up = tablectl("floor", "--config", config, "status", timeout=20)
    assert up.returncode == 0 and "standby" not in up.stdout + up.stderr, up.stdout + up.stderr
    checked = tablectl("floor", "--config", config, "check-config", timeout=20)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # systemd/postgresql.md's promotion step 3 counts on check-config saying which server of the dsn answered.
    assert f"the server that answered: 127.0.0.1:{primary.port}" in checked.stdout, checked.stdout

    standby.stop()
    with psycopg.connect(primary.dsn(), autocommit=True) as conn:  # the WAL sender gone: the primary knows it
        assert conn.execute("SELECT count(*) FROM pg_stat_replication").fetchone() == (0,)
    for argv in (("status",), ("check-config",)):
        down = tablectl("floor", "--config", config, *argv, timeout=20)
        said = down.stdout + down.stderr
        assert down.returncode == 1, (argv, said)
        assert "synchronous standby" in said and "'standby1'" in said, (argv, said)
        assert "every commit waits" in said and "systemd/postgresql.md" in said, (argv, said)


def test_a_command_that_writes_is_refused_while_commits_would_wait(
    tmp_path: Path, primary_and_standby: tuple[PgCluster, PgCluster]
) -> None:
    """`report export`, `floor retention --apply`, `fill-rounds`: each commits, so with the standby down each waited
    for ever, silent, until the operator's Ctrl-C."""
    primary, standby = primary_and_standby
    dsn = fresh_database(primary)
    with connect(DatabaseSection(dsn=dsn)) as conn:
        migrate(conn)
        conn.commit()
    config = tmp_path / "floor.toml"
    config.write_text(
        floor_toml(dsn, "mqtt://127.0.0.1:1", "t", "floor-t") + f'[export]\ndirectory = "{tmp_path / "out"}"\n'
    )
    standby.stop()
    for argv in (
        ("report", "--config", str(config), "export", "--day", "2020-01-01"),
        ("floor", "--config", str(config), "retention", "--apply"),
        ("floor", "--config", str(config), "fill-rounds"),
    ):
        try:
            done = tablectl(*argv, timeout=20)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{argv} waited, silent, for the standby") from None
        assert done.returncode == 2, (argv, done.stdout, done.stderr)
        assert "synchronous standby is not streaming" in done.stderr and "nothing was written" in done.stderr, argv
    assert not (tmp_path / "out").exists()
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT count(*) FROM exports").fetchone() == (0,)


def test_the_service_logs_the_stall_and_the_recovery(
    tmp_path: Path, primary_and_standby: tuple[PgCluster, PgCluster]
) -> None:
    """A real `tablectl floor`: its writer's commit waits for the standby, and its log said nothing of it, for as
    long as the standby stayed down."""
    primary, standby = primary_and_standby
    dsn = fresh_database(primary)
    config = tmp_path / "floor.toml"
    config.write_text(floor_toml(dsn, "mqtt://127.0.0.1:1", "t", "floor-t"))
    (tmp_path / "logs").mkdir()
    service = FloorProcess(config, tmp_path / "logs")
    service.start()
    try:
        wait_for(lambda: "floor archive ready" in service.log(), 60, "the floor ready")
        standby.stop()
        wait_for(lambda: "archive stalled" in service.log(), 30, "the stall logged")
        stalled = [line for line in service.log().splitlines() if "archive stalled" in line]
        assert len(stalled) == 1 and '"level": "error"' in stalled[0], stalled
        assert "'standby1'" in stalled[0] and "systemd/postgresql.md" in stalled[0], stalled
        standby.start()
        wait_for(lambda: "synchronous standby streaming again" in service.log(), 30, "the recovery logged")
    finally:
        assert service.stop() == 0, service.log()
    assert service.log().count("archive stalled") == 1, service.log()
