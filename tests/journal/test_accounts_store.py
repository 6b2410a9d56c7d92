"""The game accounts as critical state (issue 14 item 1): the ledger stored in two copies with every step that moves
money, in that step's transaction; validated at start, a damaged, missing or disagreeing copy raises `tilt:accounts`
(no new round) and the balances are never reset. A restart after the lock-out voids the round and gives the Five
Card Hand Bonus Wagers back to the accounts once. Real SQLite files, the real service; no devices."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from controller.accounts import codec
from controller.accounts.ledger import Ledger
from controller.config.table import TableConfig, load_config
from controller.engine.inputs import OpenTable, Tick
from controller.shell.restore import ACCOUNTS_RECORD
from controller.shell.service import TableService
from controller.store.journal import Journal
from drivers.interfaces import (
    AccountRequested,
    ButtonPressed,
    DealerConfirmed,
    LockAcknowledged,
    ShuffleCompleted,
    WagerDetected,
)

T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
CONFIG = Path(__file__).resolve().parents[2] / "configs" / "mississippi-stud-five-card-hand-bonus.toml"


def config() -> TableConfig:
    return load_config(CONFIG)


def clock() -> Callable[[], datetime]:
    ticks = iter(T0 + timedelta(seconds=i) for i in range(100_000))
    return lambda: next(ticks)


async def locked_round(path: Path) -> TableService:
    """Two players buy in, wager the Five Card Hand Bonus and the table locks out: the ledger is stored."""
    cfg = config()
    service = TableService(cfg, {}, Journal(path, cfg.table_id, "boot-1"), clock=clock())
    await service.apply(Tick(T0))
    await service.apply(OpenTable())
    await service.apply(ShuffleCompleted("shuffler", card_count=52))
    for seat in range(1, 7):
        await service.apply(LockAcknowledged(f"wager_station_{seat}", seat=seat, locked=False))
    for seat in (1, 2):
        await service.apply(AccountRequested(f"wager_terminal_{seat}", seat, "buy_in", 2_500, "cash"))
        await service.apply(DealerConfirmed(f"wager_terminal_{seat}", seat, "buy_in"))
        await service.apply(WagerDetected(f"wager_station_{seat}", seat=seat, spot="ante", amount_cents=500))
        await service.apply(
            WagerDetected(f"wager_terminal_{seat}", seat=seat, spot="five_card_hand_bonus", amount_cents=100)
        )
    await service.apply(ButtonPressed("dealer_panel", button="no_more_bets"))
    for kind in ("wager_station", "wager_terminal"):
        for seat in range(1, 7):
            await service.apply(LockAcknowledged(f"{kind}_{seat}", seat=seat, locked=True))
    return service


async def restart(path: Path) -> tuple[TableService, list[str]]:
    cfg = config()
    journal = Journal(path, cfg.table_id, "boot-2")
    before = journal.last_seq
    service = TableService(cfg, {}, journal, clock=clock())
    for inp in service._first:  # what run() steps first: the recovery, and any tilt raised at start
        await service.apply(inp)
    db = sqlite3.connect(path)
    types = [t for (t,) in db.execute("SELECT type FROM events WHERE seq > ? ORDER BY seq", (before,))]
    db.close()
    return service, types


async def test_stored_with_every_movement_and_a_restart_returns_the_wagers_once(tmp_path: Path) -> None:
    path = tmp_path / "j.sqlite"
    first = await locked_round(path)
    ledger = first.state.accounts
    assert (ledger.balance(1), ledger.balance(2), ledger.wagered) == (2_400, 2_400, 200)
    copies = first.journal.load(ACCOUNTS_RECORD)
    assert [c.copy for c in copies] == [0, 1] and copies[0].body == copies[1].body
    assert codec.load_copies(copies[0].body, copies[1].body).ledger == ledger
    first.journal.close()
    again, types = await restart(path)
    assert "critical_state.invalid" not in types
    # Killed after the lock-out, before any card (655a.13): void, each wager back to its account, once.
    assert "round.voided" in types and types.count("account.returned") == 2
    after = again.state.accounts
    assert (after.balance(1), after.balance(2), after.returned) == (2_500, 2_500, 200)
    assert after.balance_problem() is None
    stored = again.journal.load(ACCOUNTS_RECORD)
    assert codec.load_copies(stored[0].body, stored[1].body).ledger == after


@pytest.mark.parametrize("damage", ["flip_a_byte", "older_copy", "both_gone"])
async def test_a_damaged_copy_raises_a_tilt_and_never_resets(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "j.sqlite"
    first = await locked_round(path)
    ledger = first.state.accounts
    first.journal.close()
    db = sqlite3.connect(path)
    (body,) = db.execute("SELECT body FROM critical_state WHERE record = 'accounts' AND copy = 1").fetchone()
    if damage == "flip_a_byte":
        body = bytes(body)
        i = body.index(b'"wagered":') + 10
        db.execute(
            "UPDATE critical_state SET body = ? WHERE record = 'accounts' AND copy = 1",
            (body[:i] + bytes([body[i] ^ 1]) + body[i + 1 :],),
        )
    elif damage == "older_copy":  # sound, checksum and all, but not what the table holds (an old file put back)
        old = codec.encode(Ledger(balances={1: 2_500}, bought_in=2_500, seq=1), 1)
        db.execute(
            "UPDATE critical_state SET body = ?, sha256 = ? WHERE record = 'accounts' AND copy = 1",
            (old, hashlib.sha256(old).hexdigest()),
        )
    else:
        db.execute("DELETE FROM critical_state WHERE record = 'accounts'")
    db.commit()
    db.close()
    service, types = await restart(path)
    assert "critical_state.invalid" in types and "tilt:accounts" in service.state.blocks
    # Never reset: the engine state's ledger, journaled with the events, is kept (then the void gives back).
    assert service.state.accounts.bought_in == ledger.bought_in == 5_000
    assert service.state.accounts.balance_problem() is None
