"""A batch of supervisor command payloads judged: the checks on the loop, the replay store's records on a thread.

The checks before the replay store's (size, JSON, envelope, table and verb, key, Ed25519 signature, freshness) are pure
CPU and touch no file, so they run on the event loop where the payloads already are. Only the commands that pass them
go to the replay store, whose one commit for the batch waits on SQLite's write lock in the journal's file (held through
a journal commit, and for ever by a hung disk: docs/journal.md) and so runs on the listener's `command-checks-<table>`
thread: one hand-off a batch, and none at all for a batch of junk (refused before any record). The records are
committed before any command is stepped, and the answers keep the payloads' order (docs/commands.md, "Replay").
"""

from __future__ import annotations

from datetime import datetime

import structlog

from controller.mqtt.offloop import JournalThread
from controller.supervisor.envelope import as_text
from controller.supervisor.gate import Accepted, Checked, CommandGate, Rejected
from controller.supervisor.replay import ReplayStore, ReplayStoreError

Payload = tuple[str, bytes]  # (topic, payload)


def _internal(err: BaseException) -> Rejected:
    return Rejected(
        "internal_error", f"the table could not check the command ({type(err).__name__}); see the table's log"
    )


def _precheck(
    gate: CommandGate, topic: str, payload: bytes, now: datetime, log: structlog.typing.FilteringBoundLogger
) -> Checked | Rejected:
    try:
        return gate.precheck(topic.rsplit("/", 1)[-1], payload, now)
    except Exception as err:  # a bug here must cost one command, not the listener
        log.exception("command check failed", topic=as_text(topic))
        return _internal(err)


def record_all(store: ReplayStore, checked: list[Checked], now: datetime, keep: float) -> list[str | None]:
    """On the checks' thread: each command's replay (why it is one), or None once recorded; all committed together.
    ReplayStoreError when that commit (or any record) failed: then none of them may be carried out."""
    out: list[str | None] = []
    with store.batch():
        for c in checked:
            try:
                out.append(store.seen_or_record(c.command, now, keep))
            except Exception:  # kept by the batch, which raises ReplayStoreError for it at its end
                break
    return out


async def judge(
    gate: CommandGate,
    thread: JournalThread,
    batch: list[Payload],
    now: datetime,
    log: structlog.typing.FilteringBoundLogger,
) -> list[Accepted | Rejected]:
    """Each payload's answer, in order."""
    pre = [_precheck(gate, topic, payload, now, log) for topic, payload in batch]
    checked = [p for p in pre if isinstance(p, Checked)]
    if not checked:  # junk only: no record to make, no hand-off
        return [p for p in pre if isinstance(p, Rejected)]
    store, keep = gate.store, gate.keep_seconds
    try:
        answers = iter(await thread.call(lambda: record_all(store, checked, now, keep)))
    except ReplayStoreError as err:
        log.error("supervisor commands not carried out: their replay records failed", error=str(err))
        reason = f"the table could not record the command against replay ({err}); send it again"
        return [p if isinstance(p, Rejected) else Rejected("internal_error", reason, *_named(p)) for p in pre]
    judged: list[Accepted | Rejected] = []
    for p in pre:
        if isinstance(p, Rejected):
            judged.append(p)
            continue
        judged.append(_conclude(gate, p, next(answers), log))
    return judged


def _named(c: Checked) -> tuple[str, str, str]:
    return c.command.command_id, c.command.verb, c.command.key_id


def _conclude(
    gate: CommandGate, checked: Checked, replay: str | None, log: structlog.typing.FilteringBoundLogger
) -> Accepted | Rejected:
    try:
        return gate.conclude(checked, replay)
    except Exception as err:  # a bug here must cost one command, not the listener
        log.exception("command check failed", command_id=checked.command.command_id)
        return _internal(err)
