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
        ConsoleVerb("player_left", _FLOOR, "Record that the seat's player left: his wagers are abandoned", "655a.7(b)"),
        ConsoleVerb(
            "release_held", _FLOOR, "Release the wagers held for a player who left: to him or to the house", "655a.7(b)"
        ),
        ConsoleVerb("acknowledge_tilt", _ALL, "Acknowledge the tilt (it stays until cleared)", "58 Pa. Code 643a/655a"),
        ConsoleVerb("clear_tilt", _SUP, "Clear the tilt: the table may go on", "58 Pa. Code 643a/655a"),
        ConsoleVerb("validate_jackpot", _FLOOR, "Validate the progressive payout", "655a.11(i)(1)(iii)"),
        ConsoleVerb(
            "reset_meter", _SUP, "Reset the progressive meter (audited; its amount stays owed)", "605a.7(a)(5)"
        ),
        ConsoleVerb(
            "cash_out_account",
            _FLOOR,
            "Cash out the seat's game account: an attendant pays the balance (its terminal cannot)",
            "605a.2(d)(1)",
        ),
        # Changes nothing at the table: whoever is at the console when a gap goes stale may ask (docs/commands.md).
        ConsoleVerb("resend", _ALL, "Ask the table to publish the gap's events again", "docs/mqtt.md, Resend"),
    )
}


# The link controller's verbs (link/commands.py: the same envelope, addressed to the link's id; a test holds the
# roles equal to the link's). Its set_parameters is not offered here: new figures are an administrator's change,
# made with `tablectl link send set_parameters` while the link is closed.
_LINK_FLOOR: frozenset[Role] = frozenset({"floorperson", "supervisor"})
LINK_RULE = "605a.8 (NY 9 NYCRR 5321.18 as the stand-in)"
LINK_VERBS: dict[str, ConsoleVerb] = {
    v.name: v
    for v in (
        ConsoleVerb(
            "validate_jackpot", _LINK_FLOOR, "Validate the linked hit: the link's books close it", "655a.11(i)(1)(iii)"
        ),
        ConsoleVerb("open_link", _SUP, "Put the link in operation (after its self-check balances)", LINK_RULE),
        ConsoleVerb("close_link", _SUP, "Take the link out of operation: its tables lock linked wagers out", LINK_RULE),
        ConsoleVerb("clear_tilt", _SUP, "Clear the link's tilt (the mismatch resolved): the link closes", LINK_RULE),
    )
}


def link_allowed(role: str) -> list[str]:
    """The link verbs a session of this role may send."""
    return [name for name, v in LINK_VERBS.items() if role in v.roles]


def allowed(role: str) -> list[str]:
    """The verbs a session of this role may send, in the table above's order."""
    return [name for name, v in VERBS.items() if role in v.roles]
