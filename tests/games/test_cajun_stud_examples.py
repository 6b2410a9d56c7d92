"""configs/cajun-stud.toml and every docs/examples/cajun-stud--*.settle.json: each example validates as a
CajunStudRound and settles with the config's [game] (validated with CajunStudRules directly, so this does
not depend on TableConfig's union of chapters)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from controller.core.settlement import Settled
from controller.games.cajun_stud.record import CajunStudRound
from controller.games.cajun_stud.rules import CajunStudRules
from controller.games.cajun_stud.settle import settle_round

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "cajun-stud.toml"
EXAMPLES = sorted((ROOT / "docs" / "examples").glob("cajun-stud--*.settle.json"))


def game() -> CajunStudRules:
    data = tomllib.loads(CONFIG.read_text(encoding="utf-8"))
    assert data["table_id"] == "cajun-table-01"
    return CajunStudRules.model_validate(data["game"])


def settle(name: str) -> list[Settled]:
    record = CajunStudRound.model_validate_json((ROOT / "docs" / "examples" / name).read_text(encoding="utf-8"))
    return settle_round(game(), record)


def rows(results: list[Settled], seat: int) -> list[tuple[str, str, int, int]]:
    return [(r.wager, r.outcome, r.paid, r.collected) for r in results if r.seat == seat]


def test_config_offers_every_optional_wager() -> None:
    g = game()
    assert g.chapter == "683a"
    assert set(g.optional_wagers) == {"pocket_bonus", "board_bonus", "lo_ball", "all_six_bonus"}
    assert (
        g.ante_paytable,
        g.pocket_bonus_paytable,
        g.board_bonus_paytable,
        g.lo_ball_paytable,
        g.all_six_bonus_paytable,
        g.payout_limit_cents,
    ) == ("B", "A", "C", "B", "E", 5_000_000)


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_settles_each_wager_once(example: Path) -> None:
    data = json.loads(example.read_text(encoding="utf-8"))
    assert data["chapter"] == "683a"
    results = settle(example.name)
    placed = sorted((s["seat"], w) for s in data["seats"] for w, a in s["wagers"].items() if a)
    assert sorted((r.seat, r.wager) for r in results) == placed
    for r in results:
        # 683a.13(d): a void round returns the Ante and Raise Wagers under that subsection.
        assert r.rule.startswith("683a.11(") or (data.get("community_exposed") and r.rule == "683a.13(d)")
        assert sorted([r.returned, r.collected]) == [0, r.amount]


def test_exposed_community_683a_13_d() -> None:
    """683a.13(d): every Ante and Raise Wager returned, the optional wagers settled under 683a.11(i): seat 2's pair of
    aces (Pocket Bonus 30 to 1, paytable A), the board's pair of kings (Board Bonus 1 to 1, paytable C), aces with
    Ac in the All-Six Bonus cards (three of a kind, 5 to 1, paytable E); seat 4's Lo Ball loses to the kings."""
    results = settle("cajun-stud--exposed-community.settle.json")
    assert [(r.seat, r.wager, r.outcome, r.paid, r.rule) for r in results] == [
        (5, "ante", "push", 0, "683a.13(d)"),
        (4, "ante", "push", 0, "683a.13(d)"),
        (4, "lo_ball", "lose", 0, "683a.11(i)(3)(i)"),
        (2, "ante", "push", 0, "683a.13(d)"),
        (2, "raise_1", "push", 0, "683a.13(d)"),
        (2, "pocket_bonus", "win", 15_000, "683a.11(i)(1)(ii)"),
        (2, "board_bonus", "win", 500, "683a.11(i)(2)(ii)"),
        (2, "all_six_bonus", "win", 500, "683a.11(i)(4)(ii)"),
    ]


