"""What the chapters published only in part (679a Three Card Prime, 684a) share.

Of such a chapter only some subsections are available, so the rules the text does not fix come from the
certificate holder's Rules Submission (601a.2) as required settings of the [game] table, odds as the chapter would
write them ("1 to 1"), and a step of the round whose section is not available is cited as such rather than to a
section number the text does not confirm (PartialCitations).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeVar

from controller.core.money import Cents, Odds
from controller.core.settlement import Settled, fail, lose
from controller.engine.spec import Offer
from controller.games.describe import PaytableText
from controller.games.limits import Limits, WagerLimit, resolve

SUBMISSION = "Rules Submission (601a.2)"
# The largest signed 64-bit amount: "no table maximum" that still fits every consumer's integer type.
NO_LIMIT_CENTS: Cents = 2**63 - 1
RED = frozenset("dh")


def not_available(chapter: str, subject: str) -> str:
    """The citation of a step whose section of the chapter is not available."""
    return f"{chapter} (not available: {subject})"


class PartialCitations(Mapping[str, str]):
    """Citations of a chapter of which only some subsections are published.

    The engine asks for a step's citation by the common numbering (".13(a)", ".8(f)", ...) and, for a key it
    is not given, would cite `<chapter>.<key>`: for a partial chapter that names a subsection the text does not
    confirm. Here every key answers: the `named` citation, else `<chapter>.<key>` when that subsection is
    published, else a citation that says the chapter has no published text for the step. So a step the engine
    adds later is never cited to a section that may not exist.
    """

    def __init__(self, chapter: str, published: tuple[str, ...], named: Mapping[str, str]) -> None:
        self.chapter = chapter
        self.published = published
        self.named = dict(named)

    def __getitem__(self, key: str) -> str:
        if key in self.named:
            return self.named[key]
        if any(key == p or key.startswith(p + "(") for p in self.published):
            return f"{self.chapter}.{key}"
        return f"{self.chapter} (not available: the step other chapters cite as .{key})"

    def __iter__(self) -> Iterator[str]:
        return iter(self.named)

    def __len__(self) -> int:
        return len(self.named)


# -- the Rules Submission's settings -----------------------------------------------------------------------------


def required_settings(required: Mapping[str, str]) -> Callable[[Any], Any]:
    """A `mode="before"` model validator refusing a [game] table that leaves out a rule the available text does not
    fix, each with why it is needed and how to supply it, so the operator reads the fix in the message."""

    def check(data: Any) -> Any:
        if isinstance(data, dict):
            missing = [f"{k} is required: {why}" for k, why in required.items() if k not in data]
            if missing:
                raise ValueError("; ".join(missing))
        return data

    return check


def odds_text(text: str) -> str:
    """Use as a field validator: odds as the Rules Submission writes them ("1 to 1")."""
    Odds.parse(text)  # raises ValueError naming the text and the accepted forms
    return text


def check_odds_table(table: Mapping[str, str], known: Sequence[str], name: str) -> None:
    """A table of the Rules Submission: hand class -> odds, every class one the chapter knows."""
    unknown = sorted(set(table) - set(known))
    if unknown:
        raise ValueError(f"{name} names unknown hand class(es) {unknown}: use {', '.join(known)}")
    for text in table.values():
        odds_text(text)


def offers(
    spots: Iterable[str], wager_rule: Mapping[str, str], limits: Mapping[str, tuple[Cents, Cents]]
) -> list[Offer]:
    """The wagers a table takes before "no more bets", each with the rule that makes it and the table's posted
    `limits` (spot -> (min, max) cents); a wager without posted limits is any positive amount."""
    return [Offer(w, wager_rule[w], *limits.get(w, (1, NO_LIMIT_CENTS))) for w in spots]


def posted_limits(wager_limits: Mapping[str, WagerLimit], spots: Iterable[str]) -> dict[str, Limits]:
    """Each wager's posted (min, max) from the config's `wager_limits`: the Ante's own (no limit where it posts
    none; the available text fixes none), every other wager's own, else the Ante's."""
    ante = resolve(wager_limits, "ante", (1, NO_LIMIT_CENTS))
    return {w: ante if w == "ante" else resolve(wager_limits, w, ante) for w in spots}


# -- the round record ---------------------------------------------------------------------------------------------


def refuse_unoffered(
    at: str, wagers: Mapping[str, Cents], optional: Sequence[str], offered: Callable[[str], bool]
) -> None:
    """A seat's optional wagers are only those the Rules Submission offers (each with its table)."""
    for w in optional:
        if wagers.get(w) and not offered(w):
            raise fail(
                f"{at}.wagers.{w}",
                f"this table does not offer the wager: remove it or give {w}_paytable in the config's [game]",
            )


# -- settlement ------------------------------------------------------------------------------------------------


class FoldingSeat(Protocol):
    """A seat of a round record whose player may fold (make no Play or Raise Wager)."""

    @property
    def seat(self) -> int: ...
    @property
    def wagers(self) -> dict[str, Cents]: ...
    @property
    def folded(self) -> bool: ...


Seat = TypeVar("Seat", bound=FoldingSeat)


def settle_seats(
    seats: Sequence[Seat],
    optional: Sequence[str],
    wager_rule: Mapping[str, str],
    folded_optional_wagers: Literal["settled", "collected"],
    main: Callable[[Seat], list[Settled]],
    settle_optional: Callable[[Seat, str, Cents], Settled],
) -> list[Settled]:
    """Every wager of the round, seats counterclockwise from the dealer's right (descending seat number, as in the
    chapters whose completion of the round is published): per seat its main wagers, then each optional wager in
    `optional` order; a folded player's optional wagers collected with the hand where the Rules Submission says so."""
    out: list[Settled] = []
    for s in sorted(seats, key=lambda x: x.seat, reverse=True):
        out.extend(main(s))
        collect = s.folded and folded_optional_wagers == "collected"
        for w in optional:
            if amount := s.wagers.get(w):
                if collect:
                    out.append(
                        lose(
                            s.seat,
                            w,
                            amount,
                            wager_rule[w],
                            paytable=SUBMISSION,
                            note="collected with the folded hand (folded_optional_wagers)",
                        )
                    )
                else:
                    out.append(settle_optional(s, w, amount))
    return out


def prime_hand(cards: Sequence[str], paytable: Mapping[str, str] | None) -> tuple[str, str | None]:
    """The Prime Wager's hand (red, black or mixed_colors) and its row of the Rules Submission's table: every card
    of one color wins at the same_color odds."""
    colors = {c[1] in RED for c in cards}
    hand = ("red" if True in colors else "black") if len(colors) == 1 else "mixed_colors"
    row = (paytable or {}).get("same_color") if len(colors) == 1 else None
    return hand, row


# -- the birth message -----------------------------------------------------------------------------------------


def odds_text_of(name: str, odds: str) -> PaytableText:
    """A wager's odds against a qualified dealer, as the Rules Submission gives them (e.g. `ante_odds`)."""
    return PaytableText(
        wager=name.removesuffix("_odds"),
        citation=f"{SUBMISSION} {name}",
        letter=None,
        rows={"beats_qualified_dealer": odds},
    )


def table_text_of(name: str, table: Mapping[str, str] | None) -> list[PaytableText]:
    """A table of the Rules Submission (e.g. `prime_paytable`), when it is given."""
    if table is None:
        return []
    return [
        PaytableText(
            wager=name.removesuffix("_paytable"),
            citation=f"{SUBMISSION} {name}",
            letter=None,
            rows={str(k): str(v) for k, v in table.items()},
        )
    ]
