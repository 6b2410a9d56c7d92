"""End to end: the table on simulated devices over real ptys, a real journal, a real mosquitto.

An independent MQTT client (paho, its own thread) subscribes before the table opens and checks the
round's event sequence, the citations and every settlement amount, as a floor supervisor would see them.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from controller.config.table import TableConfig, demo_config
from controller.core.cards import STANDARD_DECK
from controller.people.demo import ScriptedPolicy, ScriptedRound, play
from tests.broker import Mosquitto, Subscribe, fresh_id
from tests.e2e.conftest import table_config

pytestmark = pytest.mark.e2e

# Seats 1, 2 and 4 play; seat 4 wagers the Six Card Bonus, so its four cards come off the stub first
# (655a.10(c)). Dealing order: seat 1, seat 2, seat 4, four Six Card Bonus cards, three community cards.
TOP = ["Ah", "Ad", "9c", "4d", "Qs", "Js", "Ks", "Ts", "9s", "2d", "Ac", "7h", "7s"]
DECK = TOP + [c for c in STANDARD_DECK if c not in TOP]
ROUND = ScriptedRound(
    wagers={1: {"ante": 1000}, 2: {"ante": 500, "three_card_bonus": 200}, 4: {"ante": 500, "six_card_bonus": 300}},
    decisions={
        (1, "street_3"): 3000,
        (1, "street_4"): 1000,
        (1, "street_5"): 2000,
        (2, "street_3"): 500,
        (2, "street_4"): None,  # seat 2 folds on 4th Street
        (4, "street_3"): 1000,
        (4, "street_4"): 1000,
        (4, "street_5"): 500,
    },
)

EXPECTED_ROUND = [
    ("betting.opened", "655a.7(c)"),
    ("wager.accepted", "655a.7(d)(1)"),
    ("wager.accepted", "655a.7(d)(1)"),
    ("wager.accepted", "655a.7(d)(4)"),
    ("wager.accepted", "655a.7(d)(1)"),
    ("wager.accepted", "655a.7(d)(6)"),
    ("no_more_bets", "655a.10(a)(2)"),
    ("lockout.confirmed", "655a.10(a)(2)"),
    ("deal.started", "655a.10(b)"),
    ("cards.dealt", "655a.10(b)"),
    ("cards.dealt", "655a.10(b)"),
    ("cards.dealt", "655a.10(b)"),
    ("six_card_bonus.dealt", "655a.10(c)"),
    ("community.dealt", "655a.10(c)"),
    ("stub.discarded", "655a.10(c)"),
    ("decision.requested", "655a.11(b)"),
    ("street_wager.placed", "655a.11(b)"),
    ("decision.requested", "655a.11(b)"),
    ("street_wager.placed", "655a.11(b)"),
    ("decision.requested", "655a.11(b)"),
    ("street_wager.placed", "655a.11(b)"),
    ("community.revealed", "655a.11(c)"),
    ("decision.requested", "655a.11(d)"),
    ("street_wager.placed", "655a.11(d)"),
    ("decision.requested", "655a.11(d)"),
    ("seat.folded", "655a.11(d)"),
    ("decision.requested", "655a.11(d)"),
    ("street_wager.placed", "655a.11(d)"),
    ("community.revealed", "655a.11(e)"),
    ("decision.requested", "655a.11(f)"),
    ("street_wager.placed", "655a.11(f)"),
    ("decision.requested", "655a.11(f)"),
    ("street_wager.placed", "655a.11(f)"),
    ("community.revealed", "655a.11(g)"),
    # 655a.11(h)-(i): counterclockwise from the dealer's right, each seat's optional wagers after its hand.
    ("hand.settled", "655a.11(h)(2)"),  # seat 4: Q-J with A-7-7 is a pair of 7s, a push
    ("six_card_bonus.revealed", "655a.11(i)(4)"),
    ("six_card_bonus.settled", "655a.11(i)(4)(i)"),  # seat 4: K-Q-J-10-9 of spades
    ("three_card_bonus.settled", "655a.11(i)(2)(i)"),  # seat 2 folded; its bonus still settles
    ("hand.settled", "655a.11(h)(3)"),  # seat 1: A-A with A-7-7 is a full house
    ("round.recorded", "655a.11(j)"),  # the round as `tablectl settle` reads it
    ("round.completed", "655a.11(j)"),
]
CARD = re.compile(r'"[2-9TJQKA][cdhs]"')


def _config(table_id: str, prefix: str) -> TableConfig:
    data = demo_config().model_dump()
    data["table_id"] = table_id
    data["mqtt"]["prefix"] = prefix
    return TableConfig.model_validate(data)


def _round_events(events: list[dict[str, Any]], round_no: int) -> list[dict[str, Any]]:
    rid = f"{events[0]['table_id']}-r{round_no:06d}"
    return [e for e in events if e["round_id"] == rid]


def _seat_by_seat(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The round's events with its accepted wagers put seat by seat where they stand, each seat's in the order it
    placed them: the players at different seats put their chips down at once, each on their own station and line, so
    the wagers of different seats reach the controller in any order, as at a real table; a seat's own do not."""
    at = [i for i, e in enumerate(events) if e["type"] == "wager.accepted"]
    in_seat_order = sorted((events[i] for i in at), key=lambda e: int(e["payload"]["seat"]))  # stable: a seat's order
    out = list(events)
    for i, event in zip(at, in_seat_order, strict=True):
        out[i] = event
    return out


