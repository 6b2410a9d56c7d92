"""`resend {from_seq, to_seq}`: the journal's events published again for a subscriber that missed them (a floor's seq
gap that a table's own replay never fills: a broker without persistence that acknowledged and died, a floor started
after the table published, a message a bridge dropped). docs/commands.md, "resend"; docs/mqtt.md, "Replay".

The rows come from the live journal and, for seqs archived since, from the archive's segment files
(controller.store.archive), read through their own read-only connections (WAL: the daemon's writer never waits), and
are checked against their hashes as the outbox is. Each goes out exactly as the publisher's replay sends it
(`event_body(ev, replayed=True)`: same event_id, seq, ts, payload), on the command listener's own broker connection:
the publisher's session, its anchor and its outbox marks are not touched. Nothing of the table's state changes.
Seqs the table does not have are named with why (rolled back, archived out of reach, damaged, not journaled yet).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import aiomqtt
import structlog

from controller.config.table import JournalSettings
from controller.core.events import DomainEvent, JournaledEvent
from controller.mqtt import batch as packets
from controller.mqtt import limits
from controller.mqtt.contract import CommandReply, Resent, SeqsMissing, SupervisorCommand
from controller.mqtt.limits import MAX_PACKET_SIZE
from controller.mqtt.messages import event_body
from controller.store import manifest, segments
from controller.store.journal import Journal
from controller.store.outbox import DamagedRow, read_range
from controller.store.schema import connect_readonly
from controller.supervisor.verbs import ResendArgs

# Events written to the socket at once, then one wait for their PUBACKs (controller.mqtt.batch).
CHUNK = 500
# What a reply lists of the seqs not sent: scattered damaged rows may make 5,000 ranges of 10,000 seqs, some 700 KB,
# and a reply past the broker's packet limit (64 KiB) disconnects the listener instead of answering. 50 ranges with a
# `why` of 160 characters at most are about 11 KB, the summary's five 1 KB more: under the 16 KiB of a reply the
# console keeps (tests/commands/test_resend_limits.py holds the worst case to it); the rest are counted.
MAX_LISTED = 50
MAX_WHY = 160


@dataclass(frozen=True, slots=True)
class Found:
    """The events of a range the table has, in seq order, and the seqs it has not, as ranges with why."""

    events: list[JournaledEvent]
    missing: list[SeqsMissing]


def collect(journal: Path, archive_dir: Path, table_id: str, first: int, last: int, journaled_upto: int) -> Found:
    """Seqs `first`..`last` of the table, from the live journal and its archive segments (blocking: run it in a
    thread). `journaled_upto` is the journal's last seq when asked: seqs above it are not journaled yet."""
    why: dict[int, str] = {}
    events: list[JournaledEvent] = []
    db, _ = connect_readonly(journal)
    try:
        recorded = segments.recorded(db, table_id)
        live_head = segments.head(recorded)
        if last > live_head[0]:
            _take(read_range(db, table_id, max(first, live_head[0] + 1), last, live_head), events, why)
        for seg in recorded:
            if seg.last_seq < first or seg.first_seq > last:
                continue
            _from_segment(archive_dir, seg, first, last, events, why)
        for rb in manifest.rollbacks(db, table_id):
            for seq in range(max(first, rb.after_seq + 1), min(last, rb.upto_seq) + 1):
                why.setdefault(
                    seq,
                    "rolled back: the journal was restored from an earlier copy and never held these since "
                    "(docs/recovery.md); a subscriber's archive is their only copy",
                )
    finally:
        db.close()
    have = {e.seq for e in events}
    for seq in range(first, last + 1):
        if seq not in have and seq not in why:
            why[seq] = "not journaled yet" if seq > journaled_upto else "not in the journal"
    events.sort(key=lambda e: e.seq)
    return Found(events, _ranges(why))


def _take(items: Iterable[JournaledEvent | DamagedRow], events: list[JournaledEvent], why: dict[int, str]) -> None:
    for item in items:
        if isinstance(item, DamagedRow):
            why[item.seq] = f"damaged: {item.reason} (quarantined, never published; `tablectl journal verify`)"
        else:
            events.append(item)


