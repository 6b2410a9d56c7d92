"""kill -9 at any instant: the real daemon (`tablectl demo`, its simulated devices and players in the same process,
so they die with it as in a power loss of the table) is killed at seeded instants and restarted on the same journal
until at least 200 rounds have been started (40 in the suite's bounded run; `pytest -m campaign` for the 200). Then,
from the journal and from an independent paho subscriber that stayed connected throughout (QoS 1): seq gap-free and
the hash chain intact; every round's wagers settled exactly once or returned exactly once by a void, none taken
twice; the money reconciles; every journaled event reached the subscriber (duplicates allowed, gaps not). Each kill's
phase is read from the critical state it left behind.

Most kills come after a seeded random delay from the boot's first event (a few from its start, to land in the
start-up itself), so a loaded machine's slow start-up does not eat the boot's play. Until every phase has been hit,
half of them aim at a phase not hit yet: that boot's simulated device for the phase answers slowly (a sim script's
`slow_reply`, below the driver's retry budget, so nothing fails), and the kill follows the event that enters the
phase, seen on the subscriber, by a seeded jitter of a few milliseconds. The delays are the scenario's kill
instants, not synchronisation: every wait for an outcome is on a condition.
The progressive table (Mississippi Stud, 655a paytable C: mega, major and minor meters) is killed the same way and
also in phase JACKPOT: that boot deals a scripted deck giving the first seat four of a kind (the minor meter, 100 %,
655a.12(c)(1)) and its progressive sign answers slowly, so the settled round waits in JACKPOT for the floorperson's
validation (655a.11(i)(1)(iii)) while the kill lands. Besides the rest, the meters must replay from the journal's
`meter.*` events to what both stored copies and the retained progressive/<level> topics hold; every progressive
wager that reached the lock-out contributed once (655a.8(b)); every void by recovery reversed exactly its round's
contributions; every hit was validated and paid once, across the restart; and each level balances to the micro-cent.
The Let It Ride table (643a) with both progressives, each wager feeding its own meter (643a.12(d)(3), (e)(3)), is
killed the same ways, in DECISION just after a bet was taken back (643a.11(b), (d)), and in JACKPOT on a scripted
mini-royal in spades or straight flush; besides the rest, a bet taken back is returned whole exactly once and only
it, each decision is answered once across restarts, the envy bonuses follow the settled hands (643a.12(d)(5), (e)(5)),
and both meters are hit, each hit citing the validation and payment of its own wager ((iii) or (iv) of 643a.11(f)(3)).
"""

from __future__ import annotations

import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from controller.accounts import codec as accounts_codec
from controller.config.table import load_config
from controller.core.cards import STANDARD_DECK
from controller.core.events import DomainEvent
from controller.games.registry import table_progressives
from controller.mqtt.contract import Topics
from controller.progressive import codec as meter_codec
from controller.progressive.model import MICRO, Meters, replay
from controller.progressive.parameters import TableProgressives
from controller.shell.restore import ACCOUNTS_RECORD, METERS_RECORD
from controller.store import snapshot
from controller.store.reader import JournalReader
from tests.broker import Mosquitto, Received, Subscribe, Subscriber
from tests.e2e.retained_meters import assert_retained_meters

pytestmark = pytest.mark.e2e

