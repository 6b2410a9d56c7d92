"""One player on several boxes, in a round record: the boxes that share a `player` are one player's, at most the
number the Rules Submission allows and side by side (643a.7(k), 655a.7(e), 683a.7(e)); a box without one is a player
of its own. The live table binds them the same way (controller.engine.players) and records the binding."""

from __future__ import annotations

from collections.abc import Iterable

from controller.core.settlement import SettlementError
from controller.engine.spec import SeatView


def player_key(seat: int, player: str | None) -> str:
    """Who holds a box, for grouping: the recorded player, else the box itself (a player of its own)."""
    return f"player {player}" if player is not None else f"seat {seat}"


def player_name(seat: SeatView) -> str | None:
    """The record's `player` of a box the live table bound to others: its table-local number."""
    return None if seat.player is None else str(seat.player)


def check_boxes(seats: Iterable[tuple[int, str | None]], limit: int, rule: str, setting: str) -> None:
    """Refuse a record whose player holds more boxes than `limit` or boxes that are not adjacent, naming the fix."""
    boxes: dict[str, list[int]] = {}
    for seat, player in seats:
        if player is not None:
            boxes.setdefault(player, []).append(seat)
    for player, held in boxes.items():
        held.sort()
        if len(held) > limit or held != list(range(held[0], held[0] + len(held))):
            raise SettlementError(
                f"seats: player {player!r} wagers on boxes {held}, but {rule} allows at most {limit} adjacent "
                f"box(es) ({setting}): correct seats[].player"
            )