def _from_segment(
    directory: Path, seg: segments.Segment, first: int, last: int, events: list[JournaledEvent], why: dict[int, str]
) -> None:
    lo, hi = max(first, seg.first_seq), min(last, seg.last_seq)
    path = directory / seg.segment
    if not path.is_file():
        for seq in range(lo, hi + 1):
            why[seq] = (
                f"archived out of reach: segment {seg.segment} is not in {directory} (restore it from the backup)"
            )
        return
    try:
        conn = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True, isolation_level=None)
        try:
            _take(read_range(conn, seg.table_id, lo, hi, (seg.prev_seq, seg.prev_hash)), events, why)
        finally:
            conn.close()
    except sqlite3.Error as err:
        for seq in range(lo, hi + 1):
            why[seq] = f"archived out of reach: segment {path} cannot be read ({err})"


def _ranges(why: dict[int, str]) -> list[SeqsMissing]:
    out: list[SeqsMissing] = []
    for seq in sorted(why):
        if out and out[-1].last_seq == seq - 1 and out[-1].why == why[seq]:
            out[-1] = out[-1].model_copy(update={"last_seq": seq})
        else:
            out.append(SeqsMissing(first_seq=seq, last_seq=seq, why=why[seq]))
    return out


def summary(first: int, last: int, sent: int, missing: list[SeqsMissing], not_listed: int = 0) -> str:
    """The reply's `reason`: what was sent and what was not, for a person reading it. `missing` is what the reply
    lists, `not_listed` the ranges it counts only."""
    text = f"sent {sent} event(s) of seqs {first}-{last} again, flagged replayed"
    if missing:
        named = "; ".join(
            f"{m.first_seq}{'' if m.first_seq == m.last_seq else f'-{m.last_seq}'}: {m.why}" for m in missing[:5]
        )
        more = len(missing) - 5 + not_listed
        text += f"; not sent: {named}" + (f"; and {more} more range(s)" if more > 0 else "")
    if not_listed:
        text += (
            f" ({not_listed} of them not listed in this reply: ask again from seq {missing[-1].last_seq + 1} to "
            "have them named)"
        )
    return text


def _cut(why: str) -> str:
    return why if len(why) <= MAX_WHY else why[: MAX_WHY - 1] + "\u2026"


def listed(resent: Resent) -> Resent:
    """`resent` as a reply carries it: its first MAX_LISTED missing ranges, each `why` cut to MAX_WHY characters,
    and the ranges and seqs it leaves out counted (the log and the summary name what the reply lists)."""
    shown = [
        m if len(m.why) <= MAX_WHY else m.model_copy(update={"why": _cut(m.why)}) for m in resent.missing[:MAX_LISTED]
    ]
    rest = resent.missing[MAX_LISTED:]
    return resent.model_copy(
        update={
            "missing": shown,
            "missing_not_listed": resent.missing_not_listed + len(rest),
            "seqs_not_listed": resent.seqs_not_listed + sum(m.last_seq - m.first_seq + 1 for m in rest),
        }
    )


def too_large(ev: JournaledEvent, size: int, limit: int) -> str:
    """Why an event is not sent: larger than the broker takes (docs/mqtt.md, "Too large for the broker")."""
    return (
        f"too large for the broker: {ev.type} is {size:,} bytes as published, over the {limit:,}-byte packet limit "
        "([mqtt] max_packet_size); raise the broker's max_packet_size and the table's together, restart the table, "
        "ask again"
    )


def sized(topic: str, events: list[JournaledEvent], limit: int) -> tuple[list[tuple[JournaledEvent, str]], Found]:
    """Each event's body as published again, and those the broker would refuse (named missing, with their size):
    sending one would cost the listener its connection, and the reply with it."""
    out: list[tuple[JournaledEvent, str]] = []
    why: dict[int, str] = {}
    for ev in events:
        body = event_body(ev, True)
        ok, size = limits.fits(topic, body, limit)
        if ok:
            out.append((ev, body))
        else:
            why[ev.seq] = too_large(ev, size, limit)
    return out, Found([], _ranges(why))


async def publish(client: aiomqtt.Client, topic: str, events: list[tuple[JournaledEvent, str]], within: float) -> int:
    """Every (event, body) on `topic`, in seq order, CHUNK at a time with one PUBACK wait each; how many were
    acknowledged. An MqttError (the connection lost, no PUBACK within `within` s) leaves the rest unsent."""
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()  # the wait is bounded by `within`
    done = 0
    try:
        for at in range(0, len(events), CHUNK):
            chunk = events[at : at + CHUNK]
            sent = packets.send(client, topic, [body for _, body in chunk])
            try:
                await packets.settled(sent, never, within)
            finally:
                packets.forget(client, sent.mids)
            done += len(chunk)
    finally:
        never.cancel()
    return done


