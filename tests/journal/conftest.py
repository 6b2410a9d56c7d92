"""Helpers for the journal, critical-state and recovery tests.

`CrashTable` drives the pure engine with perfect in-memory devices and a state-driven floor (dealer and players),
and can stop dead after any step, dropping the commands that step produced, as a kill -9 after the journal commit
and before the devices heard anything would. `restart()` then round-trips the state through the stored form
(controller.store.snapshot), as the service restores it, and sends `Recover`. The pty simulators and the daemon
are exercised end to end in tests/e2e/test_kill9_recovery.py; here the engine's recovery policy is under test.
"""

from __future__ import annotations

import asyncio
import copy
import json
import socket
import sqlite3
import subprocess
import sys
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar, Protocol

import pytest
from pydantic import TypeAdapter

from controller.config.game import GameRules
from controller.config.table import TableConfig
from controller.core.cards import STANDARD_DECK
from controller.core.events import DomainEvent
from controller.core.settlement import ChapterRules
from controller.engine.commands import (
    DeviceCommand,
    DispenseStack,
    LightSeat,
    LockSeat,
    LockTerminal,
    RemoveStub,
    ShowAccount,
    ShowLevels,
    ShowWin,
    Shuffle,
    UnlockSeat,
    UnlockTerminal,
)
from controller.engine.inputs import CountEntered, Input, OpenTable, Recover, ValidateJackpot
from controller.engine.round import RoundEngine
from controller.engine.spec import DealingMethod
from controller.engine.state import Phase, TableState
from controller.games.registry import SPECS, dealing_method
from controller.people import demo
from controller.store import snapshot
from drivers.interfaces import (
    ButtonPressed,
    CardDrawn,
    LockAcknowledged,
    ShuffleCompleted,
    StackDispensed,
    StubRemoved,
    WagerDetected,
)

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
CHAPTERS = sorted(SPECS)
T0 = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)


def example_rules(chapter: str, **override: object) -> GameRules:
    """The chapter's rules from its example config in configs/ (the [game] table), validated."""
    for path in sorted(CONFIGS.glob("*.toml")):
        game = tomllib.loads(path.read_text()).get("game", {})
        if game.get("chapter") == chapter and "progressive_paytable" not in game:
            return TypeAdapter(GameRules).validate_python({**game, **override})
    raise LookupError(f"no example config for chapter {chapter} in {CONFIGS}")


class Crashed(Exception):
    """Raised inside the driver when the step budget runs out: the process is gone."""


