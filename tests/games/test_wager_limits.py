"""Per-wager table limits (`wager_limits` in [game], controller.games.limits): each optional wager's posted minimum and
maximum, the Ante's where the operator posts none; refused by the config when they cannot stand, enforced by the
round engine when a wager is placed and by `tablectl settle` on a round record, so both take the same wagers.

The live side on simulated devices is tests/e2e/test_procedures_e2e.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from controller.cli.main import main as tablectl
from controller.core.settlement import SettlementError
from controller.games.cajun_stud.record import CajunStudRound
from controller.games.cajun_stud.rules import CajunStudRules
from controller.games.cajun_stud.settle import settle_round
from controller.games.cajun_stud.spec import CajunStudSpec
from controller.games.chapter_684a.spec import Chapter684aSpec
from controller.games.let_it_ride.rules import LetItRideRules
from controller.games.let_it_ride.spec import LetItRideSpec
from controller.games.partial import NO_LIMIT_CENTS
from controller.games.three_card_prime.spec import ThreeCardPrimeSpec
from tests.engine.conftest import example_rules

ROOT = Path(__file__).resolve().parents[2]


def cajun(**kw: Any) -> CajunStudRules:
    return CajunStudRules.model_validate(
        {
            "chapter": "683a",
            "ante_paytable": "A",
            "optional_wagers": ["pocket_bonus", "all_six_bonus"],
            "pocket_bonus_paytable": "A",
            "all_six_bonus_paytable": "E",
            **kw,
        }
    )


def limits(spec: CajunStudSpec | LetItRideSpec, rules: Any) -> dict[str, tuple[int, int]]:
    return {o.spot: (o.min_cents, o.max_cents) for o in spec.offers(rules)}


def test_an_optional_wager_takes_its_own_limits_or_the_antes_683a_7_d() -> None:
    """683a.7(d)(2), (5): the All-Six Bonus at its posted $1 to $25, the Pocket Bonus at the Ante's $5 to $100."""
    rules = cajun(wager_limits={"all_six_bonus": {"min_cents": 100, "max_cents": 2500}})
    assert limits(CajunStudSpec(), rules) == {
        "ante": (500, 10_000),
        "pocket_bonus": (500, 10_000),
        "all_six_bonus": (100, 2500),
    }
    # A bound left out is the Ante's.
    assert limits(CajunStudSpec(), cajun(wager_limits={"pocket_bonus": {"max_cents": 2000}}))["pocket_bonus"] == (
        500,
        2000,
    )


@pytest.mark.parametrize(
    ("wager_limits", "message"),
    [
        ({"lo_ball": {"min_cents": 100}}, "wager_limits.lo_ball: this table does not offer the lo_ball wager"),
        ({"pocket_bonus": {"min_cents": 3000, "max_cents": 2000}}, "the minimum 3000 is above the maximum 2000"),
        ({"pocket_bonus": {"min_cents": 20_000}}, "(a bound left out is the Ante's)"),
        ({"pocket_bonus": {"min_cents": 0}}, "greater than 0"),
        ({"pocket_bonus": {"least": 100}}, "Extra inputs are not permitted"),
    ],
)
def test_limits_that_cannot_stand_are_refused_naming_the_fix(wager_limits: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError) as err:
        cajun(wager_limits=wager_limits)
    assert message in str(err.value)


def _all_six_round(amount: int) -> CajunStudRound:
    return CajunStudRound.model_validate(
        {
            "chapter": "683a",
            "community_cards": ["9s", "9h", "2c"],
            "all_six_bonus_cards": ["Ac", "Ad", "Kc", "5h"],
            "seats": [
                {
                    "seat": 2,
                    "cards": ["Ah", "As"],
                    "decisions": ["fold"],
                    "wagers": {"ante": 500, "all_six_bonus": amount},
                }
            ],
        }
    )


