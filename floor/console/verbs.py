"""The supervisor verbs as the console offers them: who may use each, what its confirmation says and the rule it
serves (pure).

The tables judge every command (controller/supervisor/gate.py); this table only decides which buttons a session
sees and refuses a verb its role could never sign before bothering a table. The floor may not import the
controller's supervisor package (pyproject.toml's layering), so tests/console/test_console_unit.py holds this
table equal to controller.supervisor.verbs' verbs and roles.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Role = Literal["floorperson", "supervisor", "technician"]
ROLES: tuple[Role, ...] = ("floorperson", "supervisor", "technician")


@dataclass(frozen=True, slots=True)
class ConsoleVerb:
    name: str
    roles: frozenset[Role]
    confirm: str  # what the confirmation says the command does
    rule: str  # the subsection it serves, in the table's own chapter (the table cites its own in its events)


_ALL: frozenset[Role] = frozenset(ROLES)
_FLOOR: frozenset[Role] = frozenset({"floorperson", "supervisor"})
_TECH: frozenset[Role] = frozenset({"technician", "supervisor"})
_SUP: frozenset[Role] = frozenset({"supervisor"})

VERBS: dict[str, ConsoleVerb] = {
    v.name: v
    for v in (
        ConsoleVerb("open_table", _SUP, "Open the table for gaming", "655a.4"),
        ConsoleVerb("close_table", _SUP, "Close the table (after the round in progress)", "655a.4"),
        ConsoleVerb("verify_deck", _FLOOR, "Verify the new deck at the table", "655a.4(a)"),
        ConsoleVerb("verify_inspection", _FLOOR, "Verify the dealer's inspection of the cards", "655a.4(a)"),
        ConsoleVerb("floorperson_decision", _FLOOR, "Record a floorperson's ruling", "655a.5(a)"),
        ConsoleVerb(
            "mark_out_of_order", _TECH, "Cover the device as out of order: another method takes over", "655a.13(g)"
        ),
        ConsoleVerb("back_in_service", _TECH, "Put the repaired device back in service", "655a.13(g)"),
        ConsoleVerb("bind_player", _FLOOR, "Bind adjacent boxes to one player for the session", "643a.7(k)"),
        ConsoleVerb("acknowledge_tilt", _ALL, "Acknowledge the tilt (it stays until cleared)", "58 Pa. Code 643a/655a"),
        ConsoleVerb("clear_tilt", _SUP, "Clear the tilt: the table may go on", "58 Pa. Code 643a/655a"),
        ConsoleVerb("validate_jackpot", _FLOOR, "Validate the progressive payout", "655a.11(i)(1)(iii)"),
    )
}


def allowed(role: str) -> list[str]:
    """The verbs a session of this role may send, in the table above's order."""
    return [name for name, v in VERBS.items() if role in v.roles]
