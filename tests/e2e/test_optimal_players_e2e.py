"""`--players optimal`: a seeded demo whose simulated players follow the par analysis's optimal strategy makes, on
every street and bet, the decision the strategy says for the cards that player saw (docs/par.md).

The whole table is real (drivers on real pseudo-terminals, a real SQLite journal); only the people are simulated.
What each player decided is read back from the journal's `round.recorded` events (the record `tablectl settle`
reads), and checked against controller.par's Strategy on the same cards.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path
from typing import Any

import pytest

from controller.config.table import TableConfig, demo_config, load_config
from controller.core.cards import STANDARD_DECK
from controller.core.events import JournaledEvent
from controller.games.cajun_stud.rules import CajunStudRules
from controller.games.chapter_684a.rules import Chapter684aRules
from controller.games.let_it_ride.rules import LetItRideRules
from controller.games.three_card_prime.rules import ThreeCardPrimeRules
from controller.par.analyse import (
    cajun_stud_strategy,
    chapter_684a_strategy,
    let_it_ride_strategy,
    mississippi_stud_strategy,
    three_card_prime_strategy,
)
from controller.people.demo import RandomPolicy, play, policy_for
from controller.people.optimal import OptimalPolicy
from controller.people.policy import DecisionRequest
from controller.people.simulate import NO_BROKER, ScenarioPolicy
from tests.tablectl_runs import in_process

# With the par modules on one worker (tests/par/sheets.py): the strategies are exact analyses cached per process, and
# 684a's dealer tables (7 s of CPU) are the ones its par sheets read; this module's 679a tests share 679a's strategy.
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("par_sheets")]

ROOT = Path(__file__).resolve().parents[2]
STREETS = ("street_3", "street_4", "street_5")


def _index(cards: list[str]) -> list[int]:
    return [STANDARD_DECK.index(c) for c in cards]


async def _records(config: TableConfig, tmp_path: Path, rounds: int, seed: int) -> list[dict[str, Any]]:
    events: list[JournaledEvent] = []
    played = await play(
        config,
        rounds=rounds,
        broker=NO_BROKER,
        seed=seed,
        journal_path=tmp_path / "j.sqlite",
        players="optimal",
        on_event=events.append,
        close_when_stuck=True,
    )
    assert played == rounds
    return [ev.payload["record"] for ev in events if ev.type == "round.recorded"]


async def test_mississippi_stud_players_play_every_street_as_the_strategy_says(tmp_path: Path) -> None:
    """655a.11(b), (d), (f): each player's street wager, of the multiple the optimal strategy names for his two cards
    and the community cards turned so far, or his fold on that street."""
    strategy = mississippi_stud_strategy()
    records = await _records(demo_config(), tmp_path, rounds=25, seed=18)
    assert len(records) == 25
    decided = {"fold": 0, "1x": 0, "2x": 0, "3x": 0}
    for record in records:
        community = record["community"]
        for seat in record["seats"]:
            ante = seat["wagers"]["ante"]
            units = 1
            for k, street in enumerate(STREETS):
                multiple = strategy.decide(_index(seat["cards"] + community[:k]), units)
                if multiple == 0:
                    assert seat.get("folded_on") == street, (record["round_id"], seat, street)
                    assert street not in seat["wagers"]
                    decided["fold"] += 1
                    break
                assert seat["wagers"][street] == multiple * ante, (record["round_id"], seat, street)
                decided[f"{multiple}x"] += 1
                units += multiple
            else:
                assert seat.get("folded_on") is None
    # The seeded run shows folds, 1x and 3x, so each branch of the comparison above was taken; the optimal strategy
    # never wagers 2x (a hand worth more than 1x is worth 3x: the payoff is linear in the wager).
    assert decided["fold"] and decided["1x"] and decided["3x"] and not decided["2x"], decided


async def test_let_it_ride_players_ride_and_withdraw_as_the_strategy_says(tmp_path: Path) -> None:
    """643a.11(c): Bet Number 1 let ride or withdrawn on the player's three cards; 643a.11(d): Bet Number 2 on them and
    the first community card (Bet Number 3, and Bet Number 1 if it rides, riding), as the optimal strategy says."""
    config = load_config(ROOT / "configs" / "let-it-ride.toml")
    assert isinstance(config.game, LetItRideRules)
    strategy = let_it_ride_strategy(config.game.let_it_ride_paytable)
    records = await _records(config, tmp_path, rounds=25, seed=18)
    seen = {"bet_1 rides": 0, "bet_1 withdrawn": 0, "bet_2 rides": 0, "bet_2 withdrawn": 0}
    for record in records:
        community = record["community"]
        for seat in record["seats"]:
            cards = _index(seat["cards"])
            # 643a.11(c): on the player's three cards; 643a.11(d): and the first community card, Bet Number 3 and
            # Bet Number 1 (if it rides) riding.
            rides_1 = strategy.rides(cards, 2)
            assert seat.get("bet_1_withdrawn", False) is not rides_1, (record["round_id"], seat)
            rides_2 = strategy.rides([*cards, *_index(community[:1])], 1 + rides_1)
            assert seat.get("bet_2_withdrawn", False) is not rides_2, (record["round_id"], seat)
            seen[f"bet_1 {'rides' if rides_1 else 'withdrawn'}"] += 1
            seen[f"bet_2 {'rides' if rides_2 else 'withdrawn'}"] += 1
    assert all(seen.values()), seen


async def test_684a_players_raise_and_fold_as_the_strategy_says(tmp_path: Path) -> None:
    """684a.1: each player's Raise Wager, of the multiple the strategy names for his five cards, or his fold."""
    config = load_config(ROOT / "configs" / "chapter-684a.toml")
    assert isinstance(config.game, Chapter684aRules)
    # A Raise of four Antes paid 1 to 2: a Rules Submission under which many hands fold (the example raises all).
    game = Chapter684aRules.model_validate(
        {**config.game.model_dump(by_alias=True), "raise_multiples": [4], "raise_odds": "1 to 2"}
    )
    strategy = chapter_684a_strategy(game)
    records = await _records(config.model_copy(update={"game": game}), tmp_path, rounds=15, seed=18)
    seen = {"fold": 0, "raise": 0}
    for record in records:
        for seat in record["seats"]:
            multiple = strategy.decide(_index(seat["cards"]))
            assert seat.get("folded", False) is (multiple == 0), (record["round_id"], seat)
            assert seat["wagers"].get("raise", 0) == multiple * seat["wagers"]["ante"], (record["round_id"], seat)
            seen["fold" if multiple == 0 else "raise"] += 1
    assert all(seen.values()), seen