SEED = 655_013
# Rounds started before the last boot: the full campaign (`pytest -m campaign`) and the suite's bounded run, which
# still hits every phase (the loop's other condition), voids by recovery and replays backlogs; CI's 15 minutes.
ROUNDS = 200
BOUNDED_ROUNDS = 40
CONFIGS = Path(__file__).resolve().parents[2] / "configs"
# The phases a demo round passes through (automated shoe, counting shuffler: no chip or stub counts) and the event
# the subscriber sees as the table enters each.
ENTERED_BY = {
    "shuffling": "shuffle.started",
    "betting": "betting.opened",
    "locking": "no_more_bets",
    "dealing": "lockout.confirmed",
    "decision": "decision.requested",
}
# The device whose slow answers hold a phase open long enough to be aimed at (none: the phase waits for people).
HELD_BY = {"shuffling": "shuffler", "locking": "wager_station_6", "dealing": "shoe"}
SLOW_MS = 60  # under the reference driver's ACK timeout (100 ms): no retransmission, no fault
# The wagers each settled by an event of their own (655a; 643a.11(f)(3)(i)-(iv)), and the envy bonuses, paid to a
# Progressive Payout Wager with no stake of their own: "envy_bonus" to 655a's "progressive" (655a.12(c)(5)),
# "three_card_envy_bonus" to "three_card_progressive" (643a.12(d)(5)), "five_card_..." likewise (643a.12(e)(5)).
SETTLED = re.compile(
    r"^(three_card_bonus|six_card_bonus|progressive|five_card_bonus|three_card_progressive"
    r"|five_card_progressive|five_card_hand_bonus)\.settled$"
)
# The Magic Card and the Lucky Bonus (655a.12(e)(3)): paid to a Five Card Hand Bonus Wager, no stake of their own.
BONUSES = re.compile(r"^(magic_card_bonus|lucky_bonus)\.settled$")
FCHB = "five_card_hand_bonus"
TO_ACCOUNT = (FCHB, "magic_card_bonus", "lucky_bonus")
ENVY = re.compile(r"^(\w*?)envy_bonus\.settled$")
BUDGET_SECONDS = 240  # a bound on failure only; the test normally ends far sooner
# Meter hits for the common layouts (655a.10(b), (c): two cards to each player, then the Six Card Bonus cards if any
# seat wagered it, then the community). Community off cards 13-15 (six players and no Six Card Bonus, or four and the
# bonus cards): 7s 7h 7d, and the first seat's 7c makes four of a kind, 100 % of the minor meter (655a.12(c)(1)
# paytable C). Off cards 9-11 (four players, no bonus): Td Jd Qd, and the fourth seat's 8d 9d make a straight flush,
# 100 % of the major meter (the others flushes, and envy bonuses, 655a.12(c)(5)). A hit needs that seat's
# Progressive Payout Wager and no fold, so it comes within a few rounds of the boot, not in every one.
QUADS_TOP = ["7c", "2d", "3d", "4d", "5d", "6d", "8d", "9d", "Td", "Jd", "Qd", "Kd", "7s", "7h", "7d"]
QUADS_DECK = QUADS_TOP + [c for c in STANDARD_DECK if c not in QUADS_TOP]
# Let It Ride on the automated shoe deals a stack of three to each player clockwise, then the community stack of
# three (two community cards, the third burned) (643a.10(b)). The first player's As Ks Qs is a mini-royal in spades,
# 100 % of the Three-Card Progressive meter (643a.12(d)(1) paytable A) and an envy bonus to every other player's
# Three-Card Progressive Payout Wager (643a.12(d)(5)). Cards 13-23 run Kh down to 3h, so with five, six or seven
# players the last player's stack and the community cards make a straight flush: 10 % of the Five-Card Progressive
# meter (643a.12(e)(1)) and the Five-Card envy bonuses (643a.12(e)(5)); on the way, three-card straight flushes that
# the Three-Card Progressive pays from its paytable. A hit needs that seat's wager, so it comes within a few rounds.
LIR_TOP = [
    "As",
    "Ks",
    "Qs",
    "2c",
    "5d",
    "9c",
    "3d",
    "8c",
    "Jd",
    "4c",
    "7d",
    "Tc",
    "Kh",
    "Qh",
    "Jh",
    "Th",
    "9h",
    "8h",
    "7h",
    "6h",
    "5h",
    "4h",
    "3h",
]
LIR_DECK = LIR_TOP + [c for c in STANDARD_DECK if c not in LIR_TOP]
# The boots not aimed at a phase deal that deck at every third shuffle and seeded shuffles between, so both meters are
# hit, validated and paid many times over the run (a 100 % award reseeds, a 10 % one leaves the rest), and kills land
# on hits of either level; the other decks keep the rounds varied.
_decks = random.Random(SEED)
LIR_MIXED = [" ".join(LIR_DECK if i % 3 == 0 else _decks.sample(STANDARD_DECK, len(STANDARD_DECK))) for i in range(90)]
# 643a.12(d)(5), (e)(5): the envy bonus per cent of the receiver's $1 or $5 Progressive Payout Wager, by the hand
# another player holds (linear in the wager: $100 and $500, $25 and $125, $1,000 and $5,000, $300 and $1,500).
# By the wager hit: the floorperson's validation a hit awaits, and the payment once validated (655a.11(i)(1)(iii);
# 643a.11(f)(3)(iii) for the Three-Card, (iv) for the Five-Card Progressive Payout Wager, (C) and (D) of each).
VALIDATED_UNDER = {
    "progressive": "655a.11(i)(1)(iii)",
    "five_card_hand_bonus": "655a.11(i)(3)(ii)",
    "three_card_progressive": "643a.11(f)(3)(iii)(C)",
    "five_card_progressive": "643a.11(f)(3)(iv)(C)",
}
PAID_UNDER = {"three_card_progressive": "643a.11(f)(3)(iii)(D)", "five_card_progressive": "643a.11(f)(3)(iv)(D)"}
ENVY_PER_CENT = {
    "three_card_progressive": {"mini_royal_spades": 100, "mini_royal": 25},
    "five_card_progressive": {"royal_flush": 1000, "straight_flush": 300},
}


@dataclass(frozen=True)
class Table:
    config: str
    entered_by: dict[str, str] = field(default_factory=lambda: dict(ENTERED_BY))
    held_by: dict[str, str] = field(default_factory=lambda: dict(HELD_BY))
    decks_for: dict[str, list[str]] = field(default_factory=dict)  # phase aimed at ("": none) -> the boot's decks
    progressive: bool = False
    every_level_hit: bool = False  # the run must hit, validate and pay every meter level
    accounts: bool = False  # the table's game accounts (605a.2(d)) must reconcile to the cent


