"""A dsn that sets no connect_timeout gets floor.db's bound: a command pointed at a database host gone dark (one that
takes the connection and never answers) ends by itself with libpq's timeout in its message, where libpq would wait
for ever saying nothing; a dsn or PGCONNECT_TIMEOUT that sets one keeps its own."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest
from psycopg.conninfo import conninfo_to_dict

from floor.config import DatabaseSection
from floor.db import CONNECT_TIMEOUT_S, conninfo, where
from tests.floor.conftest import TABLECTL

pytestmark = pytest.mark.floor


def test_a_dsn_without_connect_timeout_is_bounded_and_one_with_it_keeps_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PGCONNECT_TIMEOUT", raising=False)
    bare = DatabaseSection(dsn="host=db1 dbname=floor")
    assert conninfo_to_dict(conninfo(bare))["connect_timeout"] == str(CONNECT_TIMEOUT_S)
    assert f"connect_timeout={CONNECT_TIMEOUT_S}" in where(bare.dsn)  # the log's dsn says the bound it was given
    own = DatabaseSection(dsn="postgresql://db1/floor?connect_timeout=3")
    assert conninfo_to_dict(conninfo(own))["connect_timeout"] == "3"
    monkeypatch.setenv("PGCONNECT_TIMEOUT", "7")  # libpq reads it: not overridden by the dsn
    assert "connect_timeout" not in conninfo_to_dict(conninfo(bare))


def test_commands_against_a_database_host_gone_dark_end_with_the_timeout_said(tmp_path: Path) -> None:
    """Both commands wait on the same dark port at once; on the old code neither ended (the 60 s timeout here)."""
    env = {k: v for k, v in os.environ.items() if k != "PGCONNECT_TIMEOUT"}
    with socket.socket() as dark:
        dark.bind(("127.0.0.1", 0))
        dark.listen()  # the kernel takes each connection; no one ever answers on it
        config = tmp_path / "floor.toml"
        config.write_text(f'[database]\ndsn = "host=127.0.0.1 port={dark.getsockname()[1]} dbname=floor"\n')
        argvs = (
            ["floor", "--config", str(config), "check-config"],
            ["report", "--config", str(config), "--day", "2026-11-20"],
        )
        running = [
            subprocess.Popen([*TABLECTL, *a], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            for a in argvs
        ]
        try:
            check, report = (p.communicate(timeout=60) for p in running)
        finally:
            for p in running:
                p.kill()
    assert running[0].returncode == 1, check
    assert "database: cannot connect: connection timeout expired" in check[0], check
    assert running[1].returncode == 2, report
    assert "cannot reach the archive (connection timeout expired" in report[1], report