def test_settle_takes_what_the_live_table_takes_683a_7_d_5() -> None:
    """The issue's case: a $1 All-Six Bonus Wager is refused live at the Ante's $5 minimum, so settle refuses it too;
    with a posted $1 minimum both take it (683a.7(d)(5)), and four aces win 50 to 1 (683a.12(e) paytable E)."""
    with pytest.raises(SettlementError, match=r"seats\[0\]\.wagers\.all_six_bonus = 100: outside the table's limits "):
        settle_round(cajun(), _all_six_round(100))
    rules = cajun(wager_limits={"all_six_bonus": {"min_cents": 100}})
    [ante, six] = settle_round(rules, _all_six_round(100))
    assert (ante.wager, ante.rule, six.wager, six.hand, six.paid) == (
        "ante",
        "683a.11(b)",
        "all_six_bonus",
        "four_of_a_kind",
        5000,
    )
    with pytest.raises(SettlementError, match=r"\$1\.00 to \$100\.00 .*683a\.7\(d\)\(5\)"):
        settle_round(rules, _all_six_round(10_100))


def test_let_it_ride_three_card_bonus_limits_643a_7_f() -> None:
    """643a.7(f): the Three Card Bonus Wager's own limits, the bets' by default; the Five Card Bonus keeps its one
    size (643a.12(b) pays fixed amounts)."""
    base = example_rules("643a").model_dump()
    base.update(
        three_card_bonus=True, three_card_bonus_paytable="A", five_card_bonus=True, five_card_bonus_paytable="A"
    )
    plain = LetItRideRules.model_validate(base)
    posted = LetItRideRules.model_validate({**base, "wager_limits": {"three_card_bonus": {"min_cents": 100}}})
    assert limits(LetItRideSpec(), plain)["three_card_bonus"] == (plain.bet_min_cents, plain.bet_max_cents)
    assert limits(LetItRideSpec(), posted)["three_card_bonus"] == (100, plain.bet_max_cents)
    assert limits(LetItRideSpec(), posted)["five_card_bonus"] == (100, 100)
    with pytest.raises(ValidationError, match=r"wager_limits\.five_card_bonus: this table does not offer"):
        LetItRideRules.model_validate({**base, "wager_limits": {"five_card_bonus": {"min_cents": 100}}})


@pytest.mark.parametrize("chapter", ["679a", "684a"])
def test_partial_chapters_post_the_ante_and_every_wager_from_it(chapter: str) -> None:
    """679a.7(d), 684a.1: the texts fix no limits; without a posted Ante limit a wager is any positive amount, with
    one each other wager takes the Ante's unless it has its own."""
    spec = ThreeCardPrimeSpec() if chapter == "679a" else Chapter684aSpec()
    rules = example_rules(chapter)
    free = {o.spot: (o.min_cents, o.max_cents) for o in spec.offers(rules)}  # type: ignore[arg-type]
    assert set(free.values()) == {(1, NO_LIMIT_CENTS)}
    other = "pair_bonus" if chapter == "679a" else "odds"
    posted = type(rules).model_validate(
        {
            **rules.model_dump(by_alias=True),
            "wager_limits": {"ante": {"min_cents": 500, "max_cents": 10_000}, other: {"min_cents": 100}},
        }
    )
    got = {o.spot: (o.min_cents, o.max_cents) for o in spec.offers(posted)}  # type: ignore[arg-type]
    assert got["ante"] == (500, 10_000) and got[other] == (100, 10_000)
    assert all(v == (500, 10_000) for k, v in got.items() if k not in ("ante", other))


def test_check_config_names_limits_that_cannot_stand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`tablectl check-config` refuses a config whose posted limits cannot stand, naming the wager and the fix."""
    config = ROOT / "configs" / "cajun-stud.toml"
    bad = tmp_path / "cajun.toml"
    bad.write_text(
        config.read_text().replace(
            "lo_ball = { min_cents = 100, max_cents = 2500 }", "lo_ball = { min_cents = 3000, max_cents = 2500 }"
        )
    )
    assert tablectl(["check-config", str(bad)]) != 0
    out = capsys.readouterr().out
    assert "error: game: wager_limits.lo_ball: the minimum 3000 is above the maximum 2500: give min_cents" in out
    assert tablectl(["check-config", str(config)]) == 0