def test_raises() -> None:
    """Trips pay 3 to 1 (683a.12(a) paytable B) and a pair of queens 5 to 1 on the Pocket Bonus (683a.12(b) paytable A);
    a losing hand loses the Ante and Raises (683a.11(h)(2)); a pair of 7s pushes them (683a.12(a) "Push")."""
    results = settle("cajun-stud--raises.settle.json")
    # Seat 5: trips, 3 to 1 in 683a.12(a) paytable B, on raises of 2x, 3x and 1x the $10 Ante; pair of
    # queens 5 to 1 in 683a.12(b) paytable A.
    assert rows(results, 5) == [
        ("ante", "win", 3000, 0),
        ("raise_1", "win", 6000, 0),
        ("raise_2", "win", 9000, 0),
        ("raise_3", "win", 3000, 0),
        ("pocket_bonus", "win", 2500, 0),
    ]
    # Seat 3: Q-J-T-9-4 loses the Ante and Raises (683a.11(h)(2)); queen high pushes Lo Ball in paytable B.
    assert rows(results, 3)[-1] == ("lo_ball", "push", 0, 0)
    assert sum(c for *_, c in rows(results, 3)) == 2000
    # Seat 1: a pair of 7s pushes every Ante and Raise (683a.12(a) "Push"); the Board Bonus loses.
    assert [r.outcome for r in results if r.seat == 1] == ["push"] * 4 + ["lose"]
    assert [r.seat for r in results] == [5] * 5 + [3] * 5 + [1] * 5


def test_fold_with_bonuses() -> None:
    """Seat 6's four aces pay 50 to 1 on the All-Six Bonus (683a.12(e) paytable E)."""
    results = settle("cajun-stud--fold-with-bonuses.settle.json")
    # The forfeits come first, at the decision where each player folded (683a.11(b), (d), (f)).
    assert [(r.seat, r.wager, r.rule) for r in results[:6]] == [
        (4, "ante", "683a.11(b)"),
        (1, "ante", "683a.11(d)"),
        (1, "raise_1", "683a.11(d)"),
        (2, "ante", "683a.11(f)"),
        (2, "raise_1", "683a.11(f)"),
        (2, "raise_2", "683a.11(f)"),
    ]
    # Seat 4 folded at once but its optional wagers stand: board pair 1 to 1 wins, the others lose.
    assert rows(results, 4)[1:] == [
        ("pocket_bonus", "lose", 0, 500),
        ("board_bonus", "win", 500, 0),
        ("all_six_bonus", "lose", 0, 100),
    ]
    assert rows(results, 2)[-1] == ("board_bonus", "win", 100, 0)
    # Seat 6: two pair 3 to 2 (paytable B), pair of aces 30 to 1, four aces 50 to 1 (683a.12(e) paytable E).
    assert rows(results, 6) == [
        ("ante", "win", 1500, 0),
        ("raise_1", "win", 1500, 0),
        ("raise_2", "win", 1500, 0),
        ("raise_3", "win", 1500, 0),
        ("pocket_bonus", "win", 15000, 0),
        ("all_six_bonus", "win", 5000, 0),
    ]


def test_lo_ball() -> None:
    results = settle("cajun-stud--lo-ball.settle.json")
    lo = {r.seat: (r.hand, r.outcome, r.paid, r.collected) for r in results if r.wager == "lo_ball"}
    assert lo == {
        6: ("eight_high", "win", 50_000, 0),
        5: ("nine_high", "win", 5000, 0),
        3: ("queen_high", "push", 0, 0),
        2: ("king_high", "lose", 0, 500),
    }


def test_payout_limit() -> None:
    """The aggregate payout limit per player per round (683a.12(f)) caps seats 3 and 4 together; the Pocket Bonus is
    outside it."""
    results = settle("cajun-stud--payout-limit.settle.json")
    # card-2201 plays boxes 3 and 4: seat 4's royal flush settles first and takes the whole $50,000 of
    # 683a.12(f); seat 3's straight flush then pays nothing beyond the returned wagers. The Pocket Bonus is
    # not under the limit. card-3310 on seat 6 has a limit of his own.
    assert sum(r.paid for r in results if r.seat in (3, 4) and r.wager != "pocket_bonus") == 5_000_000
    assert rows(results, 4)[-1] == ("pocket_bonus", "win", 10_000, 0)
    assert [r.paid for r in results if r.seat == 3] == [0, 0, 0, 0]
    assert sum(r.returned for r in results if r.seat == 3) == 50_000
    assert sum(r.paid for r in results if r.seat == 6) == 200_000