TABLES = {
    "demo": Table("demo.toml"),
    # A hit is journaled with the round's settlement, which then waits in JACKPOT for the validation; the slow sign
    # (show_win, show_levels) holds the service in that step's commands, so the validation queues behind them.
    "ms-progressive": Table(
        "mississippi-stud-progressive.toml",
        {**ENTERED_BY, "jackpot": "progressive.hit"},
        {**HELD_BY, "jackpot": "progressive_sign"},
        {"jackpot": [" ".join(QUADS_DECK)] * 60},
        progressive=True,
    ),
    # Every optional wager of 655a, the Five Card Hand Bonus at the terminals from the players' game accounts
    # (655a.7(d)(5), 605a.2(d)) included: killed in any phase, the accounts must lose and create no cent.
    "ms-fchb": Table(
        "mississippi-stud-five-card-hand-bonus.toml",
        {**ENTERED_BY, "jackpot": "progressive.hit"},
        {**HELD_BY, "jackpot": "progressive_sign"},
        {"jackpot": [" ".join(QUADS_DECK)] * 60},
        progressive=True,
        accounts=True,
    ),
    # Let It Ride with both progressives (643a.7(g), (h)). Its decisions are ride or withdraw (643a.11(b), (d)):
    # aimed at, a kill follows a withdrawal, so the state it leaves holds a bet taken back mid-decision, which the
    # restarted table must return once at settlement and never let ride again.
    "lir-progressive": Table(
        "let-it-ride-progressive.toml",
        {**ENTERED_BY, "decision": "bet.withdrawn", "jackpot": "progressive.hit"},
        {**HELD_BY, "jackpot": "progressive_sign"},
        {"jackpot": [" ".join(LIR_DECK)] * 60, "": LIR_MIXED},
        progressive=True,
        every_level_hit=True,
    ),
}


class Daemon:
    def __init__(self, tmp: Path, broker: str, table_id: str, prefix: str, config: str = "demo.toml") -> None:
        self.journal = tmp / "table.sqlite"
        self.config = tmp / "table.toml"
        text = re.sub(
            r'^table_id = ".*"$', f'table_id = "{table_id}"', (CONFIGS / config).read_text(), count=1, flags=re.M
        )
        self.config.write_text(text.replace('prefix = "tablectl"', f'prefix = "{prefix}"'))
        self.broker = broker
        self.logs = tmp / "logs"
        self.logs.mkdir()
        self.boots = 0

    def start(self, seed: int, slow: str | None = None, decks: list[str] | None = None) -> subprocess.Popen[bytes]:
        self.boots += 1
        log = (self.logs / f"boot{self.boots}.log").open("wb")
        script = []
        if slow is not None or decks:
            path = self.logs / f"script-{self.boots}.toml"
            text = f"decks = {decks!r}\n".replace("'", '"') if decks else ""
            if slow is not None:
                text += f'[[faults]]\ndevice = "{slow}"\nfault = "slow_reply"\ndelay_ms = {SLOW_MS}\n'
            path.write_text(text)
            script = ["--script", str(path)]
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
                *script,
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
            stdin=subprocess.DEVNULL,
        )

    def log_tail(self) -> str:
        return (self.logs / f"boot{self.boots}.log").read_text(errors="replace")[-3000:]

    def stored(self) -> tuple[str, int, int]:
        """(phase, rounds started, last seq) as the journal holds them now."""
        if not self.journal.exists():
            return "none", 0, 0
        db = sqlite3.connect(self.journal)
        try:
            body = db.execute("SELECT body FROM critical_state WHERE record = 'engine'").fetchone()
            seq = db.execute("SELECT COALESCE(MAX(seq), 0) FROM events").fetchone()[0]
        finally:
            db.close()
        if body is None:
            return "none", 0, int(seq)
        state = snapshot.decode(bytes(body[0]))
        return str(state.phase), state.rounds_played, int(seq)


class Live:
    """Reads the subscriber's messages incrementally, for a wait that is not O(n) per message."""

    def __init__(self, sub: Subscriber, topic: str) -> None:
        self.sub, self.topic, self.cursor = sub, topic, 0

    def wait_for(self, type_: str, after_seq: int, within: float) -> None:
        def seen(messages: list[Received]) -> bool:
            while self.cursor < len(messages):
                m = messages[self.cursor]
                self.cursor += 1
                if m.topic == self.topic:
                    body = m.json()
                    if body["type"] == type_ and body["seq"] > after_seq:
                        return True
            return False

        self.sub.wait_until(seen, timeout=within, what=f"a live {type_} after seq {after_seq}")

    def wait_for_any(self, after_seq: int, within: float) -> None:
        """Until the boot's first event (its recovery, or its devices online on a fresh journal) is seen."""

        def seen(messages: list[Received]) -> bool:
            while self.cursor < len(messages):
                m = messages[self.cursor]
                self.cursor += 1
                if m.topic == self.topic and m.json()["seq"] > after_seq:
                    return True
            return False

        self.sub.wait_until(seen, timeout=within, what=f"the boot's first event after seq {after_seq}")


