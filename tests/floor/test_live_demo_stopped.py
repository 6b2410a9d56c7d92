"""The floor's live model of a table `tablectl demo` stopped on a block nobody in it clears
(controller/people/stuck.py): the tile says `stopped` from the journaled `demo.stopped`. Before, a chip count's stop
left the phase of the last event that moved the round (`dealing` at the lock-out), as if the table had died dealing.
Pure: the contract's messages as the demo publishes them."""

from __future__ import annotations

from typing import Any

import pytest

from controller.mqtt.contract import TableEvent
from floor.live import TableLive

pytestmark = [pytest.mark.floor]


def event(seq: int, type_: str, **payload: Any) -> TableEvent:
    return TableEvent.model_validate(
        {
            "event_id": f"t1-{seq}",
            "boot_id": "b1",
            "seq": seq,
            "ts": f"2026-11-27T12:00:{seq:02d}.000000Z",
            "table_id": "t1",
            "round_id": "t1-r000001",
            "type": type_,
            "rule": None,
            "payload": payload,
        }
    )


def test_a_demo_stopped_on_a_chip_count_shows_stopped_from_the_stop() -> None:
    live = TableLive("t1")
    for e in (
        event(1, "no_more_bets"),
        event(2, "lockout.confirmed"),
        event(3, "chip_count.mismatch", entered=2, accepted=1),
        event(4, "demo.stopped", closes=False, blocks={"chip_count": "chip count 2 does not equal the 1"}),
    ):
        live.apply_event(e)
    assert (live.phase, live.phase_since) == ("stopped", "2026-11-27T12:00:04.000000Z")
    assert live.round_id == "t1-r000001" and live.rounds_completed == 0


def test_a_table_stopped_at_once_shows_stopped_from_its_last_event() -> None:
    """SIGTERM (systemd's stop) or a second Ctrl-C mid-round: `table.stopped` is the journal's last event. Before, the
    tile kept the phase of the round's last step (`betting`) until the broker's will said offline."""
    live = TableLive("t1")
    for e in (
        event(1, "betting.opened"),
        event(2, "table.stopped", by="SIGTERM", phase="betting", round_no=1, policy="reopen_betting"),
    ):
        live.apply_event(e)
    assert (live.phase, live.phase_since) == ("stopped", "2026-11-27T12:00:02.000000Z")
