"""The progressive meters as critical state (issue 7 item 6): stored in two copies with every step that changes
them, validated at start; a damaged or disagreeing copy raises the `tilt:meters` tilt and locks out progressive
wagering, never a silent reset. Real SQLite files, the real service; no devices (its commands go nowhere)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from controller.config.table import TableConfig, load_config
from controller.engine.inputs import ClearTilt, OpenTable, Signed, Tick
from controller.progressive import codec
from controller.shell.restore import METERS_RECORD
from controller.shell.service import TableService
from controller.store.journal import Journal
from drivers.interfaces import LockAcknowledged, ShuffleCompleted, WagerDetected

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
CONFIG = Path(__file__).resolve().parents[2] / "configs" / "mississippi-stud-progressive.toml"


def config() -> TableConfig:
    return load_config(CONFIG)


def clock() -> Callable[[], datetime]:
    ticks = iter(T0 + timedelta(seconds=i) for i in range(100_000))
    return lambda: next(ticks)


async def a_round_with_contributions(path: Path) -> TableService:
    """Open, shuffle, take two progressive wagers and lock: the meters change and are stored."""
    cfg = config()
    service = TableService(cfg, {}, Journal(path, cfg.table_id, "boot-1"), clock=clock())
    await service.apply(Tick(T0))
    await service.apply(OpenTable())
    await service.apply(ShuffleCompleted("shuffler", card_count=52))
    for seat in range(1, 7):
        await service.apply(LockAcknowledged(f"wager_station_{seat}", seat=seat, locked=False))
    for seat in (1, 2):
        await service.apply(WagerDetected(f"wager_station_{seat}", seat=seat, spot="ante", amount_cents=500))
        await service.apply(WagerDetected(f"wager_station_{seat}", seat=seat, spot="progressive", amount_cents=100))
    from drivers.interfaces import ButtonPressed

    await service.apply(ButtonPressed("dealer_panel", button="no_more_bets"))
    for seat in range(1, 7):
        await service.apply(LockAcknowledged(f"wager_station_{seat}", seat=seat, locked=True))
    return service


async def restart(path: Path, meters: object) -> tuple[TableService, list[str]]:
    cfg = config()
    journal = Journal(path, cfg.table_id, "boot-2")
    before = journal.last_seq
    service = TableService(cfg, {}, journal, clock=clock())
    assert service.state.meters == meters, "restored as stored: never reset, nothing lost or counted twice"
    for inp in service._first:  # what run() steps first: the recovery, and any tilt raised at start
        await service.apply(inp)
    db = sqlite3.connect(path)
    types = [t for (t,) in db.execute("SELECT type FROM events WHERE seq > ? ORDER BY seq", (before,))]
    db.close()
    return service, types


async def test_both_copies_are_stored_and_restored_with_nothing_lost(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    first = await a_round_with_contributions(path)
    meters = first.state.meters
    assert meters is not None and meters.level("major").contributed_micro == 2 * 100 * 70_000
    copies = first.journal.load(METERS_RECORD)
    assert [c.copy for c in copies] == [0, 1] and copies[0].body == copies[1].body
    assert codec.load_copies(copies[0].body, copies[1].body).meters == meters
    first.journal.close()
    again, types = await restart(path, meters)
    assert "critical_state.invalid" not in types and "meter.seeded" not in types
    # The crash came after the lock-out, before any card: the round is void (655a.13) and the meters take back
    # exactly the two wagers' contributions, once.
    assert "round.voided" in types and types.count("progressive.contributions_reversed") == 1
    major = again.state.meters.level("major") if again.state.meters else None
    assert major is not None and (major.display_cents, major.contributed_micro, major.reversed_count) == (100_000, 0, 2)


@pytest.mark.parametrize("damage", ["flip_a_byte", "other_meters"])
async def test_a_damaged_copy_raises_a_tilt_and_never_resets(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "j.sqlite"
    first = await a_round_with_contributions(path)
    meters = first.state.meters
    first.journal.close()
    db = sqlite3.connect(path)
    (body,) = db.execute("SELECT body FROM critical_state WHERE record = 'meters' AND copy = 1").fetchone()
    if damage == "flip_a_byte":  # a bad sector: copy b no longer matches its checksum
        body = bytes(body)
        i = body.index(b'"display_micro":') + 17
        db.execute(
            "UPDATE critical_state SET body = ? WHERE record = 'meters' AND copy = 1",
            (body[:i] + bytes([body[i] ^ 1]) + body[i + 1 :],),
        )
    else:  # a sound copy, checksum and all, that is not what the table holds (an old file copied back)
        db.execute(
            "UPDATE critical_state SET body = (SELECT body FROM critical_state WHERE record = 'meters' "
            "AND copy = 0), sha256 = (SELECT sha256 FROM critical_state WHERE record = 'meters' AND copy = 0) "
            "WHERE record = 'meters' AND copy = 1"
        )
        db.execute(
            "UPDATE critical_state SET body = ?, sha256 = ? WHERE record = 'meters' AND copy = 0",
            *[(b, __import__("hashlib").sha256(b).hexdigest()) for b in [_older(body)]],
        )
    db.commit()
    db.close()
    service, types = await restart(path, meters)
    assert "critical_state.invalid" in types
    assert "tilt:meters" in service.state.blocks
    assert "meters" in service.state.progressive_lockout
    assert "meter.seeded" not in types
    # A supervisor clears the tilt with a signed command: progressive play reopens.
    out = await service.apply(
        Signed(
            ClearTilt("tilt:meters", "sup-1", "supervisor", "copies checked against the journal"),
            "cmd-1",
            "clear_tilt",
            "sup-1",
            "supervisor",
        )
    )
    assert [e.type for e in out][-1] == "progressive.unlocked"
    assert service.state.progressive_lockout == {}


def _older(body: bytes) -> bytes:
    """A sound copy of other meters: the same store one save earlier with the major meter a cent lower."""
    stored = codec.decode(bytes(body))
    m = stored.meters
    from dataclasses import replace

    major = m.levels["major"]
    lowered = replace(
        major, display_micro=major.display_micro - 1_000_000, contributed_micro=major.contributed_micro - 1_000_000
    )
    return codec.encode(replace(m, levels={**m.levels, "major": lowered}), stored.generation + 5)
