"""Cards and decks: parsing, the standard 52-card deck, and integrity checks.

Poker evaluators elsewhere accept duplicate cards; a table controller must not, because a duplicate
or foreign card on the table is an irregularity, not a hand.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from controller.core.spaces import strip_ascii

RANKS = "23456789TJQKA"
SUITS = "cdhs"
SUIT_NAMES = {"c": "clubs", "d": "diamonds", "h": "hearts", "s": "spades"}
STANDARD_DECK: tuple[str, ...] = tuple(r + s for s in SUITS for r in RANKS)
_STANDARD = frozenset(STANDARD_DECK)


class CardError(ValueError):
    """A card string or a set of cards that cannot be on a Mississippi Stud table."""


def parse_card(text: str) -> str:
    """Canonical two-character form of a card: 'As', 'Td'; accepts '10d' and lower/upper case. Only the 52 cards of a
    deck: four suits (603a.15(b)) of thirteen cards (603a.15(c)); a joker is refused, as no game here allows one
    (603a.15(a))."""
    raw = strip_ascii(text)
    if raw[:2] == "10":
        raw = "T" + raw[2:]
    if len(raw) != 2:
        raise CardError(f"{text!r} is not a card: write rank then suit, e.g. 'As', 'Td' or '10d'")
    rank, suit = raw[0].upper(), raw[1].lower()
    if rank not in RANKS or suit not in SUITS:
        raise CardError(f"{text!r} is not a card: rank must be one of {RANKS}, suit one of {SUITS}")
    return rank + suit


def rank_value(card: str) -> int:
    """2..14, ace high."""
    return RANKS.index(card[0]) + 2


def suit_of(card: str) -> str:
    return card[1]


def require_distinct(cards: Iterable[str]) -> list[str]:
    """Parse cards and refuse duplicates and foreign cards, naming the offenders."""
    parsed = [parse_card(c) for c in cards]
    dup = sorted(c for c, n in Counter(parsed).items() if n > 1)
    if dup:
        raise CardError(f"duplicate card(s) {', '.join(dup)}: one deck holds each card once")
    return parsed


def deck_problems(cards: Sequence[str]) -> list[str]:
    """What is wrong with a supposed full deck (empty when it is 52 distinct standard cards: 603a.15(a), 603a.15(b) and
    603a.15(c))."""
    problems: list[str] = []
    counts = Counter(cards)
    foreign = sorted(c for c in counts if c not in _STANDARD)
    dup = sorted(c for c, n in counts.items() if n > 1 and c in _STANDARD)
    missing = sorted(_STANDARD - set(counts))
    if len(cards) != 52:
        problems.append(f"{len(cards)} cards instead of 52")
    if foreign:
        problems.append(f"foreign card(s) {', '.join(foreign)}")
    if dup:
        problems.append(f"duplicate card(s) {', '.join(dup)}")
    if missing:
        problems.append(f"missing card(s) {', '.join(missing)}")
    return problems
