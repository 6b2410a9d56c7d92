"""What a chapter says about the paytables in force, for the table's birth message (docs/mqtt.md, birth).

Each chapter package turns its own paytable shapes into `PaytableText` rows; controller.mqtt.birth publishes
them as they are. Rows are keyed by the hand's name in lower case, valued by the award as the chapter writes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import TypeVar


@dataclass(frozen=True, slots=True)
class PaytableText:
    """One paytable in force: the wager it pays, its citation, the letter the Rules Submission chose (None for
    the chapter's only table) and its rows, hand -> award."""

    wager: str
    citation: str
    letter: str | None
    rows: Mapping[str, str]


# A row's key: a hand class of the chapter's rankings, or a name the Rules Submission gives.
Key = TypeVar("Key", bound=IntEnum | str)


def rows_text(rows: Mapping[Key, object]) -> dict[str, str]:
    """hand -> award text: a hand class by its name in lower case, a name of the Rules Submission as it is."""
    return {(k.name.lower() if isinstance(k, IntEnum) else str(k)): str(v) for k, v in rows.items()}