@pytest.mark.campaign
@pytest.mark.parametrize("name", list(TABLES))
def test_kill9_at_any_instant_loses_nothing_and_counts_nothing_twice(
    name: str, mosquitto: Mosquitto, subscribe: Subscribe, unique_id: str, tmp_path: Path, campaign: bool
) -> None:
    table = TABLES[name]
    enough = ROUNDS if campaign else BOUNDED_ROUNDS
    rng = random.Random(SEED)
    prefix = "k9"
    topic = f"{prefix}/{unique_id}/event"
    sub = subscribe(topic, f"{prefix}/{unique_id}/progressive/+")
    live = Live(sub, topic)
    daemon = Daemon(tmp_path, mosquitto.url, unique_id, prefix, table.config)
    hits: list[str] = []
    started = time.monotonic()
    while True:
        assert time.monotonic() - started < BUDGET_SECONDS, f"too slow: {len(hits)} kills, phases {Counter(hits)}"
        _, rounds, seq = daemon.stored()
        missing = [p for p in table.entered_by if p not in hits]
        live.cursor = len(sub.messages)
        if rounds >= enough and not missing:
            break
        aim = rng.choice(missing) if missing and rng.random() < 0.5 else None
        proc = daemon.start(
            seed=rng.randrange(1 << 30), slow=table.held_by.get(aim or ""), decks=table.decks_for.get(aim or "")
        )
        try:
            if aim is not None:
                live.wait_for(table.entered_by[aim], seq, within=30)
                delay = rng.uniform(0.0, 0.02)
            elif rng.random() < 0.15:
                delay = rng.uniform(0.0, 1.5)  # during the start-up: before or around its recovery
            else:
                live.wait_for_any(seq, within=30)
                delay = rng.uniform(0.3, 3.0)
            try:
                rc = proc.wait(timeout=delay)  # the daemon must still be playing when the power goes
            except subprocess.TimeoutExpired:
                pass
            else:
                pytest.fail(f"boot {daemon.boots} exited by itself ({rc}):\n" + daemon.log_tail())
        finally:
            proc.kill()  # SIGKILL
            proc.wait()
        hits.append(daemon.stored()[0])

    # The last boot plays on to a decision, then Ctrl-C closes the table once that round is complete.
    proc = daemon.start(seed=rng.randrange(1 << 30))
    try:
        live.wait_for("decision.requested", seq, within=30)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0, daemon.log_tail()
    finally:
        proc.kill()
        proc.wait()

    with JournalReader(daemon.journal) as reader:
        report = reader.verify()
        rows = list(reader.rows())
    assert report.ok, report.as_dict()
    assert [r["seq"] for r in rows] == list(range(1, len(rows) + 1))
    assert rows[-1]["type"] == "table.closed"
    kills = len(hits)
    assert set(table.entered_by) <= set(hits), Counter(hits)
    # Every boot after the first began with its recovery, before anything its restarted devices reported (a boot
    # killed before its first step journaled nothing, and the next one recovered instead).
    firsts: dict[str, dict[str, Any]] = {}
    for r in rows:
        # The command listener's own note, on its own connection; the check of the installed code, which every start
        # journals before anything else (605a.4(c), docs/software.md).
        if r["type"] not in ("command.listening", "software.checked"):
            firsts.setdefault(r["boot_id"], r)
    boots = list(firsts.values())
    assert boots[0]["type"] == "device.online" and all(b["type"] == "table.recovered" for b in boots[1:]), [
        (b["seq"], b["type"]) for b in boots
    ]
    recovered = [r["payload"] for r in rows if r["type"] == "table.recovered"]
    assert {p["policy"] for p in recovered if p["phase"] == "dealing"} == {"void"}

    totals = check_rounds(rows)
    assert totals["rounds"] >= enough
    assert totals["voided_by_recovery"] >= 1

    # Every journaled event reached the subscriber, whatever instant its publisher was killed at.
    journaled = {r["event_id"]: r["seq"] for r in rows}

    def all_there(messages: list[Received]) -> bool:
        return journaled.keys() <= {m.json()["event_id"] for m in messages if m.topic == topic}

    sub.wait_until(all_there, timeout=30, what="every journaled event on the subscriber")
    got = [m.json() for m in sub.on(topic)]
    assert all(journaled.get(e["event_id"]) == e["seq"] for e in got), "an event the journal does not hold"
    assert any(e.get("replayed") for e in got), "the backlog of a killed daemon is replayed, marked so"
    accounts = ""
    if table.accounts:
        found_accounts = check_accounts(rows, daemon.journal)
        accounts = (
            f", accounts: {found_accounts['movements']} movements, {found_accounts['returned_by_void']} wagers "
            f"returned by voids, {found_accounts['credits']} credits, {found_accounts['cash_outs']} cash-outs"
        )
    meters = ""
    if table.progressive:
        stored = stored_meters(daemon.journal)
        found = check_meters(rows, stored, table_progressives(load_config(daemon.config).game))
        # The retained progressive/<level> topics, as a supervisor connecting now gets them, show the same meters.
        assert_retained_meters(subscribe, Topics(prefix, unique_id), stored)
        if table.every_level_hit:
            assert found["levels_hit"] == len(stored.levels), "a meter level was never hit"
        meters = (
            f", {found['contributions']} contributions, {found['reversed']} rounds reversed, "
            f"{found['hits']} hits on {found['levels_hit']} levels ({found['hits_recovered']} validated after "
            "a restart)"
        )
    print(
        f"\n{kills} kills, {totals['rounds']} rounds, phases hit {dict(Counter(hits))}, "
        f"{totals['voided_by_recovery']} voided by recovery, {totals['withdrawn_before_restart']} rounds resumed "
        f"after a bet was taken back, {totals['envies']} envy bonuses, {len(rows)} events, {len(got)} received"
        f"{meters}{accounts}, "
        f"{time.monotonic() - started:.0f} s"
    )


