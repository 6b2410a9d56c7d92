"""What the engine consumes and what it asks of the shell, besides domain events.

Device events (drivers.interfaces) are inputs as they are; the controller adds its own below.
"""

from __future__ import annotations

from dataclasses import dataclass

from drivers.interfaces import DeviceEvent


@dataclass(frozen=True, slots=True)
class OpenTable:
    """The table opens for gaming (655a.4): the first shuffle starts."""


@dataclass(frozen=True, slots=True)
class CloseTable:
    """Close the table: at once between rounds, else when the round in progress is complete."""


Input = DeviceEvent | OpenTable | CloseTable


@dataclass(frozen=True, slots=True)
class Command:
    """A device command for the shell to carry out. target is a role: 'shuffler', 'shoe' or
    'wager_station' (with seat); the shell maps roles to configured devices."""

    target: str
    verb: str
    seat: int | None = None
    cards: int = 0
