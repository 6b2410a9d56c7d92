"""Random draws a table game system makes during a round (Magic Card, Lucky Bonus seat).

They come from the operating system's cryptographically secure generator, are journaled with the round
and are part of its record, so a disputed round settles again to the same result.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

from controller.core.cards import STANDARD_DECK


def draw_magic_card() -> str:
    """655a.1 Magic Card Bonus: a card chosen at random by the table game system."""
    return secrets.choice(STANDARD_DECK)


def draw_lucky_seat(seats: Sequence[int]) -> int:
    """655a.1 Lucky Bonus: a betting position chosen at random by the table game system."""
    if not seats:
        raise ValueError("no seat to draw from")
    return secrets.choice(list(seats))