@dataclass
class CrashTable:
    Crashed: ClassVar[type[Exception]] = Crashed

    engine: RoundEngine[ChapterRules]
    state: TableState
    seats: tuple[int, ...] = (1, 2, 3)
    decks: list[list[str]] = field(default_factory=list)
    shoe: list[str] = field(default_factory=list)  # the cards physically in the shoe (they survive a crash)
    events: list[DomainEvent] = field(default_factory=list)
    commands: list[DeviceCommand] = field(default_factory=list)
    steps: int = 0
    crash_at: int | None = None  # stop dead after this many steps
    crash_if: Callable[[TableState], bool] | None = None  # or after the first step that leaves such a state
    placed: dict[int, int] = field(default_factory=dict)  # round -> wagers placed by the players so far
    boots: list[int] = field(default_factory=lambda: [0])  # index into events where each boot began
    check_steps: bool = True  # purity and codec round trip on every step (off where a test replays a prefix)

    @property
    def method(self) -> DealingMethod:
        return self.engine.method

    # -- the engine with perfect devices ---------------------------------------------------------------

    def feed(self, inp: Input) -> list[DomainEvent]:
        new: list[DomainEvent] = []
        queue: list[Input] = [inp]
        while queue:
            if self.crash_at is not None and self.steps >= self.crash_at:
                raise Crashed
            if self.crash_if is not None and self.steps and self.crash_if(self.state):
                raise Crashed
            before = copy.deepcopy(self.state) if self.check_steps else None
            state, effects = self.engine.step(self.state, queue.pop(0))
            if before is not None:
                assert self.state == before, "a step changed the state it was given"
                # What the service stores with the step must restore to exactly this state.
                assert snapshot.decode(snapshot.encode(state)) == state
            self.state = state
            self.steps += 1
            for eff in effects:
                if isinstance(eff, DomainEvent):
                    new.append(eff)
                    self.events.append(eff)
                else:
                    self.commands.append(eff)
                    queue.extend(self.answer(eff))
        return new

    def answer(self, c: DeviceCommand) -> list[Input]:
        match c:
            case Shuffle():
                self.shoe = self.decks.pop(0) if self.decks else list(STANDARD_DECK)
                order = tuple(self.shoe) if self.method == "hand" else ()
                return [ShuffleCompleted("shuffler", card_count=len(self.shoe), order=order)]
            case DispenseStack(cards=n):
                stack, self.shoe = self.shoe[:n], self.shoe[n:]
                return [StackDispensed("shoe", cards=tuple(stack))]
            case RemoveStub():
                stub, self.shoe = self.shoe, []
                return [StubRemoved("shoe", cards=tuple(stub))]
            case LockSeat(seat=seat) | UnlockSeat(seat=seat):
                return [LockAcknowledged(f"wager_station_{seat}", seat=seat, locked=isinstance(c, LockSeat))]
            case LockTerminal(seat=seat) | UnlockTerminal(seat=seat):
                return [LockAcknowledged(f"wager_terminal_{seat}", seat=seat, locked=isinstance(c, LockTerminal))]
            case ShowLevels() | ShowWin() | LightSeat() | ShowAccount():
                return []  # the sign, the seat lights and the terminals' displays answer nothing awaited
        raise AssertionError(f"unexpected command {c}")

    # -- the floor: the next thing the dealer or a player does, read from the state -----------------------

    def act(self) -> bool:
        """One action of the people at the table; False when they have nothing to do."""
        s, r = self.state, self.state.round
        if r is None:
            return False
        if s.phase is Phase.BETTING and not r.unlocks_pending:
            done = self.placed.get(r.number, 0)
            offers = self.engine.spec.offers(self.engine.rules)
            wagers = [(seat, o.spot, o.min_cents) for seat in self.seats for o in offers]
            if done < len(wagers):
                seat, spot, cents = wagers[done]
                self.placed[r.number] = done + 1
                self.feed(WagerDetected(f"wager_station_{seat}", seat=seat, spot=spot, amount_cents=cents))
            else:
                self.feed(ButtonPressed("dealer_panel", button="no_more_bets"))
            return True
        if s.phase is Phase.RECONCILING:
            self.feed(CountEntered("chips", r.chips_accepted))
        elif s.phase is Phase.JACKPOT and s.pending_hits:
            h = s.pending_hits[0]  # the floorperson validates (the signature is checked by the listener)
            self.feed(ValidateJackpot(h.seat, h.level, h.hit, "floor-test", "floorperson"))
        elif s.phase is Phase.DEALING and self.method == "manual_shoe":
            card, self.shoe = self.shoe[0], self.shoe[1:]
            self.feed(CardDrawn("shoe", card=card))
        elif s.phase is Phase.DEALT:
            self.feed(ButtonPressed("dealer_panel", button="dealt"))
        elif s.phase is Phase.STUB_COUNT:
            self.feed(CountEntered("stub", r.stub_expected))
        elif s.phase is Phase.DECISION and r.turn is not None:
            d = self.engine.decisions[r.decision]
            if d.kind == "ride_or_withdraw":
                self.feed(ButtonPressed("dealer_panel", button="let_it_ride"))
            else:
                allowed = list(self.engine.spec.allowed(self.engine.rules, d, r.seats[r.turn].wagers))
                self.feed(WagerDetected(f"wager_station_{r.turn}", seat=r.turn, spot=d.spot, amount_cents=allowed[0]))
        else:
            return False
        return True

    def crash_when(self, when: Callable[[TableState], bool], limit: int = 2000) -> None:
        """Play until the first step that leaves a state `when` accepts, and die right after it."""
        self.crash_if = when
        try:
            self.play_until(lambda s: False, limit)
        except Crashed:
            return
        raise AssertionError(f"no step left such a state (phase {self.state.phase})")

    def play_until(self, done: Callable[[TableState], bool], limit: int = 2000) -> None:
        for _ in range(limit):
            if done(self.state) or not self.act():
                return
        raise AssertionError(f"the table did not get there in {limit} actions (phase {self.state.phase})")

    # -- a crash and a restart ---------------------------------------------------------------------------

    def restart(self, stations_report: bool = True) -> list[DomainEvent]:
        """The process restarts: the state as stored, then Recover; the stations then report the chips on them."""
        self.crash_at = self.crash_if = None
        self.state = snapshot.decode(snapshot.encode(self.state))
        self.boots.append(len(self.events))
        out = self.feed(Recover())
        r = self.state.round
        if stations_report and r is not None:
            for n, st in sorted(r.seats.items()):
                for spot, cents in sorted(st.wagers.items()):
                    out += self.feed(WagerDetected(f"wager_station_{n}", seat=n, spot=spot, amount_cents=cents))
        return out