def stored_meters(journal: Path) -> Meters:
    """The meters as last stored: both copies of the meters record, which must agree, and the engine state's."""
    db = sqlite3.connect(journal)
    try:
        bodies = dict(db.execute("SELECT copy, body FROM critical_state WHERE record = ?", (METERS_RECORD,)).fetchall())
        engine = db.execute("SELECT body FROM critical_state WHERE record = 'engine'").fetchone()[0]
    finally:
        db.close()
    loaded = meter_codec.load_copies(bytes(bodies[0]), bytes(bodies[1]))
    assert (loaded.used, loaded.tilt, loaded.findings) == ("both", False, []), loaded
    assert snapshot.decode(bytes(engine)).meters == loaded.meters, "the engine state's meters differ from the record"
    return loaded.meters


def check_meters(rows: list[dict[str, Any]], stored: Meters, params: TableProgressives) -> dict[str, int]:
    """Nothing lost, nothing counted twice: the journal's meter events replay to the stored meters; each progressive
    wager at the lock-out contributed once to each meter its spot feeds (655a.8(b): one wager, every level;
    643a.8(b)(2): the Three-Card and the Five-Card Progressive Payout Wagers each their own meter); a void reversed
    exactly its round's contributions; every hit was validated and paid once (655a.11(i)(1)(iii),
    643a.11(f)(3)(iii)(C)); each level balances."""
    replayed = replay(
        DomainEvent(r["type"], r["rule"], r["payload"], r["round_id"]) for r in rows if r["type"].startswith("meter.")
    )
    assert replayed == stored, "replaying the journal's meter.* events does not give the stored meters"
    assert not stored.open_rounds, stored.open_rounds  # the table closed after a completed round
    by_round: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["round_id"]:
            by_round[r["round_id"]].append(r)
    levels = sorted(params.levels)
    feeds = {p.wager: [lv.level for lv in p.levels] for p in params.progressives}
    rate = {name: lv.primary_ppm + lv.reserve_ppm for name, lv in params.levels.items()}
    kept_micro: Counter[str] = Counter()
    kept_count: Counter[str] = Counter()
    reversed_rounds = contributions = 0
    for rid, events in by_round.items():
        types = [e["type"] for e in events]
        made = [e for e in events if e["type"] == "meter.contributed"]
        contributions += len(made)
        if "lockout.confirmed" in types:
            lock = next(e["payload"] for e in events if e["type"] == "no_more_bets")
            expected = Counter(
                (int(seat), level, amount)
                for seat, w in lock["wagers"].items()
                if int(seat) in lock["players"]
                for spot, amount in w.items()
                for level in feeds.get(spot, ())
            )
        else:
            expected = Counter()
        got = Counter((e["payload"]["seat"], e["payload"]["level"], e["payload"]["wager_cents"]) for e in made)
        assert got == expected, f"{rid}: contributions {got}, progressive wagers at the lock-out {expected}"
        reversed_ = [e for e in events if e["type"] == "meter.contributions_reversed"]
        if "round.voided" in types:
            for level in levels:
                taken: Counter[str] = Counter()
                for e in made:
                    if e["payload"]["level"] == level:
                        taken.update({k: -v for k, v in e["payload"]["delta"].items()})
                back = [e["payload"] for e in reversed_ if e["payload"]["level"] == level]
                if not taken:
                    assert not back, f"{rid}: {level} reversed without contributions"
                    continue
                assert len(back) == 1, f"{rid}: {level} reversed {len(back)} times"
                delta = dict(back[0]["delta"])
                fed = sum(n for (_, lv, _), n in expected.items() if lv == level)
                assert delta.pop("reversed_count") == back[0]["wagers"] == fed, rid
                assert delta.pop("reversed_cents") == -taken["in_cents"], rid
                assert delta == {k: v for k, v in taken.items() if v}, f"{rid}: {level} reversed {delta}, not {taken}"
            reversed_rounds += bool(made)
            assert "meter.round_closed" not in types, rid
        else:
            assert not reversed_, f"{rid}: contributions reversed without a void"
            closed = types.count("meter.round_closed")
            assert closed == (1 if made else 0), f"{rid}: its contributions made final {closed} times"
            for e in made:
                kept_count[e["payload"]["level"]] += 1
                kept_micro[e["payload"]["level"]] += e["payload"]["wager_cents"] * rate[e["payload"]["level"]]
    # Hits: each validated and paid once, at the amount the meter gave, whether or not a restart came between.
    hit = {e["payload"]["hit"]: e["payload"] for e in rows if e["type"] == "progressive.hit"}
    validated = Counter(e["payload"]["hit"] for e in rows if e["type"] == "progressive.validated")
    paid = {e["payload"]["hit"]: e["payload"]["amount"] for e in rows if e["type"] == "progressive.paid"}
    paid_count = Counter(e["payload"]["hit"] for e in rows if e["type"] == "progressive.paid")
    assert hit, "no progressive hit: the scripted deck was meant to give one"
    assert set(validated) == set(paid_count) == set(hit) and set(validated.values()) == set(paid_count.values()) == {1}
    assert paid == {h: p["amount"] for h, p in hit.items()}
    meter_hits = [e["payload"] for e in rows if e["type"] == "meter.hit"]
    assert len(meter_hits) == len(hit)
    recovered = {
        h: e["seq"]
        for e in rows
        if e["type"] == "table.recovered" and e["payload"]["policy"] == "await_jackpot"
        for h in e["payload"]["hits"]
    }
    # A 500 for 1 Five Card Hand Bonus awaiting its verification is pending too; it is checked with the accounts.
    recovered = {h: seq for h, seq in recovered.items() if h in hit}
    assert recovered, "no restart found a hit awaiting validation"
    validated_at = {e["payload"]["hit"]: e["seq"] for e in rows if e["type"] == "progressive.validated"}
    assert all(validated_at[h] > seq for h, seq in recovered.items()), "a hit validated before the restart was pending"
    for e in rows:
        if e["type"] in ("progressive.hit", "progressive.validated", "progressive.paid"):
            wager = hit[e["payload"]["hit"]]["wager"]
            cited = PAID_UNDER.get(wager, e["rule"]) if e["type"] == "progressive.paid" else VALIDATED_UNDER[wager]
            assert e["rule"] == cited, (e["type"], wager, e["rule"], cited)
        elif e["type"] == "table.recovered" and e["payload"]["policy"] == "await_jackpot":
            first = e["payload"]["hits"][0]
            wager = hit[first]["wager"] if first in hit else FCHB
            assert e["rule"] == VALIDATED_UNDER[wager], e
    for level in levels:
        lv = stored.level(level)
        assert lv.balance_problem() is None, lv.balance_problem()
        assert lv.contributed_micro + lv.house_funded_micro == (
            lv.display_micro + lv.reserve_micro + lv.overflow_micro + lv.wins_cents * MICRO + lv.removed_micro
        ), lv
        # Independently of the meter events: the contributions are the rate times the wagers of the rounds not void.
        assert (lv.contributed_micro, lv.in_count) == (kept_micro[level], kept_count[level]), level
        assert lv.wins_cents == sum(h["paid_cents"] for h in meter_hits if h["level"] == level), level
    return {
        "contributions": contributions,
        "reversed": reversed_rounds,
        "hits": len(hit),
        "hits_recovered": len(recovered),
        "levels_hit": len({h["level"] for h in hit.values()}),
    }


