"""Outside text is read strictly: no final newline behind a `$` and no non-ASCII space where a plain one is meant.

Python's `$` also matches before a final "\\n", so `re.match(r"^...$")` took "50% of meter\\n", "$20,000\\n", a spot
name "ante\\n" and a device id "wager_station_3\\n" (which then named a device no table has); fullmatch() refuses them.
`str.strip()`/`str.split()` with no argument take every Unicode space, so `--meter mega=\\u3000100` priced a 100-cent
meter, a scenario's deck "Ah\\u3000Ad ..." read as two cards, a card " As" with an ideographic space parsed, and
TABLECTL_SIM_BAUD="\\u3000115200" set 115200 baud; each now strips and splits on ASCII whitespace only (re.ASCII's
\\s, controller/core/spaces.py) and the non-ASCII space is refused by the field's own check, naming it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.cli.par import _meters
from controller.cli.verb import UsageError
from controller.config.table import load_config
from controller.core.cards import STANDARD_DECK, CardError, parse_card
from controller.core.spaces import split_ascii, strip_ascii
from controller.games.let_it_ride.paytables import Amount, MeterShare, award
from controller.people.scenario import ScenarioError, parse_scenario
from drivers.reference.device import BadMessage
from drivers.reference.wager_station import require_spot
from drivers.sim.line import default_timing
from drivers.sim.script import SimScriptError, device_class, parse_sim_script
from drivers.vendor.alpha_sign.packets import parse_amount
from tests.floor.unicode_spaces import UNICODE_SPACES

ROOT = Path(__file__).resolve().parents[2]
STUD = load_config(ROOT / "configs" / "mississippi-stud.toml")
ASCII_SPACES = " \t\n\r\f\v"
ENDINGS = ["\n", "\r\n", "\n\n", " "]


@given(st.integers(1, 100), st.integers(0, 10**6), st.sampled_from(ENDINGS))
def test_a_paytable_award_takes_no_final_newline(percent: int, dollars: int, end: str) -> None:
    """643a.12's awards as the chapter writes them: '10% of meter', '$20,000'; with a final newline, no award."""
    assert award(f"{percent}% of meter") == MeterShare(percent) and award(f"${dollars:,}") == Amount(dollars * 100)
    for text in (f"{percent}% of meter{end}", f"${dollars:,}{end}"):
        with pytest.raises(ValueError, match="is not payout odds"):
            award(text)


@given(st.integers(1, 9), st.sampled_from(ENDINGS))
def test_device_ids_and_spots_take_no_final_newline(seat: int, end: str) -> None:
    assert device_class(f"wager_station_{seat}") == "wager_station" and device_class(f"wager_terminal_{seat}")
    assert device_class(f"wager_station_{seat}{end}") is None and device_class(f"wager_terminal_{seat}{end}") is None
    assert require_spot({"evt": "chip_on", "spot": "ante"}) == "ante"
    with pytest.raises(BadMessage, match="is not a spot name"):
        require_spot({"evt": "chip_on", "spot": f"ante{end}"})


@given(st.integers(0, 10**7))
def test_a_sign_amount_takes_no_final_newline(cents: int) -> None:
    text = b"$%s.%02d" % (f"{cents // 100:,}".encode(), cents % 100)
    assert parse_amount(text) == cents and parse_amount(text + b"\n") is None


@given(st.sampled_from(UNICODE_SPACES), st.integers(0, 2), st.sampled_from(["As", "Td", "10d", "ks"]))
def test_the_helpers_strip_and_split_on_ascii_whitespace_only(space: str, where: int, card: str) -> None:
    assert strip_ascii(f" \t{card}\r\n") == card and split_ascii(f"\n{card} \t {card}\f") == [card, card]
    assert split_ascii(" \t\n") == [] and space.isspace()
    spaced = [f"{space}{card}", f"{card}{space}", f"{card}{space}{card}"][where]
    assert strip_ascii(spaced) == spaced and split_ascii(spaced) == [spaced]


@given(st.integers(0, 10**9), st.sampled_from(UNICODE_SPACES), st.sampled_from(["level", "amount"]), st.booleans())
def test_a_meter_on_the_command_line_is_spaced_in_ascii(cents: int, space: str, where: str, before: bool) -> None:
    """`tablectl par --meter mega=150`: a non-ASCII space around LEVEL or CENTS is refused, not dropped (a level that
    kept it would name no meter, and the par sheet would silently use the seed)."""
    assert _meters([f" mega\t= {cents}\n"]) == {"mega": cents}
    parts = {"level": "mega", "amount": str(cents)}
    parts[where] = space + parts[where] if before else parts[where] + space
    with pytest.raises(UsageError, match=r"write LEVEL=CENTS, the cents in ASCII digits 0-9"):
        _meters([f"{parts['level']}={parts['amount']}"])


@given(st.sampled_from(UNICODE_SPACES), st.sampled_from(STANDARD_DECK), st.booleans())
def test_a_card_is_spaced_in_ascii(space: str, card: str, before: bool) -> None:
    assert parse_card(f" {card}\n") == card
    with pytest.raises(CardError, match="is not a card"):
        parse_card(space + card if before else card + space)


def _scenario(deck: str) -> dict[str, Any]:
    return {"round": [{"deck": deck, "wagers": {"1": {"ante": 1000}}}]}


@given(st.sampled_from(UNICODE_SPACES), st.permutations(STANDARD_DECK), st.integers(0, 11))
def test_a_deck_string_is_spaced_in_ascii(space: str, deck: list[str], gap: int) -> None:
    """docs/scenarios.md: `deck = "Ah Ad 9c ..."` and a simulator script's decks: a non-ASCII space between two cards
    is refused, naming the place, where str.split() had read the two cards."""
    cards = deck[:13]
    assert parse_scenario(_scenario("\t".join(cards) + "\n"), STUD).decks[0][:13] == tuple(cards)
    assert parse_sim_script({"decks": [" ".join(cards)]}).decks == (tuple(cards),)
    spoiled = (
        " ".join(cards[:gap])
        + (" " if gap else "")
        + f"{cards[gap]}{space}{cards[gap + 1]} "
        + " ".join(cards[gap + 2 :])
    )
    with pytest.raises(ScenarioError, match=rf"round\[0\]\.deck\[{gap}\]: .* is not a card"):
        parse_scenario(_scenario(spoiled), STUD)
    with pytest.raises(SimScriptError, match=rf"decks\[0\]\[{gap}\]: .* is not a card"):
        parse_sim_script({"decks": [spoiled]})


@given(st.sampled_from(UNICODE_SPACES), st.integers(1200, 10**6), st.booleans())
def test_the_simulators_baud_is_spaced_in_ascii(space: str, baud: int, before: bool) -> None:
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TABLECTL_SIM_BAUD", f" {baud}\n")
        assert default_timing().baud == baud
        env.setenv("TABLECTL_SIM_BAUD", f"{space}{baud}" if before else f"{baud}{space}")
        with pytest.raises(ValueError, match=r"is not a whole number of baud, e\.g\. 115200"):
            default_timing()
