"""A database user whose password the floor gets wrong, on a real cluster: a scram-sha-256 rule for it alone, its
password 'right', the floor's password_file saying 'wrong'. For the tests of what the floor's verbs and its service
say when PostgreSQL refuses the password (tests/floor/test_operator_day.py, test_service_password.py)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import psycopg

from floor.pgcluster import PgCluster


@dataclass(frozen=True)
class WrongPassword:
    user: str
    dsn: str  # the floor's database as that user
    secret: Path  # the password_file, 'wrong' until a test writes 'right'

    def database_section(self, toml: str) -> str:
        """A floor config's text with this password_file in its [database] section."""
        return toml.replace("[database]\n", f'[database]\npassword_file = "{self.secret}"\n')


def wrong_password(pg_cluster: PgCluster, floor_dsn: str, tmp_path: Path) -> WrongPassword:
    user = "pw_" + uuid.uuid4().hex[:8]
    hba = pg_cluster.data / "pg_hba.conf"
    hba.write_text(f"host all {user} 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
    with psycopg.connect(pg_cluster.dsn(), autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {user} LOGIN PASSWORD 'right'".encode())
        conn.execute("SELECT pg_reload_conf()")
    secret = tmp_path / "floor-db.password"
    secret.write_text("wrong\n")
    return WrongPassword(user, floor_dsn.replace("user=tablectl", f"user={user}"), secret)
