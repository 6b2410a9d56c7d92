"""`tablectl par` answers every table config in configs/ (the floor's config is refused, saying why), in text, JSON
and HTML, through the real command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from controller.cli.main import main
from controller.config.table import load_config
from controller.games.three_card_prime.rules import ThreeCardPrimeRules
from controller.par import cajun_stud, let_it_ride, mississippi_stud, three_card_prime
from controller.par.analyse import meter_levels, three_card_prime_strategy
from controller.par.render import as_html, as_json, as_text
from tests.par.sheets import CONFIGS, sheet_of

# One worker runs the module, with the other par modules: each game's sheet analysed once (tests/par/sheets.py).
pytestmark = pytest.mark.xdist_group("par_sheets")
# The floor service's and the linked progressive controller's configs (605a.8) are not a table's.
TABLES = sorted(p for p in CONFIGS.glob("*.toml") if p.name not in ("floor.toml", "link.toml"))


@pytest.mark.parametrize("path", TABLES, ids=lambda p: p.stem)
def test_every_table_config_gets_a_par_sheet(path: Path) -> None:
    config, sheet = sheet_of(path)
    text, data, page = as_text(sheet), json.loads(as_json(sheet)), as_html(sheet)
    # What `par --meter` accepts is what the sheet is evaluated at, known before the (seconds long) analysis.
    evaluated = {level for w in sheet.wagers if w.progressive for level in w.progressive.meters_cents}
    assert set(meter_levels(config.game)) == evaluated
    assert data["chapter"] == config.game.chapter
    assert data["software"]["analysis_sha256"] in page
    if config.game.chapter in ("655a", "643a", "679a", "683a"):
        main_game = data["wagers"][0]
        assert main_game["wager"] in ("ante", "bet")
        num, den = map(int, main_game["house_edge"]["exact"].split("/"))
        # 679a's example Rules Submission pays no Ante Bonus: its Ante and Play hold more (7.68 %); 683a.12(a) paytable
        # B, the cajun-stud configs', pays two pair 3 to 2 and holds 15.23 % (docs/par.md).
        bound = {"679a": 0.08, "683a": 0.16}.get(config.game.chapter, 0.06)
        assert 0 < num / den < bound
        assert "house edge" in text and "<table>" in page
    elif config.game.chapter == "684a":
        # The example Rules Submission, priced with this sheet: 7.0 % of the Ante (docs/par.md).
        assert data["wagers"][0]["house_edge"]["exact"] == "221518641/3164004844"
        assert not data["not_analysed"] and "house edge" in text
    else:
        assert data["not_analysed"] and "no exact analysis" in text


def test_the_command_line_prints_json_and_evaluates_at_a_given_meter(capsys: pytest.CaptureFixture[str]) -> None:
    config = str(CONFIGS / "mississippi-stud-progressive.toml")
    assert main(["par", "--config", config, "--format", "json"]) == 0
    seeded = json.loads(capsys.readouterr().out)
    progressive = next(w for w in seeded["wagers"] if w["wager"] == "progressive")
    level = progressive["progressive"]["levels"][0]["level"]
    assert main(["par", "--config", config, "--format", "json", "--meter", f"{level}=100000000"]) == 0
    high = json.loads(capsys.readouterr().out)
    high_prog = next(w for w in high["wagers"] if w["wager"] == "progressive")
    # A higher meter returns more: the house edge falls.
    assert high_prog["house_edge"]["value"] < progressive["house_edge"]["value"]


def test_the_floor_config_and_a_bad_meter_are_refused_with_the_fix() -> None:
    floor = subprocess.run(
        [sys.executable, "-m", "controller.cli", "par", "--config", str(CONFIGS / "floor.toml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert floor.returncode == 2
    assert "floor service's config, not a table's" in floor.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "controller.cli", "par", "--config", str(CONFIGS / "let-it-ride.toml"), "--meter", "x"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2 and "write LEVEL=CENTS" in bad.stderr


def test_a_wager_returning_more_than_it_takes_is_flagged_in_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    """Past its break-even meter ($214,596.05 at 655a, docs/par.md) the Five Card Hand Bonus pays out more than it
    takes: the sheet says so in a WARNING line (text, html) and a flag (json); at its $10,000 seed, nothing is
    flagged."""
    config = str(CONFIGS / "mississippi-stud-five-card-hand-bonus.toml")
    high = ["--meter", "five_card_hand_bonus=30000000"]  # $300,000
    out: dict[str, str] = {}
    for fmt in ("text", "json", "html"):
        assert main(["par", "--config", config, "--format", fmt, *high]) == 0
        out[fmt] = capsys.readouterr().out
    flagged = {w["wager"] for w in json.loads(out["json"])["wagers"] if w["returns_more_than_it_takes"]}
    assert flagged == {"five_card_hand_bonus"}
    assert out["text"].count("WARNING: this wager returns more than it takes: five_card_hand_bonus pays") == 1
    assert "<p class='warning'><strong>WARNING: this wager returns more than it takes" in out["html"]
    assert main(["par", "--config", config, "--format", "json"]) == 0
    assert not any(w["returns_more_than_it_takes"] for w in json.loads(capsys.readouterr().out)["wagers"])
    assert main(["par", "--config", config]) == 0
    assert "WARNING" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("config", "meter", "said"),
    [
        # 655a.12(c)(1): the progressive's levels are named; `nolevel` was ignored and the sheet priced at the seeds.
        ("mississippi-stud-progressive.toml", "nolevel=500", "has no such meter; its meters are "),
        # 679a's sheet has no meter at all.
        ("three-card-prime.toml", "five_card_hand_bonus=500", "it has no progressive meter: give no --meter"),
        # 40 digits: a typo, not a meter; the cap and why are said.
        (
            "mississippi-stud-five-card-hand-bonus.toml",
            "five_card_hand_bonus=" + "9" * 40,
            "give at most 10,000,000,000",
        ),
        ("mississippi-stud-five-card-hand-bonus.toml", "five_card_hand_bonus=10000000001", "more than any table game"),
    ],
)
def test_a_meter_the_game_does_not_have_or_beyond_the_cap_is_refused(
    config: str, meter: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["par", "--config", str(CONFIGS / config), "--meter", meter]) == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err
    assert len(err.strip().splitlines()[-1]) < 300


def test_the_refusal_names_the_levels_the_chapter_has(capsys: pytest.CaptureFixture[str]) -> None:
    config = load_config(CONFIGS / "mississippi-stud-progressive.toml")
    levels = meter_levels(config.game)
    assert levels and "five_card_hand_bonus" not in levels
    assert main(["par", "--config", str(CONFIGS / "mississippi-stud-progressive.toml"), "--meter", "nolevel=500"]) == 2
    assert f"its meters are {', '.join(levels)}" in capsys.readouterr().err


def test_a_games_main_wagers_are_analysed_once_a_process_and_shared_read_only() -> None:
    """Every 655a config's sheet, and each sheet's pass at the maximum Ante, read the same main-game analysis: it is
    made once a process (a second `tablectl par` in one process, as the tests run it, took its seconds again), and its
    strategy is read-only, so no sheet or simulated player can change another's. 679a's is made once per set of
    rules (the Rules Submission's ranking is its own), and the sheet and the optimal players read the same."""
    prime = load_config(CONFIGS / "three-card-prime.toml").game
    assert isinstance(prime, ThreeCardPrimeRules)
    assert three_card_prime_strategy(prime) is three_card_prime.main_game(prime).strategy
    for analysed in (
        lambda: mississippi_stud.analyse_main(),
        lambda: mississippi_stud.analyse_main(500, 5_000_000),
        lambda: let_it_ride.analyse_main("A"),
        lambda: cajun_stud.analyse_main("B"),
        lambda: three_card_prime.main_game(prime),
    ):
        first = analysed()
        assert analysed() is first
    for decided in (
        mississippi_stud.analyse_main().strategy.third,
        let_it_ride.analyse_main("A").strategy.bet1,
        cajun_stud.analyse_main("B").strategy.fifth,
        three_card_prime.main_game(prime).strategy.plays,
    ):
        with pytest.raises(ValueError, match="read-only"):
            decided[0] = 0