def check_accounts(rows: list[dict[str, Any]], journal: Path) -> dict[str, int]:
    """No cent created or lost in the game accounts (605a.2(d)): each movement starts from the balance the last one
    left, across every kill; the movements add up to the stored ledger (both copies and the engine state's, which
    agree); each Five Card Hand Bonus Wager accepted was debited once, each one a void or a return gave back was
    credited back once, and each win of it (with its Magic Card and Lucky Bonus) was credited once, at the amount
    settled, except a share of the meter (paid with documentation, 655a.11(i)(3)(iii))."""
    balance: Counter[int] = Counter()
    moved: Counter[str] = Counter()
    movements = 0
    for r in rows:
        p = r["payload"]
        if r["type"].startswith("account.") and "balance_before" in p:
            seat = int(p["seat"])
            assert balance[seat] == p["balance_before"], (r["seq"], r["type"], seat, balance[seat], p)
            balance[seat] = p["balance"]
            moved[r["type"]] += p["amount"]
            movements += 1
    db = sqlite3.connect(journal)
    try:
        bodies = dict(
            db.execute("SELECT copy, body FROM critical_state WHERE record = ?", (ACCOUNTS_RECORD,)).fetchall()
        )
        engine = db.execute("SELECT body FROM critical_state WHERE record = 'engine'").fetchone()[0]
    finally:
        db.close()
    loaded = accounts_codec.load_copies(bytes(bodies[0]), bytes(bodies[1]))
    ledger = loaded.ledger
    assert loaded.findings == [] and snapshot.decode(bytes(engine)).accounts == ledger
    assert ledger.balance_problem() is None
    assert ledger.balances == {seat: cents for seat, cents in balance.items() if cents}
    assert (ledger.bought_in, ledger.wagered, ledger.won, ledger.returned, ledger.cashed_out) == (
        moved["account.bought_in"],
        moved["account.wagered"],
        moved["account.credited"],
        moved["account.returned"] + moved["account.wager_cancelled"],
        moved["account.cashed_out"],
    )
    by_round: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["round_id"]:
            by_round[r["round_id"]].append(r)
    returned_by_void = credits = 0
    for rid, events in by_round.items():
        accepted = Counter(
            (int(e["payload"]["seat"]), e["payload"]["amount"])
            for e in events
            if e["type"] == "wager.accepted" and e["payload"]["spot"] == FCHB
        )
        assert _count(events, "account.wagered", "seat", "amount") == accepted, rid
        back = Counter(
            (int(e["payload"]["seat"]), e["payload"]["amount"])
            for e in events
            if e["type"] == "wager.returned" and e["payload"]["spot"] == FCHB
        )
        for e in events:
            if e["type"] == "round.voided":
                for seat, w in e["payload"]["returned"].items():
                    if w.get(FCHB):
                        back[(int(seat), w[FCHB])] += 1
                        returned_by_void += 1
        assert _count(events, "account.returned", "seat", "amount") == back, (rid, back)
        owed = Counter(
            (int(e["payload"]["seat"]), e["payload"]["wager"], e["payload"]["paid"] + e["payload"]["returned"])
            for e in events
            if e["type"].removesuffix(".settled") in TO_ACCOUNT
            and e["type"].endswith(".settled")
            and e["payload"]["outcome"] == "win"
            and "% of" not in (e["payload"].get("odds") or "")
        )
        credited = _count(events, "account.credited", "seat", "wager", "amount")
        assert credited == owed, (rid, credited, owed)
        credits += sum(credited.values())
    return {
        "movements": movements,
        "returned_by_void": returned_by_void,
        "credits": credits,
        "cash_outs": sum(1 for r in rows if r["type"] == "account.cashed_out"),
    }