def _check_round(events: list[dict[str, Any]]) -> None:
    # A late wager (tried after "no more bets") may land anywhere after the lock; it is checked apart.
    late = [e for e in events if e["type"] == "wager.rejected"]
    assert [(e["rule"], e["payload"]["seat"]) for e in late] == [("655a.7(c)", 6)]
    # The demo asks to close the table during its last round; the round still plays out in full.
    apart = ("wager.rejected", "table.closing")
    kept = _seat_by_seat([e for e in events if e["type"] not in apart])
    assert [(e["type"], e["rule"]) for e in kept] == EXPECTED_ROUND
    assert [e["payload"]["seat"] for e in kept if e["type"] == "wager.accepted"] == [1, 2, 2, 4, 4]

    settled = {(e["type"], e["payload"].get("seat")): e["payload"] for e in events}
    seat1 = settled[("hand.settled", 1)]
    assert (seat1["hand"], seat1["cards"], seat1["community"]) == ("full_house", ["Ah", "Ad"], ["Ac", "7h", "7s"])
    assert [(w["wager"], w["amount"], w["odds"], w["paid"], w["returned"]) for w in seat1["wagers"]] == [
        ("ante", 1000, "10 to 1", 10_000, 1000),
        ("street_3", 3000, "10 to 1", 30_000, 3000),
        ("street_4", 1000, "10 to 1", 10_000, 1000),
        ("street_5", 2000, "10 to 1", 20_000, 2000),
    ]
    seat4 = settled[("hand.settled", 4)]
    assert [(w["wager"], w["outcome"], w["paid"], w["returned"]) for w in seat4["wagers"]] == [
        ("ante", "push", 0, 500),
        ("street_3", "push", 0, 1000),
        ("street_4", "push", 0, 1000),
        ("street_5", "push", 0, 500),
    ]
    six = settled[("six_card_bonus.settled", 4)]
    assert (six["hand"], six["odds"], six["paid"], six["paytable"]) == (
        "straight_flush",
        "200 to 1",
        60_000,
        "655a.12(f) paytable C",
    )
    fold = settled[("seat.folded", 2)]
    assert fold["collected"] == {"ante": 500, "street_3": 500}
    three = settled[("three_card_bonus.settled", 2)]
    assert (three["hand"], three["odds"], three["paid"], three["paytable"]) == (
        "pair",
        "1 to 1",
        200,
        "655a.12(d) paytable A",
    )
    done = settled[("round.completed", None)]
    assert (done["paid"], done["collected"], done["players"]) == (70_000 + 60_000 + 200, 1000, [1, 2, 4])
    # No card identity leaves the table PC before the round's settlement (DESIGN.md).
    first_settlement = next(i for i, e in enumerate(events) if e["type"] == "hand.settled")
    leaks = [e for e in events[:first_settlement] if CARD.search(json.dumps(e))]
    assert leaks == []


async def test_two_scripted_rounds_reach_an_independent_subscriber(
    mosquitto: Mosquitto, subscribe: Subscribe, unique_id: str, tmp_path: Path
) -> None:
    config = _config(unique_id, "e2e")
    sub = subscribe(f"e2e/{unique_id}/#")
    policy = ScriptedPolicy([ScriptedRound(ROUND.wagers, ROUND.decisions, late=(6, "ante", 500))])

    played = await play(
        config,
        rounds=2,
        broker=mosquitto.url,
        seed=1,
        journal_path=tmp_path / "j.sqlite",
        policy=policy,
        decks=[DECK, DECK],
    )

    assert played == 2
    topic = f"e2e/{unique_id}/event"
    await sub.await_until(
        lambda ms: any(b'"table.closed"' in m.payload for m in ms if m.topic == topic),
        what="table.closed on the event topic",
    )
    events = [m.json() for m in sub.on(topic)]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1)), "seq must be gap-free from 1"
    assert len({e["event_id"] for e in events}) == len(events)
    assert all("sealed" not in e for e in events)
    for round_no in (1, 2):
        _check_round(_round_events(events, round_no))
    assert [e["type"] for e in _round_events(events, 2)].count("table.closing") == 1
    # Outside the rounds: the table opened, every device identified itself, each round began with a shuffle.
    outside = [e["type"] for e in events if e["round_id"] is None]
    assert outside.count("device.online") == 10  # with the progressive sign
    assert outside.count("shuffle.completed") == 2 and outside[-1] == "table.closed"
    # The journal holds the same events, all published.
    db = sqlite3.connect(tmp_path / "j.sqlite")
    assert db.execute("select count(*), max(seq) from events").fetchone() == (len(events), len(events))


