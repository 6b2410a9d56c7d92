"""Critical state that cannot vanish (issue 12 item 2): what must exist is recorded in the journal's own transactions
(the manifest) and beside it (the anchor file), so a record, a copy, the tail or the whole file that disappears
raises the matching tilt at start, never a fresh start (docs/recovery.md, "What must exist").

The journals are real SQLite files written by the real daemon (`tablectl demo` killed with SIGKILL where a kill
matters, else the same daemon in this process on real pseudo-terminals), damaged or deleted on disk between runs
with plain SQL or file operations, then opened by the daemon again.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from controller.config.table import TableConfig, demo_config, load_config
from controller.engine.inputs import ClearTilt, OpenTable, Signed
from controller.engine.state import Phase
from controller.shell.restore import METERS_RECORD
from controller.shell.service import TableService
from controller.store import snapshot
from controller.store.anchor import sidecar_path
from controller.store.journal import Journal
from controller.store.reader import JournalReader
from tests.broker import Mosquitto, Received, Subscribe
from tests.journal.conftest import DemoProcess, Row, journal_rows, kill9, play, stored_state, tamper


def wager_after(seen: int) -> Callable[[list[Received]], bool]:
    return lambda messages: any(b'"wager.accepted"' in m.payload for m in messages[seen:])


def last_seq(path: Path) -> int:
    rows = journal_rows(path) if os.path.exists(path) and os.path.getsize(path) else []
    return rows[-1].seq if rows else 0


def types(rows: list[Row]) -> list[str]:
    return [r.type for r in rows]


def tilts(rows: list[Row]) -> dict[str, str]:
    """tilt -> reason of every critical_state.invalid among `rows`."""
    return {r.payload["tilt"]: r.payload["reason"] for r in rows if r.type == "critical_state.invalid"}


async def restart_blocked(config: TableConfig, path: Path, broker: str, seed: int = 7) -> list[Row]:
    """Start the table again on `path`; the simulated floor closes it once it blocks (nobody simulates a
    supervisor). Returns what that start journaled."""
    before = last_seq(path)
    assert await play(config, rounds=1, broker=broker, seed=seed, journal_path=path, close_when_stuck=True) == 0
    return journal_rows(path, before)


def test_a_deleted_engine_record_after_a_kill_mid_round_raises_a_tilt(
    mosquitto: Mosquitto, subscribe: Subscribe, unique_id: str, tmp_path: Path, no_broker: str
) -> None:
    """The fault campaign's case: kill -9 mid-round, the engine record deleted. Before: no tilt, the round's wagers
    neither settled nor voided, and play went on with the next round."""
    daemon = DemoProcess(tmp_path, mosquitto.url, unique_id, "cs")
    sub = subscribe(f"cs/{unique_id}/event")
    state = None
    for boot in range(8):
        seen = len(sub.messages)
        proc = daemon.start(seed=boot)
        try:
            # SIGKILL as soon as this boot has taken a wager: a round is in progress with wagers on the layout.
            sub.wait_until(wager_after(seen), timeout=30, what="a wager taken")
        finally:
            kill9(proc)
        state = stored_state(daemon.journal)
        if state is not None and state.round is not None and any(s.wagers for s in state.round.seats.values()):
            break
    assert state is not None and state.round is not None, "no kill landed mid-round in 8 boots"
    wagers = sum(len(s.wagers) for s in state.round.seats.values())
    round_id = state.round.round_id
    tamper(daemon.journal, "DELETE FROM critical_state WHERE record = 'engine'")

    # Restarted in this process (the same daemon; the broker is only the kill's clock, not needed from here).
    later = asyncio.run(restart_blocked(load_config(daemon.config), daemon.journal, no_broker))
    found = tilts(later)
    assert "the engine record is missing" in found["critical_state"], found
    assert f"{round_id}, has {wagers} wager(s) accepted and was neither completed nor voided" in found["critical_state"]
    assert "betting.opened" not in types(later) and "table.recovered" not in types(later)  # play does not go on
    blocked = next(r for r in later if r.type == "table.blocked")
    assert "critical_state" in blocked.payload["reasons"]
    # The next start does not forget it: the tilt is stored with the state.
    again = asyncio.run(restart_blocked(load_config(daemon.config), daemon.journal, no_broker, seed=8))
    assert "table.blocked" in types(again) and "betting.opened" not in types(again)


@pytest.mark.parametrize("loss", ["zero_bytes", "deleted"])
async def test_a_zero_byte_journal_that_was_used_is_not_a_new_table(tmp_path: Path, no_broker: str, loss: str) -> None:
    """Before: taken for a new table, seq restarted at 1 and the progressive meters were reseeded."""
    path = tmp_path / "table.sqlite"
    config = demo_config()
    assert await play(config, rounds=2, broker=no_broker, seed=1, journal_path=path) == 2
    last = journal_rows(path)[-1].seq
    if loss == "zero_bytes":
        path.write_bytes(b"")  # the file is still there, and empty (a cleanly closed journal has no -wal)
    else:
        path.unlink()  # gone altogether; the anchor file beside it stays

    later = await restart_blocked(config, path, no_broker)
    assert later[0].seq == last + 1, "a seq the floor may hold is never used again"
    found = tilts(later)
    assert f"says seq {last}" in found["tilt:rollback"] and "ends at seq 0" in found["tilt:rollback"]
    assert "not stored at all" in found["tilt:meters"]
    assert "meter.seeded" not in types(later)  # the meters' value is not replaced by fresh seeds
    locked = next(r for r in later if r.type == "progressive.locked_out")
    assert "meters" in locked.payload["reasons"]
    assert next(r for r in later if r.type == "critical_state.invalid").payload["rounds_played"] == 2
    with JournalReader(path) as reader:
        report = reader.verify()
    assert [(b.what, b.seq) for b in report.breaks] == [("rolled back", 1)]
    assert f"seq 1 to {last} were committed but are not in this file" in report.breaks[0].detail

    # The operator's way out: a supervisor clears each tilt with a signed command and a reason; the meters that
    # were gone are seeded on that word, journaled, and the next round is numbered after the last one known.
    journal = Journal(path, config.table_id, "boot-clear")
    service = TableService(config, {}, journal)  # no devices: only the journal and the stored state are under test
    assert service.state.blocks.keys() >= {"tilt:rollback", "tilt:meters"}
    opened = await service.apply(OpenTable())
    assert service.state.phase is Phase.BLOCKED and "meter.seeded" not in [e.type for e in opened]
    out = []
    for tilt in ("tilt:rollback", "tilt:meters"):
        clear = ClearTilt(tilt, "floor-1", "supervisor", "journal lost; meters reseeded per the casino's procedure")
        out += await service.apply(Signed(clear, f"cmd-{tilt}", "clear_tilt", "floor-1", "supervisor"))
    assert [e.type for e in out].count("tilt.cleared") == 2 and "meter.seeded" in [e.type for e in out]
    assert service.state.progressive_lockout == {} and service.state.meters is not None
    assert service.state.rounds_played == 2
    journal.close()


async def test_both_meter_copies_deleted_raise_tilt_meters(tmp_path: Path, no_broker: str) -> None:
    """Before: no `tilt:meters`; the table played on as if the meters' record had never been stored."""
    path = tmp_path / "table.sqlite"
    config = demo_config()
    assert await play(config, rounds=1, broker=no_broker, seed=3, journal_path=path) == 1
    state = stored_state(path)
    assert state is not None and state.meters is not None
    tamper(path, f"DELETE FROM critical_state WHERE record = '{METERS_RECORD}'")

    later = await restart_blocked(config, path, no_broker)
    found = tilts(later)
    assert "the meters record is missing: the manifest says 2 copies were written" in found["tilt:meters"], found
    assert "critical_state" not in found  # the engine state is sound: only the meters' tilt
    assert "meter.seeded" not in types(later)
    after = stored_state(path)
    assert after is not None and after.meters == state.meters  # kept from the engine state, never reseeded
    assert "meters" in after.progressive_lockout