def crash_table(chapter: str, method: DealingMethod | None = None, **rules: object) -> CrashTable:
    r = example_rules(chapter, **({"dealing_method": method} if method else {}), **rules)
    engine = RoundEngine(SPECS[chapter], r, method or dealing_method(r))
    t = CrashTable(engine, TableState("t1"))
    t.feed(OpenTable())
    return t


class MakeCrashTable(Protocol):
    """The make_crash_table fixture: crash_table."""

    def __call__(self, chapter: str, method: DealingMethod | None = None, **rules: object) -> CrashTable: ...


class RulesOf(Protocol):
    """The rules_of fixture: example_rules."""

    def __call__(self, chapter: str, **override: object) -> GameRules: ...


@pytest.fixture
def make_crash_table() -> MakeCrashTable:
    return crash_table


@pytest.fixture
def rules_of() -> RulesOf:
    return example_rules


def types(events: Sequence[DomainEvent]) -> list[str]:
    return [e.type for e in events]


# -- the real daemon, for the restore, critical-state and rollback tests ------------------------------------------


@pytest.fixture
def no_broker() -> str:
    """A broker URL nobody listens on: the table plays and journals, its publisher retries in the background."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"mqtt://127.0.0.1:{s.getsockname()[1]}"


async def play(config: TableConfig, **kw: Any) -> int:
    """The demo table in this process; a table that waits for someone who is not simulated would hang the suite, so
    it fails instead."""
    return await asyncio.wait_for(demo.play(config, **kw), timeout=60)


class DemoProcess:
    """`tablectl demo` as the real process (its simulated devices and people die with it, as in a power loss of the
    table), on a journal and a copy of configs/demo.toml of its own (its table_id and MQTT prefix the test's)."""

    def __init__(self, tmp: Path, broker: str, table_id: str, prefix: str) -> None:
        self.journal = tmp / "table.sqlite"
        self.config = tmp / "table.toml"
        text = (CONFIGS / "demo.toml").read_text().replace('table_id = "demo-ms-1"', f'table_id = "{table_id}"', 1)
        self.config.write_text(text.replace('prefix = "tablectl"', f'prefix = "{prefix}"'))
        self.broker = broker
        self.logs = tmp / "logs"
        self.logs.mkdir(exist_ok=True)
        self.boots = 0

    def start(self, seed: int) -> subprocess.Popen[bytes]:
        self.boots += 1
        log = (self.logs / f"boot{self.boots}.log").open("wb")
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "controller.cli",
                "--log-json",
                "demo",
                "--pace",
                "0",
                "--seed",
                str(seed),
                "--journal",
                str(self.journal),
                "--quiet",
                "--broker",
                self.broker,
                "--config",
                str(self.config),
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
            stdin=subprocess.DEVNULL,
        )

    def log_tail(self) -> str:
        return (self.logs / f"boot{self.boots}.log").read_text(errors="replace")[-3000:]


def kill9(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()  # SIGKILL
    proc.wait()


@dataclass(frozen=True)
class Row:
    seq: int
    event_id: str
    type: str
    payload: dict[str, Any]


def journal_rows(path: Path, after: int = 0) -> list[Row]:
    """The journal's rows as a test reads them, straight from the file (read-only: the file is not changed)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        cur = db.execute("SELECT seq, event_id, type, payload FROM events WHERE seq > ? ORDER BY seq", (after,))
        return [Row(int(s), str(i), str(t), json.loads(p)) for s, i, t, p in cur]
    finally:
        db.close()


def stored_state(path: Path) -> TableState | None:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = db.execute("SELECT body FROM critical_state WHERE record = 'engine'").fetchone()
    finally:
        db.close()
    return None if row is None else snapshot.decode(bytes(row[0]))


def tamper(path: Path, *statements: str) -> None:
    """Change the file behind tablectl's back, as a disk fault or a person would: plain SQL, no journal code."""
    db = sqlite3.connect(path)
    for sql in statements:
        db.execute(sql)
    db.commit()
    db.close()
