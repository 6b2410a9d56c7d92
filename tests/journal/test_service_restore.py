"""The service stores the engine's state with each step and restores it at start: real SQLite files, and the demo
table on real pseudo-terminals for the starts and stops (no broker: a port nobody listens on)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from controller.config.table import TableConfig, demo_config
from controller.engine.inputs import OpenTable, Tick
from controller.engine.state import Phase
from controller.shell.service import TableService
from controller.store import snapshot
from controller.store.journal import Journal
from drivers.interfaces import LockAcknowledged, ShuffleCompleted
from tests.journal.conftest import play

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def types(path: Path, after: int = 0) -> list[str]:
    db = sqlite3.connect(path)
    out = [t for (t,) in db.execute("SELECT type FROM events WHERE seq > ? ORDER BY seq", (after,))]
    db.close()
    return out


def last_seq(path: Path) -> int:
    db = sqlite3.connect(path)
    n = int(db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0])
    db.close()
    return n


async def test_a_step_that_changes_the_state_without_an_event_is_stored(tmp_path: Path) -> None:
    ticks = iter(T0 + timedelta(seconds=i) for i in range(1000))
    journal = Journal(tmp_path / "j.sqlite", "demo-ms-1", "boot")
    # No devices: the commands go nowhere (each becomes a queued fault this test never steps); only the
    # journal and the stored state are under test.
    service = TableService(demo_config(), {}, journal, clock=lambda: next(ticks))
    await service.apply(Tick(T0))
    await service.apply(OpenTable())
    await service.apply(ShuffleCompleted("shuffler", card_count=52))
    assert service.state.phase is Phase.BETTING
    seq = journal.last_seq
    [stored] = journal.load(snapshot.RECORD)
    assert await service.apply(LockAcknowledged("wager_station_1", seat=1, locked=False)) == []
    [after] = journal.load(snapshot.RECORD)
    assert journal.last_seq == seq  # no event...
    assert after.updated_at != stored.updated_at  # ...but the state was stored
    restored = snapshot.decode(after.body)
    assert restored == service.state
    assert restored.round is not None and restored.round.unlocks_pending == {2, 3, 4, 5, 6}
    # A step that changes nothing (a repeated Tick) writes nothing.
    await service.apply(Tick(T0))
    assert journal.load(snapshot.RECORD)[0].updated_at == after.updated_at
    journal.close()


async def test_a_clean_close_restores_and_numbering_continues(tmp_path: Path, no_broker: str) -> None:
    path = tmp_path / "j.sqlite"
    config = demo_config()
    assert await play(config, rounds=2, broker=no_broker, seed=1, journal_path=path) == 2
    first = last_seq(path)
    with Journal(path, config.table_id, "peek") as j:
        stored = snapshot.decode(j.load(snapshot.RECORD)[0].body)
    assert (stored.phase, stored.rounds_played, stored.decks["A"].rounds) == (Phase.CLOSED, 2, 2)
    assert await play(config, rounds=1, broker=no_broker, seed=2, journal_path=path) == 1
    db = sqlite3.connect(path)
    opened = [
        int(n)
        for (n,) in db.execute(
            "SELECT json_extract(payload, '$.round_no') FROM events WHERE type = 'betting.opened' ORDER BY seq"
        )
    ]
    db.close()
    assert opened == [1, 2, 3]
    later = types(path, first)
    assert "table.recovered" not in later and later.count("table.opened") == 1  # a closed table just opens
    with Journal(path, config.table_id, "peek") as j:
        assert snapshot.decode(j.load(snapshot.RECORD)[0].body).decks["A"].rounds == 3  # the deck's life goes on
        assert j.verify().ok


async def test_a_corrupt_state_starts_the_table_blocked_and_stays_so(tmp_path: Path, no_broker: str) -> None:
    path = tmp_path / "j.sqlite"
    config: TableConfig = demo_config()
    assert await play(config, rounds=1, broker=no_broker, seed=1, journal_path=path) == 1
    db = sqlite3.connect(path)
    body = bytearray(db.execute("SELECT body FROM critical_state WHERE record = 'engine'").fetchone()[0])
    body[len(body) // 2] ^= 0x01  # one bit flipped on the disk
    db.execute("UPDATE critical_state SET body = ? WHERE record = 'engine'", (bytes(body),))
    db.commit()
    db.close()
    seq = last_seq(path)

    # Nobody simulates a supervisor: the floor closes the table once it blocks.
    assert await play(config, rounds=1, broker=no_broker, seed=2, journal_path=path, close_when_stuck=True) == 0
    with Journal(path, config.table_id, "peek") as j:
        later = j.events(after_seq=seq)
        [tilt] = [e for e in later if e.type == "critical_state.invalid"]
        assert tilt.payload["tilt"] == "critical_state" and "fails its sha256 check" in tilt.payload["reason"]
        blocked = next(e for e in later if e.type == "table.blocked")
        assert list(blocked.payload["reasons"]) == ["critical_state"]
        assert "betting.opened" not in [e.type for e in later]
        assert j.load("engine.rejected")[0].body == bytes(body)  # kept for the investigation
        assert j.verify().ok
    seq = last_seq(path)
    # Restarted again: still blocked; the tilt was stored, it is not forgotten by a restart.
    assert await play(config, rounds=1, broker=no_broker, seed=3, journal_path=path, close_when_stuck=True) == 0
    later_types = types(path, seq)
    assert (
        "table.blocked" in later_types
        and "betting.opened" not in later_types
        and "critical_state.invalid" not in later_types
    )