def _count(events: list[dict[str, Any]], kind: str, *fields: str) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(e["payload"][f] for f in fields) for e in events if e["type"] == kind)


def check_rounds(rows: list[dict[str, Any]]) -> dict[str, int]:
    """Every round's wagers followed from acceptance to settlement or return, exactly once each."""
    by_round: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        if r["round_id"]:
            by_round[r["round_id"]].append(r)
    numbers = sorted(int(r["payload"]["round_no"]) for r in rows if r["type"] == "betting.opened")
    assert sorted(set(numbers)) == list(range(1, numbers[-1] + 1)), "round numbering continues across restarts"
    collected_total = paid_total = result_total = voided_by_recovery = envies = withdrawn_before_restart = 0
    for rid, events in by_round.items():
        withdrawn = check_ride_or_withdraw(rid, events)
        resumed = [
            e["seq"] for e in events if e["type"] == "table.recovered" and e["payload"]["policy"] == "resume_decisions"
        ]
        withdrawn_before_restart += any(seq < max(resumed, default=0) for seq in withdrawn.values())
        stakes: dict[tuple[int, str], int] = {}
        locked = False
        ends = [e for e in events if e["type"] in ("round.completed", "round.voided")]
        if not ends and not any(e["type"] == "no_more_bets" for e in events):
            # The table closed while betting was open (the last SIGINT can land after the round it was meant for):
            # no card was dealt, so every wager on the layout went back (.7(c)); each exactly once.
            on_layout: dict[tuple[int, str], int] = {}
            for e in events:
                key = (int(e["payload"].get("seat", 0)), e["payload"].get("spot", ""))
                if e["type"] == "wager.accepted":
                    on_layout[key] = e["payload"]["amount"]
                elif e["type"] == "wager.withdrawn":
                    on_layout.pop(key, None)
            accepted = Counter((seat, spot, amount) for (seat, spot), amount in on_layout.items())
            returned = Counter(
                (int(e["payload"]["seat"]), e["payload"]["spot"], e["payload"]["amount"])
                for e in events
                if e["type"] == "wager.returned"
            )
            assert returned == accepted, f"{rid}: closed in betting, returned {returned}, taken {accepted}"
            continue
        assert len(ends) == 1, f"{rid}: ended {len(ends)} times"
        for e in events:
            p, t = e["payload"], e["type"]
            if t == "wager.accepted" and not locked:
                key = (int(p["seat"]), p["spot"])
                assert stakes.get(key) != p["amount"], f"{rid}: {key} taken twice at seq {e['seq']}"
                stakes[key] = p["amount"]
            elif t == "wager.confirmed":
                assert stakes.get((int(p["seat"]), p["spot"])) == p["amount"], f"{rid}: confirmed what was not taken"
            elif t in ("wager.withdrawn", "wager.returned") and not locked:
                stakes.pop((int(p["seat"]), p["spot"]), None)
            elif t == "no_more_bets":
                locked = True
                on_layout = {(int(s), spot): a for s, w in p["wagers"].items() for spot, a in w.items()}
                assert on_layout == {k: v for k, v in stakes.items() if k[0] in p["players"]}, rid
                stakes = on_layout
            elif t == "street_wager.placed":
                key = (int(p["seat"]), p["decision"])
                assert key not in stakes, f"{rid}: {key} placed twice"
                stakes[key] = p["amount"]
        assert locked, f'{rid}: ended without "no more bets"'
        end = ends[0]
        if end["type"] == "round.voided":
            given_back = {(int(s), spot): a for s, w in end["payload"]["returned"].items() for spot, a in w.items()}
            assert given_back == stakes, f"{rid}: the void returned {given_back}, the layout held {stakes}"
            voided_by_recovery += "restarted" in end["payload"]["reason"]
            continue
        settled: Counter[tuple[int, str]] = Counter()
        paid = collected = 0
        for e in events:
            p = e["payload"]
            rows_of = p["wagers"] if e["type"] == "hand.settled" else [p] if SETTLED.match(e["type"]) else []
            for w in rows_of:
                key = (int(p["seat"]), w["wager"])
                settled[key] += 1
                assert stakes[key] == w["amount"] == w["returned"] + w["collected"], (rid, key, w)
                # 643a.11(b)(2), (d)(2): a bet taken back goes back whole, and only a bet the player took back.
                assert (w["outcome"] == "withdrawn") == (key in withdrawn), (rid, key, w, withdrawn)
                assert w["outcome"] != "withdrawn" or (w["returned"], w["paid"]) == (w["amount"], 0), (rid, w)
                paid += w["paid"]
                collected += w["collected"]
            if BONUSES.match(e["type"]):  # paid to the seat's Five Card Hand Bonus Wager (655a.11(i)(3))
                assert p["amount"] == 0 and (int(p["seat"]), FCHB) in stakes, (rid, p)
                paid += p["paid"]
            if envy := ENVY.match(e["type"]):  # paid to a progressive wager, no stake of its own
                assert p["amount"] == 0 and (int(p["seat"]), envy.group(1) + "progressive") in stakes, (rid, p)
                paid += p["paid"]
                envies += 1
            if e["type"] == "seat.folded":
                for spot, amount in p["collected"].items():
                    settled[(int(p["seat"]), spot)] += 1
                    assert stakes[(int(p["seat"]), spot)] == amount, (rid, spot)
                    collected += amount
        assert set(settled) == set(stakes) and set(settled.values()) == {1}, f"{rid}: settled {settled}"
        check_643a_envy(rid, events, stakes)
        done = end["payload"]
        assert (done["paid"], done["collected"], done["table_result"]) == (paid, collected, collected - paid), rid
        paid_total += paid
        collected_total += collected
        result_total += done["table_result"]
    assert result_total == collected_total - paid_total
    return {
        "rounds": len(set(numbers)),
        "voided_by_recovery": voided_by_recovery,
        "envies": envies,
        "withdrawn_before_restart": withdrawn_before_restart,
    }