def accepted(cmd: SupervisorCommand, role: str, args: ResendArgs) -> DomainEvent:
    """Who asked for which seqs: journaled as a shell note before anything is read or sent."""
    payload = {"command_id": cmd.command_id, "verb": cmd.verb, "key_id": cmd.key_id, "role": role}
    return DomainEvent("command.accepted", None, {**payload, "from_seq": args.from_seq, "to_seq": args.to_seq})


async def collect_for(journal: Journal, settings: JournalSettings, table_id: str, args: ResendArgs) -> Found:
    """collect() in a worker thread, from the table's journal and its archive folder (the configured one, or the
    journal's default)."""
    from controller.store.archive import default_dir  # here: a table that never archives never loads it

    archives = Path(settings.archive_dir) if settings.archive_dir else default_dir(journal.path)
    return await asyncio.to_thread(
        collect, journal.path, archives, table_id, args.from_seq, args.to_seq, journal.last_seq
    )


async def send_again(
    client: aiomqtt.Client, topic: str, found: Found, args: ResendArgs, within: float, limit: int = MAX_PACKET_SIZE
) -> Resent:
    """publish() what was found and fits the broker's packet `limit`; what is too large, and what the broker did not
    acknowledge, is named missing too, in seq order, each seq once (`missing_once`)."""
    sent = 0
    problem = None
    bodies, oversized = sized(topic, found.events, limit)
    try:
        sent = await publish(client, topic, bodies, within)
    except aiomqtt.MqttError as err:
        problem = str(err) or type(err).__name__
    unsent = bodies[sent:]
    not_acked = Found([], [])
    if problem is not None and unsent:
        why = f"not acknowledged by the broker ({problem}): ask again"
        not_acked = Found([], _ranges({ev.seq: why for ev, _ in unsent}))
    missing = missing_once(found.missing, oversized.missing, not_acked.missing)
    return Resent(from_seq=args.from_seq, to_seq=args.to_seq, sent=sent, missing=missing)


def missing_once(*by_precedence: list[SeqsMissing]) -> list[SeqsMissing]:
    """The seqs not sent as ranges in seq order, each seq in one range only, with the first reason that applies in
    the order given (docs/commands.md, the resend row): what the journal says of it, too large for the broker, not
    acknowledged by the broker. A range of one reason never spans a seq of another: between the first and the last
    event the broker did not acknowledge may be seqs too large to send, or damaged, which have their own reason."""
    why: dict[int, str] = {}
    for ranges in by_precedence:
        for m in ranges:
            for seq in range(m.first_seq, m.last_seq + 1):
                why.setdefault(seq, m.why)
    return _ranges(why)


def reply_body(reply: CommandReply, topic: str, limit: int, log: structlog.typing.FilteringBoundLogger) -> str:
    """A reply's JSON: `resent` only in a resend's reply, its counts of what it does not list only when there is any
    (a console of before they existed reads the rest unchanged). One past the broker's packet `limit` (never met with
    the replies the table builds: `listed` bounds the largest) would cost the listener's connection and reach nobody:
    a short one says so instead."""
    if reply.resent is None:
        body = reply.model_dump_json(exclude={"resent"})
    elif reply.resent.missing_not_listed or reply.resent.seqs_not_listed:
        body = reply.model_dump_json()
    else:
        body = reply.model_dump_json(exclude={"resent": {"missing_not_listed", "seqs_not_listed"}})
    ok, size = limits.fits(topic, body, limit)
    if ok:
        return body
    log.error("command reply too large for the broker: a short one sent", command_id=reply.command_id, size=size)
    why = (
        f"the reply ({size:,} bytes) is over the broker's {limit:,}-byte packet limit ([mqtt] max_packet_size): it is "
        f"in the table's log ({(reply.reason or '')[:200]})"
    )
    short = reply.model_copy(update={"reason": why, "event_seqs": reply.event_seqs[:100], "resent": None})
    return short.model_dump_json(exclude={"resent"})
