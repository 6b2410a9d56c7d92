"""A chapter is one package plus one registry entry: a sixth chapter, built here and registered by this test alone,
is validated as a config's [game], settled by `tablectl settle`, described in the birth message and played by the
live engine on simulated devices, with no other change anywhere.

The chapter is a tiny made-up one, "900a High Card": one card to each Ante and one to the dealer from an automated
shoe; the higher rank wins 1 to 1, a tie pushes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Literal

import pytest
from pydantic import Field, field_validator

from controller.cli.main import main
from controller.config.errors import ConfigError
from controller.config.table import TableConfig, parse_config
from controller.core.cards import STANDARD_DECK, rank_value
from controller.core.events import JournaledEvent
from controller.core.money import Cents, Odds
from controller.core.settlement import (
    Card,
    ChapterRules,
    RoundRecord,
    SeatRecord,
    Settled,
    check_round_cards,
    lose,
    parse_cards_field,
    push,
    win,
)
from controller.engine.spec import ChapterSpec, DealingMethod, DealPlan, Decision, Offer, RoundView, Stack
from controller.games.chapter import Chapter
from controller.games.describe import PaytableText
from controller.games.registry import REGISTRY, chapter_of, register, unregister
from controller.mqtt.birth import build_birth
from controller.people.demo import ScriptedPolicy, ScriptedRound, play
from controller.people.simulate import NO_BROKER

CODE = "900a"
EVEN_MONEY = Odds.parse("1 to 1")

# -- the chapter package, as a contributor would write it (docs/new-chapter.md) ---------------------------------


class HighCardRules(ChapterRules):
    chapter: Literal["900a"]
    seats: int = Field(3, ge=1, le=7)
    ante_min_cents: int = Field(100, gt=0)
    ante_max_cents: int = Field(10_000, gt=0)


class HighCardRound(RoundRecord):
    chapter: Literal["900a"]
    seats: list[SeatRecord]
    dealer: list[Card]

    _dealer = field_validator("dealer", mode="before")(parse_cards_field)


def settle(rules: HighCardRules, record: HighCardRound) -> tuple[list[Settled], dict[str, Cents]]:
    check_round_cards([record.dealer, *(s.cards for s in record.seats)])
    dealer = rank_value(record.dealer[0])
    out: list[Settled] = []
    for s in sorted(record.seats, key=lambda x: x.seat, reverse=True):
        mine, ante = rank_value(s.cards[0]), s.wagers["ante"]
        if mine > dealer:
            out.append(win(s.seat, "ante", ante, EVEN_MONEY, "900a.11(a)", paytable="900a.12(a)"))
        elif mine == dealer:
            out.append(push(s.seat, "ante", ante, "900a.11(b)"))
        else:
            out.append(lose(s.seat, "ante", ante, "900a.11(c)"))
    return out, dict(record.meters)


class HighCardSpec(ChapterSpec[HighCardRules]):
    chapter = CODE
    name = "High Card (a test's chapter)"
    main_wagers = ("ante",)
    supported_methods: tuple[DealingMethod, ...] = ("automated_shoe",)
    # Where the chapter numbers the common steps (the engine cites `900a.<key>` for a key not given).
    citations: Mapping[str, str] = {
        "open": "900a.4",
        "shuffle": "900a.5(a)",
        "count": "900a.5(b)",
        "betting": "900a.7(c)",
        "player": "900a.7(a)",
        "seat": "900a.2(a)",
        "complete": "900a.11(g)",
    }

    def seats(self, rules: HighCardRules) -> int:
        return rules.seats

    def offers(self, rules: HighCardRules) -> Sequence[Offer]:
        return [Offer("ante", "900a.7(a)", rules.ante_min_cents, rules.ante_max_cents)]

    def player_problem(self, wagers: Mapping[str, Cents]) -> str | None:
        return None if wagers.get("ante") else "no Ante Wager at this seat (900a.7(a))"

    def plan(
        self,
        rules: HighCardRules,
        method: DealingMethod,
        players: Sequence[int],
        wagers: Mapping[int, Mapping[str, Cents]],
    ) -> DealPlan:
        stacks = (*(Stack((f"seat:{n}",), "900a.10(a)") for n in players), Stack(("dealer",), "900a.10(a)"))
        return DealPlan("900a.10(b)", stacks=stacks)

    def decisions(self, rules: HighCardRules) -> Sequence[Decision]:
        return ()

    def allowed(self, rules: HighCardRules, decision: Decision, wagers: Mapping[str, Cents]) -> Sequence[Cents]:
        return ()

    def settle(self, rules: HighCardRules, table: RoundView) -> tuple[list[Settled], dict[str, Cents]]:
        seats = [SeatRecord(seat=s.seat, cards=list(s.cards), wagers=dict(s.wagers)) for s in table.seats]
        record = HighCardRound(
            chapter="900a",
            round_id=table.round_id,
            dealer=list(table.areas.get("dealer", ())),
            meters=dict(table.meters),
            seats=seats,
        )
        return settle(rules, record)


def paytables(rules: HighCardRules) -> list[PaytableText]:
    return [PaytableText("ante", "900a.12(a)", None, {"higher_card": str(EVEN_MONEY)})]


ENTRY = Chapter(HighCardRules, HighCardSpec(), HighCardRound, settle, paytables)

# -- the tests -------------------------------------------------------------------------------------------------

GAME = {"chapter": CODE, "seats": 2}
STATIONS = [{"driver": "reference-wager-station", "port": "simulated", "seat": n} for n in (1, 2)]
DEVICES = {
    "shuffler": {"driver": "reference-shuffler", "port": "simulated"},
    "shoe": {"driver": "reference-shoe", "port": "simulated"},
    "dealer_panel": {"driver": "reference-dealer-panel", "port": "simulated"},
    "wager_stations": STATIONS,
}


@pytest.fixture
def sixth() -> Iterator[None]:
    register(ENTRY)
    try:
        yield
    finally:
        unregister(CODE)


def test_config_validation_knows_the_chapter_only_while_it_is_registered(sixth: None) -> None:
    config = parse_config({"table_id": "t-900a", "game": GAME})
    assert isinstance(config.game, HighCardRules) and config.game.seats == 2
    with pytest.raises(ConfigError, match=r"game\.ante_mni_cents: is not a known setting.*did you mean ante_min_cents"):
        parse_config({"table_id": "t", "game": {**GAME, "ante_mni_cents": 5}})
    unregister(CODE)
    try:
        with pytest.raises(ConfigError, match=r"game\.chapter: must name the game's chapter, one of 643a, .*684a"):
            parse_config({"table_id": "t-900a", "game": GAME})
    finally:
        register(ENTRY)


def test_tablectl_settle_settles_its_round_records(
    sixth: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "table.toml"
    config.write_text(f'table_id = "t-900a"\n[game]\nchapter = "{CODE}"\nseats = 2\n')
    record = {
        "chapter": CODE,
        "dealer": ["9h"],
        "seats": [
            {"seat": 1, "cards": ["Ks"], "wagers": {"ante": 500}},
            {"seat": 2, "cards": ["9c"], "wagers": {"ante": 300}},
        ],
    }
    (tmp_path / "round.json").write_text(json.dumps(record))
    assert main(["settle", "--config", str(config), str(tmp_path / "round.json")]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["chapter"] == CODE
    assert [(s["seat"], [(w["outcome"], w["paid"]) for w in s["wagers"]]) for s in result["seats"]] == [
        (2, [("push", 0)]),
        (1, [("win", 500)]),
    ]
    # A record this chapter could not have produced is refused by its own model, named as this chapter's.
    (tmp_path / "bad.json").write_text(json.dumps({**record, "dealer": ["9h", "9h"], "seats": []}))
    assert main(["settle", "--config", str(config), str(tmp_path / "bad.json")]) == 2
    assert "the round's cards are not from one deck" in capsys.readouterr().err


def test_the_birth_message_and_the_meters_come_from_its_entry(sixth: None) -> None:
    config = parse_config({"table_id": "t-900a", "game": GAME})
    birth = build_birth(config, "boot-1")
    assert birth.game.chapter == CODE and birth.game.name == "High Card (a test's chapter)"
    assert [(p.wager, p.citation, p.rows) for p in birth.paytables] == [
        ("ante", "900a.12(a)", {"higher_card": "1 to 1"})
    ]
    assert chapter_of(config.game).progressives(config.game).levels == {}
    assert REGISTRY[CODE] is ENTRY


@pytest.mark.e2e
async def test_the_live_engine_plays_its_round_on_simulated_devices(sixth: None, tmp_path: Path) -> None:
    config: TableConfig = parse_config({"table_id": "t-900a", "game": GAME, "devices": DEVICES})
    # Seat 1 gets the K, seat 2 the 2, the dealer the 9: seat 1 wins, seat 2 loses.
    deck = ["Kd", "2c", "9s", *(c for c in STANDARD_DECK if c not in ("Kd", "2c", "9s"))]
    events: list[JournaledEvent] = []
    played = await play(
        config,
        rounds=1,
        broker=NO_BROKER,
        journal_path=tmp_path / "journal.sqlite",
        policy=ScriptedPolicy([ScriptedRound({1: {"ante": 500}, 2: {"ante": 200}})]),
        decks=[deck],
        on_event=events.append,
        close_when_stuck=True,
    )
    assert played == 1
    types = [e.type for e in events]
    assert "round.completed" in types and "round.voided" not in types, types
    settled = {p["seat"]: p for p in (e.payload for e in events if e.type == "hand.settled")}
    # Settled counterclockwise from the dealer's right by the chapter's own settlement, cited to its rules.
    assert [(w["wager"], w["outcome"], w["paid"]) for w in settled[1]["wagers"]] == [("ante", "win", 500)]
    assert [(w["wager"], w["outcome"], w["collected"]) for w in settled[2]["wagers"]] == [("ante", "lose", 200)]
    assert settled[1]["dealer"] == ["9s"]
    (completed,) = [e for e in events if e.type == "round.completed"]
    assert completed.rule == "900a.11(g)" and completed.payload["table_result"] == 200 - 500
