"""A gap the table's own replay never fills, filled by asking: the table (run_table in this process on simulated
devices over real ptys, a real SQLite journal) publishes through a real mosquitto before the floor has ever
subscribed, so the floor's new session never gets those events; the floor (a real `tablectl floor` process on a real
PostgreSQL cluster) with its own key (role floor) sees the gap below the first event it hears, asks the table to
resend it once the grace period is over, and the events come back flagged replayed: the gap is marked filled, the
archive equals the journal row for row and no integrity alarm is raised."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import psycopg
import pytest

from controller.config.table import TableConfig
from controller.store.reader import JournalReader
from tests.commands.conftest import Daemon, make_table_config, seeded_key
from tests.conftest import Mosquitto
from tests.floor.conftest import KEYS, TABLECTL, FloorProcess, count, floor_toml, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.floor]

FLOOR_KEY = seeded_key("floor-archive", "floor", 9)


def _pem(path: Path) -> Path:
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    path.write_bytes(FLOOR_KEY.private.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    path.chmod(0o600)
    return path


def _archive(dsn: str, upto: int) -> list[dict[str, Any]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT event_id, boot_id, seq, ts_text, table_id, round_id, type, rule, payload FROM events"
            " WHERE seq <= %s ORDER BY seq",
            (upto,),
        ).fetchall()
    return [dict(zip(KEYS, r, strict=True)) for r in rows]


def _journal(path: Path, upto: int) -> list[dict[str, Any]]:
    with JournalReader(path) as r:
        return [{k: row[k] for k in KEYS} for row in r.rows() if row["seq"] <= upto]


async def test_the_floor_asks_for_a_gap_and_the_table_fills_it(
    mosquitto: Mosquitto, floor_dsn: str, tmp_path: Path, unique_id: str
) -> None:
    prefix = f"resend-{unique_id}"
    keys = {r: seeded_key(f"k-{r}", r, i) for i, r in enumerate(("floorperson", "supervisor", "technician"), 1)}
    data = make_table_config(unique_id, prefix, keys).model_dump()
    data["supervisors"].append(FLOOR_KEY.entry())  # the floor service's own key, role floor
    config = TableConfig.model_validate(data)
    journal = tmp_path / "journal.sqlite"
    floor_config = tmp_path / "floor.toml"
    extra = f'[resend]\nkey_file = "{_pem(tmp_path / "floor.pem")}"\nkey_id = "{FLOOR_KEY.key_id}"\ngrace_s = 0.5\n'
    floor_config.write_text(floor_toml(floor_dsn, mosquitto.url, prefix, f"floor-{unique_id}", extra))
    floor = FloorProcess(floor_config, tmp_path)
    async with Daemon(config, journal, mosquitto.url) as table:
        # Published with no floor session at the broker: lost for the floor, kept in the journal.
        before = await table.wait_for(lambda e: e.type == "round.completed", what="a round before the floor")
        try:
            floor.start()
            await asyncio.to_thread(wait_for, lambda: "subscribed to the tables" in floor.log(), 30, "the floor")
            # An event the floor hears live, whatever the table is doing now (it may have played on, or be blocked
            # awaiting a floorperson): a payload that is no command, journaled as `command.rejected` and published.
            # Everything before it reaches the floor only by resend.
            heard_from = table.events[-1].seq
            junk = ["mosquitto_pub", "-p", str(mosquitto.port), "-t", f"{prefix}/{unique_id}/cmd/x", "-m", "junk"]
            await asyncio.to_thread(subprocess.run, junk, check=True)
            after = await table.wait_for(lambda e: e.type == "command.rejected", heard_from, "an event the floor hears")

            def filled() -> bool:
                with psycopg.connect(floor_dsn) as conn:
                    row = conn.execute(
                        "SELECT count(*), count(filled_at) FROM seq_gaps WHERE table_id = %s", (unique_id,)
                    ).fetchone()
                    through = conn.execute(
                        "SELECT archived_through FROM floor_tables WHERE table_id = %s", (unique_id,)
                    ).fetchone()
                return (
                    row is not None
                    and row[0] >= 1
                    and row[0] == row[1]
                    and through is not None
                    and (through[0] >= after.seq)
                )

            await asyncio.to_thread(wait_for, filled, 60, f"the gap filled; floor log:\n{floor.log()}")
        finally:
            floor.stop()
    log = floor.log()
    assert "resend requested" in log and "resend reply" in log and '"outcome": "applied"' in log, log
    with psycopg.connect(floor_dsn) as conn:
        gap = conn.execute("SELECT first_seq, last_seq FROM seq_gaps WHERE table_id = %s", (unique_id,)).fetchone()
    assert gap is not None and gap[0] == 1 and gap[1] >= before.seq  # the floor's first event came after `before`
    # Row for row what the table journaled (event id, boot, seq, ts, type, rule, payload): the resend republished
    # the originals, and the archive's content check (digest) raised nothing.
    assert _archive(floor_dsn, after.seq) == _journal(journal, after.seq)
    assert count(floor_dsn, "SELECT count(*) FROM integrity_alarms") == 0
    with psycopg.connect(floor_dsn) as conn:
        replayed = conn.execute("SELECT count(*) FROM events WHERE seq <= %s AND replayed", (before.seq,)).fetchone()
    assert replayed is not None and replayed[0] == before.seq  # every event of the gap came flagged replayed
    # The table's journal says who asked, with the role, and the engine never saw it.
    asked = [
        r for r in _journal(journal, 10**9) if r["type"] == "command.accepted" and r["payload"]["verb"] == "resend"
    ]
    assert asked and asked[0]["payload"]["key_id"] == FLOOR_KEY.key_id and asked[0]["payload"]["role"] == "floor"
    assert asked[0]["payload"]["from_seq"] == 1
    gaps = [*TABLECTL, "floor", "--config", str(floor_config), "gaps"]
    done = await asyncio.to_thread(subprocess.run, gaps, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("0 open seq gap(s)"), done.stdout + done.stderr