async def test_table_keeps_playing_and_journaling_without_a_broker(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = _config("nobroker", "e2e")
    policy = ScriptedPolicy([ROUND])

    played = await play(
        config,
        rounds=1,
        broker=f"mqtt://127.0.0.1:{port}",
        journal_path=tmp_path / "j.sqlite",
        policy=policy,
        decks=[DECK],
    )

    assert played == 1
    db = sqlite3.connect(tmp_path / "j.sqlite")
    types = [t for (t,) in db.execute("select type from events order by seq")]
    assert "round.completed" in types and types[-1] == "table.closed"
    assert db.execute("select count(*) from events where published_at is not null").fetchone() == (0,)


def test_tablectl_demo_command(mosquitto: Mosquitto, subscribe: Subscribe, tmp_path: Path) -> None:
    """The command a new user runs: plays N rounds, shows them, publishes them, exits 0."""
    # The default config's table id under a prefix of its own: the suite's broker is shared, and demo-ms-1's retained
    # anchor from another run there would be a rollback to this fresh journal (its progressives locked out).
    prefix = fresh_id("demo")
    config = table_config(tmp_path, "demo-ms-1", prefix)
    sub = subscribe(f"{prefix}/demo-ms-1/event")
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "demo",
            "--rounds",
            "3",
            "--seed",
            "7",
            "--pace",
            "0",
            "--broker",
            mosquitto.url,
            "--config",
            str(config),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "round 3 complete" in proc.stdout
    assert "3 round(s) played" in proc.stderr
    sub.wait_until(lambda ms: any(b'"table.closed"' in m.payload for m in ms), what="table.closed")
    completed = [m.json() for m in sub.messages if b'"round.completed"' in m.payload]
    assert [e["payload"]["round_no"] for e in completed] == [1, 2, 3]
    assert Path(tmp_path, "tablectl", "demo-ms-1.sqlite").exists()


def test_tablectl_demo_rejects_bad_arguments() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "controller.cli", "demo", "--rounds", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert "0 rounds is not a game: give 1 or more" in proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "controller.cli", "demo", "--broker", "http://x"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2 and "--broker" in proc.stderr


def test_demo_takes_a_sim_script(tmp_path: Path) -> None:
    """A fault scripted for the simulators meets the chapter's remedy, as an operator would try it."""
    script = tmp_path / "jam.toml"
    script.write_text('[[faults]]\ndevice = "shuffler"\nfault = "jam"\nwhen = "shuffle 1"\n')
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "demo",
            "--rounds",
            "1",
            "--seed",
            "3",
            "--pace",
            "0",
            "--broker",
            "mqtt://127.0.0.1:1",
            "--script",
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "shuffle failed (jam): the cards are reshuffled" in proc.stdout
    assert "655a.13(e)" in proc.stdout and "round 1 complete" in proc.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text('[[faults]]\ndevice = "shoe"\nfault = "count_51"\n')
    proc = subprocess.run(
        [sys.executable, "-m", "controller.cli", "demo", "--script", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2 and "cannot have fault 'count_51'" in proc.stderr


@pytest.mark.parametrize(
    ("config", "table_id", "seed"),
    [
        ("mississippi-stud-five-card-hand-bonus.toml", "ms-fchb-01", 7),
        ("let-it-ride-five-card-hand-bonus.toml", "lir-fchb-01", 3),
    ],
)
def test_demo_plays_the_five_card_hand_bonus_with_game_accounts(
    config: str, table_id: str, seed: int, mosquitto: Mosquitto, subscribe: Subscribe, tmp_path: Path
) -> None:
    """Issue 14's "done when": each chapter's table with the wager live plays 20 rounds where players buy in at the
    terminals, wager, win (the Magic Card and Lucky Bonus with a winning hand only) and cash out; as a supervisor sees
    it.
    The seed repeats the players and the draws (a demo's seeded draws; a live table draws from the CSPRNG).

    The Magic Card and Lucky Bonus are paid with a winning Five Card Hand Bonus hand only (655a.1, 655a.11(i)(3)(i);
    643a.1, 643a.11(f)(3)(v)(A)): the bonuses settled and credited are exactly those of winning hands."""
    # The shipped config under a prefix of its own: the suite's broker is shared (no other run's retained anchor).
    prefix = fresh_id("fchb")
    path = table_config(tmp_path, table_id, prefix, name=config)
    sub = subscribe(f"{prefix}/{table_id}/event")
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "controller.cli", "demo", "--config", str(path)),
            *("--rounds", "20", "--seed", str(seed), "--pace", "0", "--broker", mosquitto.url),
            *("--journal", str(tmp_path / "j.sqlite")),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "20 round(s) played" in proc.stderr
    sub.wait_until(lambda ms: any(b'"table.closed"' in m.payload for m in ms), what="table.closed")
    events = sorted((m.json() for m in sub.messages), key=lambda e: e["seq"])
    events = list({e["seq"]: e for e in events}.values())
    types = [e["type"] for e in events]
    for kind in ("account.bought_in", "account.wagered", "account.cashed_out"):
        assert kind in types, kind
    # The Magic Card and Lucky Bonus are paid with a winning Five Card Hand Bonus hand only (655a.1, 655a.11(i)(3)(i);
    # 643a.1, 643a.11(f)(3)(v)(A)): from each round's published draws, recorded cards and the hand's own result, the
    # bonuses settled and credited are exactly those of winning hands, and a draw on a losing hand is named, unpaid.
    published = {e["round_id"]: e["payload"] for e in events if e["type"] == "bonus.published"}
    records = {e["round_id"]: e["payload"]["record"] for e in events if e["type"] == "round.recorded"}
    expected: set[tuple[str, int, str]] = set()
    unpaid = 0
    for e in events:
        if e["type"] != "five_card_hand_bonus.settled" or e["round_id"] not in records:
            continue
        rid, seat, draws = e["round_id"], int(e["payload"]["seat"]), published[e["round_id"]]
        record = records[rid]
        cards = next(x["cards"] for x in record["seats"] if x["seat"] == seat) + record["community"]
        held = {"magic_card_bonus": draws.get("magic_card") in cards, "lucky_bonus": draws.get("lucky_seat") == seat}
        if e["payload"]["outcome"] == "win":
            expected |= {(rid, seat, bonus) for bonus, hit in held.items() if hit}
        elif any(held.values()):
            unpaid += 1
            assert "not paid" in e["payload"]["note"], e
    bonus_rows = {
        (e["round_id"], int(e["payload"]["seat"]), e["type"].removesuffix(".settled"))
        for e in events
        if e["type"] in ("magic_card_bonus.settled", "lucky_bonus.settled")
    }
    credited = {
        (e["round_id"], int(e["payload"]["seat"]), e["payload"]["wager"])
        for e in events
        if e["type"] == "account.credited" and e["payload"]["wager"] in ("magic_card_bonus", "lucky_bonus")
    }
    assert bonus_rows == credited == expected
    assert unpaid > 0, "the seeded run drew a bonus onto a losing hand at least once"
    # The draws are sealed until settlement: the published bonus.drawn names them and holds no value.
    for e in events:
        if e["type"] == "bonus.drawn":
            assert set(e["payload"]) == {"bonuses", "rules", "when", "published"}
    by_round: dict[str, list[str]] = {}
    for e in events:
        by_round.setdefault(e["round_id"] or "", []).append(e["type"])
    for rid, kinds in by_round.items():
        if "bonus.drawn" in kinds and "round.completed" in kinds:
            assert kinds.index("bonus.drawn") < min(
                i for i, k in enumerate(kinds) if k in ("cards.dealt", "card.dealt")
            ), rid
            settled = max(i for i, k in enumerate(kinds) if k.endswith(".settled"))
            assert settled < kinds.index("bonus.published") < kinds.index("round.recorded"), rid
    # No cent created or lost: every movement starts from the balance the last one left.
    balance: dict[int, int] = {}
    for e in events:
        p = e["payload"]
        if e["type"].startswith("account.") and "balance_before" in p:
            assert balance.get(int(p["seat"]), 0) == p["balance_before"], e
            balance[int(p["seat"])] = p["balance"]
    last = next(e["payload"]["totals"] for e in reversed(events) if "totals" in e["payload"])
    assert last["bought_in"] + last["won"] + last["returned"] == last["wagered"] + last["cashed_out"] + last["held"]
    assert last["held"] == sum(balance.values())
