"""What blocks a simulated table, and who clears it (controller.people.floor): a floorperson, or the dealer alone."""

from __future__ import annotations

from controller.core.events import JournaledEvent

# Blocking conditions that only a floorperson can clear: a simulated table with nobody to clear them
# closes instead of waiting forever (when asked to: the demo waits, as a real table would).
STUCK = ("deck.removed", "table.blocked", "no_more_bets.refused")
# Blocks the simulated dealer clears alone: the idle table's inspection (.5(f)), on `cards.inspection_due`.
DEALERS_BLOCKS = frozenset({"idle_inspection"})


def dealer_clears(ev: JournaledEvent) -> bool:
    """A table blocked only for what the simulated dealer does anyway: nobody else is needed."""
    reasons = ev.payload.get("reasons")
    return ev.type == "table.blocked" and isinstance(reasons, dict) and set(reasons) <= DEALERS_BLOCKS


def deck_due(ev: JournaledEvent) -> bool:
    """A table blocked because a deck has been in play its hours (.3(c)): a new one must be verified."""
    reasons = ev.payload.get("reasons")
    return isinstance(reasons, dict) and "deck_change_due" in reasons
