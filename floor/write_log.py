"""What an archive write found, said to the operator: integrity alarms at error level with their remedy, seq gaps
opened and filled (floor/service.py logs each batch's result here)."""

from __future__ import annotations

import structlog

from floor.archive import WriteResult

log = structlog.get_logger("tablectl.floor")


def say_written(result: WriteResult) -> None:
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
