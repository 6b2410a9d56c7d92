"""Magic Card and Lucky Bonus draws come from the OS's secure generator (secrets), over the right domain."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from controller.core import rng
from controller.core.cards import STANDARD_DECK


def test_draws_cover_their_domain() -> None:
    cards = {rng.draw_magic_card() for _ in range(3000)}
    assert cards <= set(STANDARD_DECK) and len(cards) > 45  # 3,000 draws leave a card out with p < 1e-20
    assert {rng.draw_lucky_seat([2, 4, 6]) for _ in range(300)} == {2, 4, 6}


def test_draws_use_the_secure_generator(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []

    def choice(seq: Sequence[object]) -> object:
        calls.append(seq)
        return seq[0]

    monkeypatch.setattr("controller.core.rng.secrets.choice", choice)
    assert rng.draw_magic_card() == STANDARD_DECK[0]
    assert rng.draw_lucky_seat([5]) == 5
    assert len(calls) == 2


def test_no_seat_to_draw() -> None:
    with pytest.raises(ValueError, match="no seat"):
        rng.draw_lucky_seat([])