async def test_cajun_stud_players_raise_and_fold_as_the_strategy_says(tmp_path: Path) -> None:
    """683a.11(b), (d), (f): each Raise Wager, of the multiple the optimal strategy names for the player's two cards and
    the community cards turned so far, or his fold."""
    config = load_config(ROOT / "configs" / "cajun-stud.toml")
    assert isinstance(config.game, CajunStudRules)
    strategy = cajun_stud_strategy(config.game.ante_paytable)
    records = await _records(config, tmp_path, rounds=25, seed=18)
    assert len(records) == 25
    decided = {"fold": 0, "1x": 0, "2x": 0, "3x": 0}
    for record in records:
        community = record["community_cards"]
        for seat in record["seats"]:
            ante = seat["wagers"]["ante"]
            units = 1
            for k, spot in enumerate(("raise_1", "raise_2", "raise_3")):
                multiple = strategy.decide(_index(seat["cards"] + community[:k]), units)
                if multiple == 0:
                    assert seat["decisions"] == ["raise"] * k + ["fold"], (record["round_id"], seat, spot)
                    assert spot not in seat["wagers"]
                    decided["fold"] += 1
                    break
                assert seat["wagers"][spot] == multiple * ante, (record["round_id"], seat, spot)
                decided[f"{multiple}x"] += 1
                units += multiple
            else:
                assert seat["decisions"] == ["raise"] * 3
    assert decided["fold"] and decided["1x"] and decided["3x"] and not decided["2x"], decided


async def test_three_card_prime_players_play_and_fold_as_the_strategy_says(tmp_path: Path) -> None:
    """679a.7(d)(1): a Play Wager equal to the Ante where the strategy plays the player's three cards, else a fold."""
    config = load_config(ROOT / "configs" / "three-card-prime.toml")
    assert isinstance(config.game, ThreeCardPrimeRules)
    strategy = three_card_prime_strategy(config.game)
    records = await _records(config, tmp_path, rounds=25, seed=18)
    assert len(records) == 25
    seen = {"play": 0, "fold": 0}
    for record in records:
        for seat in record["seats"]:
            # 679a.7(d)(1): a Play Wager equal to the Ante on the player's three cards as the strategy says (Q-6-4 or
            # better under the Rules Submission's ranking), else a fold; a Pair Bonus fourth card changes nothing.
            plays = strategy.decide(_index(seat["cards"]))
            assert seat.get("folded", False) is not plays, (record["round_id"], seat)
            assert seat["wagers"].get("play", 0) == (seat["wagers"]["ante"] if plays else 0), (record["round_id"], seat)
            seen["play" if plays else "fold"] += 1
    assert all(seen.values()), seen


def test_optimal_players_are_offered_beside_the_random_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Every chapter with an analysis has a strategy now (679a included); NoStrategy, for a chapter without one, is
    # tested directly on such rules in tests/par/test_three_card_prime.py.
    config = load_config(ROOT / "configs" / "three-card-prime.toml")
    assert isinstance(policy_for("optimal", random.Random(1), config), OptimalPolicy)
    assert isinstance(policy_for("random", random.Random(1), config), RandomPolicy)
    assert isinstance(policy_for("optimal", random.Random(1), demo_config()), OptimalPolicy)
    # `tablectl simulate --players optimal`: the rounds beyond the scripted ones are the optimal players'.
    beyond = ScenarioPolicy([], random.Random(1), demo_config(), "optimal")
    assert (
        beyond.decide(
            1,
            1,
            DecisionRequest("street_3", "street_3", "wager_or_fold", (500, 1000, 1500), ("Ah", "As"), (("ante", 500),)),
        )
        == 1500
    )  # any pair: 3x
    other = str(ROOT / "configs" / "three-card-prime.toml")
    demo = ["demo", "--config", other, "--players", "optimal", "--rounds", "1", "--pace", "0"]
    # The round is the subject, not its messages: without --broker the demo would publish to whatever broker listens
    # on 127.0.0.1:1883 (another run's, a developer's). A port bound here and never listened on refuses it for sure,
    # and the demo plays on with its events kept in the journal.
    # Its journal in a state dir of its own: not ~/.local/state/tablectl/tcp-table-01.sqlite, shared with every other
    # run and xdist worker on the machine (and grown by each).
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as closed:
        closed.bind(("127.0.0.1", 0))
        demo += ["--broker", f"mqtt://127.0.0.1:{closed.getsockname()[1]}"]
        # In this process, not a child: the command line is the same, and 679a's strategy (3 s of analysis) is the one
        # this module's 679a test found, not found again.
        done = in_process(capsys, *demo)
    assert (tmp_path / "tablectl" / "tcp-table-01.sqlite").is_file()
    # Once refused ("chapter 679a has no optimal strategy yet"), 679a's optimal players now play a round.
    assert done.returncode == 0, done.stderr
    assert "tablectl: 1 round(s) played" in done.stderr
