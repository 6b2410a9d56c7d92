"""When an acknowledgement of the lost session's alert stands (floor/console/floor_alerts.py, pure): a resend that
shrinks or splits a gap keeps it (carry_since keeps the gap's first time), a gap opening after it raises the alert
again, and an acknowledgement of another loss is not this one's."""

from __future__ import annotations

from datetime import UTC, datetime

from floor.console.floor_alerts import SessionAck, acknowledged, session_alerts
from floor.gaps import carry_since
from floor.live import TableLive

LOST, OPENED, ACKED, LATER = (f"2026-11-27T10:00:0{s}.000000Z" for s in (0, 1, 5, 8))
NOW = datetime(2026, 11, 27, 10, 0, 9, tzinfo=UTC)
ACK = SessionAck(LOST, "sue.sup", ACKED)


def table(gaps: list[list[int]], since: list[str]) -> dict[str, TableLive]:
    t = TableLive("t1")
    t.gaps, t.gap_since = gaps, since
    return {"t1": t}


def test_a_gap_split_by_a_resend_keeps_the_acknowledgement() -> None:
    split = carry_since([[4, 9]], [OPENED], [(4, 5), (8, 9)], LATER)
    assert split == [OPENED, OPENED]
    live = table([[4, 5], [8, 9]], split)
    assert acknowledged(LOST, live, ACK) == ACK
    [alert] = session_alerts(LOST, live, NOW, 30.0, ACK)
    assert alert["ack"] == {"by": "sue.sup", "at": ACKED}
    assert alert["text"].endswith(f"; acknowledged by sue.sup at {ACKED}"), alert["text"]


def test_a_gap_opening_after_the_acknowledgement_raises_the_alert_again() -> None:
    live = table([[4, 5], [12, 12]], [OPENED, LATER])
    assert acknowledged(LOST, live, ACK) is None
    [alert] = session_alerts(LOST, live, NOW, 30.0, ACK)
    assert alert["ack"] is None and "acknowledged" not in alert["text"]


def test_an_acknowledgement_of_another_loss_is_not_this_ones() -> None:
    live = table([[4, 5]], [LATER])
    assert acknowledged(LATER, live, ACK) is None
    assert acknowledged(LOST, live, None) is None
