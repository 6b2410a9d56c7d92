"""What an archive write found, said to the operator: integrity alarms at error level with their remedy, seq gaps
opened and filled (floor/writing.py logs each batch's result here), and what a stop left unarchived."""

from __future__ import annotations

import structlog

from floor.archive import WriteResult
from floor.config import MqttSection
from floor.gaps import OpenGap, resend_command
from floor.messages import Incoming, LinkIncoming, Rejected

# Retained messages named one by one in a batch's debug line; past this many, counted (a reconnect's flood of them).
RETAINED_NAMED = 20

log = structlog.get_logger("tablectl.floor")


def say_left(messages: int) -> None:
    """At the floor's stop: how many messages were received and not archived (the batch in hand, what queued behind
    it), if any. None was acknowledged, so the broker keeps them in the floor's session and sends them again."""
    if messages:
        log.warning(
            "floor stopped with messages not archived",
            messages=messages,
            then="not acknowledged: the broker keeps them in the floor's session and redelivers them at the next"
            " start (QoS 1; archiving is idempotent)",
        )


def say_written(result: WriteResult, messages: list[Incoming | LinkIncoming | Rejected] | None = None) -> None:
    if messages is not None:
        say_batch(messages, result)
    for alarm in result.alarms:
        log.error(
            "integrity alarm: a seq or event id arrived again with other content",
            kind=alarm.kind,
            table_id=alarm.table_id,
            seq=alarm.seq,
            archived_event_id=alarm.archived_event_id,
            received_event_id=alarm.received_event_id,
            remedy="the table's journal was rolled back or replaced: compare it with the archive "
            "(tablectl floor alarms) before play goes on",
        )
    for table_id, gaps in result.gaps_opened.items():
        log.warning("seq gap", table_id=table_id, missing=[f"{a}-{b}" if a != b else str(a) for a, b in gaps])
    for table_id, gaps in result.gaps_filled.items():
        log.info("seq gap filled", table_id=table_id, filled=[f"{a}-{b}" for a, b in gaps])


def retained_name(m: Incoming) -> str:
    """A retained message as the debug line names it: table, topic and what it says (`status online`, `device/shoe
    offline seq 12`, `birth <boot>`, `progressive/major as_of 40`)."""
    c = m.content
    if m.kind == "device":
        return f"{m.table_id} device/{c.get('device_id')} {c.get('state')} seq {c.get('seq')}"
    if m.kind == "meter":
        return f"{m.table_id} progressive/{c.get('level')} as_of {c.get('as_of_seq')}"
    if m.kind == "status":
        return f"{m.table_id} status {c.get('state')}"
    return f"{m.table_id} birth {str(c.get('boot_id'))[:8]}"


def say_batch(messages: list[Incoming | LinkIncoming | Rejected], result: WriteResult) -> None:
    """At debug level, each committed batch: its size, new events and the retained messages it took, in order, so
    where a device's status stopped between the broker and a console is in the log (`--log-level debug`)."""
    retained = [m for m in messages if isinstance(m, Incoming) and m.kind != "event"]
    log.debug(
        "batch archived",
        messages=len(messages),
        events_new=result.events_new,
        refused=result.rejected,
        retained=[retained_name(m) for m in retained[:RETAINED_NAMED]],
        retained_more=max(0, len(retained) - RETAINED_NAMED),
    )


def say_stale(g: OpenGap, mqtt: MqttSection) -> None:
    """A gap gone stale (floor/gaps.py), once: the table's own replay has not filled it; the command a person runs."""
    log.warning(
        "seq gap stale: the table's own replay has not filled it; send it a resend",
        table_id=g.table_id,
        missing=g.text,
        open_s=round(g.age_s),
        command=resend_command(g.table_id, (g.first_seq, g.last_seq), mqtt.broker, mqtt.prefix),
        remedy="run the command with your own key (any role), or press resend in the console",
    )