async def test_an_older_sound_copy_put_back_is_not_restored(tmp_path: Path, no_broker: str) -> None:
    """A copy that passes its own checksum but is not the one last written (an old file's row copied back): before,
    the engine state of an earlier step was restored as if it were the last."""
    path = tmp_path / "table.sqlite"
    config = demo_config()
    assert await play(config, rounds=1, broker=no_broker, seed=4, journal_path=path) == 1
    old = stored_state(path)
    assert old is not None and old.phase is Phase.CLOSED
    older = snapshot.encode(replace(old, rounds_played=0))
    tamper(
        path,
        f"UPDATE critical_state SET body = x'{older.hex()}', sha256 = '{hashlib.sha256(older).hexdigest()}' "
        "WHERE record = 'engine'",
    )
    later = await restart_blocked(config, path, no_broker)
    found = tilts(later)
    assert (
        "the engine record: copy 0" in found["critical_state"] and "not the one last written" in found["critical_state"]
    )


async def test_a_tail_removed_without_a_trace_inside_the_file_is_found_by_the_anchor(
    tmp_path: Path, no_broker: str
) -> None:
    """Rows removed from the end with the chain head and the manifest rewritten to match (nothing inside the file
    tells): the anchor file beside it does. Before: seqs were used again for other events."""
    path = tmp_path / "table.sqlite"
    config = demo_config()
    assert await play(config, rounds=1, broker=no_broker, seed=5, journal_path=path) == 1
    rows = journal_rows(path)
    last, cut = rows[-1].seq, rows[-1].seq - 10
    tamper(
        path,
        f"DELETE FROM events WHERE seq > {cut}",
        f"UPDATE chain_head SET seq = {cut}, hash = (SELECT hash FROM events WHERE seq = {cut})",
        f"UPDATE manifest SET seq = {cut}, hash = (SELECT hash FROM events WHERE seq = {cut})",
    )
    with JournalReader(path) as reader:
        report = reader.verify()
    assert [(b.what, b.seq) for b in report.breaks] == [("rolled back", cut + 1)], report.breaks
    later = await restart_blocked(config, path, no_broker)
    assert later[0].seq == last + 1
    found = tilts(later)
    assert f"the anchor file {sidecar_path(path)} says seq {last}" in found["tilt:rollback"]


async def test_a_deleted_manifest_raises_the_critical_state_tilt(tmp_path: Path, no_broker: str) -> None:
    path = tmp_path / "table.sqlite"
    config = demo_config()
    assert await play(config, rounds=1, broker=no_broker, seed=6, journal_path=path) == 1
    tamper(path, "DELETE FROM manifest")
    with JournalReader(path) as reader:
        assert [b.what for b in reader.verify().breaks] == ["manifest"]
    later = await restart_blocked(config, path, no_broker)
    assert "the journal's manifest is missing" in tilts(later)["critical_state"]
    with JournalReader(path) as reader:  # written again with the next transaction, counting on from the anchor
        assert reader.verify().ok