def check_643a_envy(rid: str, events: list[dict[str, Any]], stakes: dict[tuple[int, str], int]) -> None:
    """Each Three-Card and Five-Card Progressive Payout Wager got one envy bonus per other player holding a qualifying
    hand, at its schedule (643a.11(f)(3)(iii)(E), (iv)(E)); worked out from the settled hands, not the engine's rows.
    The live table seats one player per box, so every other box is another player (643a.7(k))."""
    hands = {int(e["payload"]["seat"]): e["payload"] for e in events if e["type"] == "hand.settled"}
    if not any(spot in ENVY_PER_CENT for _, spot in stakes):
        return
    qualifying: dict[str, dict[int, str]] = {"three_card_progressive": {}, "five_card_progressive": {}}
    for seat, h in hands.items():
        ranks, suits = sorted(c[0] for c in h["cards"]), {c[1] for c in h["cards"]}
        if ranks == ["A", "K", "Q"] and len(suits) == 1:  # 643a.6(d)(1): ace, king and queen of one suit
            qualifying["three_card_progressive"][seat] = "mini_royal_spades" if suits == {"s"} else "mini_royal"
        if h["hand"] in ENVY_PER_CENT["five_card_progressive"]:  # 643a.1: a straight flush or better
            qualifying["five_card_progressive"][seat] = h["hand"]
    expected = Counter(
        (seat, spot.removesuffix("progressive") + "envy_bonus", other, amount * ENVY_PER_CENT[spot][hand])
        for (seat, spot), amount in stakes.items()
        if spot in ENVY_PER_CENT
        for other, hand in qualifying[spot].items()
        if other != seat
    )
    got = Counter(
        (int(p["seat"]), p["wager"], int(p["note"].removeprefix("envy of seat ")), p["paid"])
        for p in (e["payload"] for e in events if ENVY.match(e["type"]))
    )
    assert got == expected, f"{rid}: envy bonuses {got}, the hands give {expected}"


def check_ride_or_withdraw(rid: str, events: list[dict[str, Any]]) -> dict[tuple[int, str], int]:
    """Each Let It Ride decision (643a.11(b), (d)) answered at most once, across restarts, and only for a bet on the
    layout; returns the bets taken back, (seat, bet) -> the seq of the answer."""
    answers: Counter[tuple[int, str]] = Counter()
    withdrawn: dict[tuple[int, str], int] = {}
    lock = next((e["payload"] for e in events if e["type"] == "no_more_bets"), None)
    for e in events:
        if e["type"] in ("bet.rides", "bet.withdrawn"):
            p = e["payload"]
            key = (int(p["seat"]), p["bet"])
            answers[key] += 1
            assert answers[key] == 1, f"{rid}: {key} answered again at seq {e['seq']}"
            assert lock is not None and lock["wagers"][str(key[0])][key[1]] == p["amount"], (rid, p)
            if e["type"] == "bet.withdrawn":
                withdrawn[key] = e["seq"]
    return withdrawn
