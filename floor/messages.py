"""What arrives from the broker, checked against the MQTT contract before anything is archived (pure).

A message that does not parse, breaks the contract or names another table than its topic is refused with the
reason, and the floor keeps it in `rejected_messages` so nothing is lost. The contract's models are read strictly
here (a seq of "5" or 5.0, a flag of "true" is refused, not coerced: the table never sends one), and what
PostgreSQL or a report could not take is refused before it reaches a transaction: a number beyond 64 bits, a NUL
or a lone surrogate in any string, NaN, a stamp that is no date, JSON nested past any message's depth, a payload
over MAX_PAYLOAD. One such message in a batch would otherwise fail the batch's transaction again at every
redelivery and stall the archive behind it.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from controller.mqtt.contract import Birth, DeviceStatus, ProgressiveMeter, TableEvent, TableStatus
from floor.days import parse_ts
from floor.links import LINK_MODELS, LinkKind, LinkModel, link_kind_of, link_subscriptions
from floor.report.shapes import report_problem

Kind = Literal["event", "status", "birth", "device", "meter"]
Model = TableEvent | TableStatus | Birth | DeviceStatus | ProgressiveMeter
MODELS: dict[Kind, type[BaseModel]] = {
    "event": TableEvent,
    "status": TableStatus,
    "birth": Birth,
    "device": DeviceStatus,
    "meter": ProgressiveMeter,
}


# A birth with every paytable is some 5 KB, a settlement event under 10 KB; anything near this is not a table's.
# Deliberately above the shipped broker's packet limit (controller.config.broker.MAX_PACKET_SIZE, 64 KiB), which keeps
# anything this size away: the bound is for a broker configured without that limit. Not lowered to it, because a
# table's `[mqtt] max_packet_size` may be raised together with its broker's (docs/mqtt.md, "Too large for the broker")
# and the floor must archive what such a table publishes: a refusal here is a hole in the archive, not a retry.
# tests/floor/test_hostile_ingest.py checks it at parse(), the shipped broker making it unreachable through one.
MAX_PAYLOAD = 256 * 1024
MAX_DEPTH = 32  # the contract's deepest message (a birth's rules) is 4 levels down
INT64 = 2**63 - 1  # PostgreSQL bigint: seqs, cents; reports cast payload amounts to it
# The stamps the floor files by gaming day: within what every zone's arithmetic and a partition name can take.
YEARS = range(1970, 9999)


def subscriptions(prefix: str) -> list[str]:
    """The topic filters the floor subscribes to: what the tables and the links publish, not the commands to them
    nor the tables' requests to their link."""
    tables = [f"{prefix}/+/{t}" for t in ("event", "status", "birth", "device/+", "progressive/+")]
    return tables + link_subscriptions(prefix)


@dataclass(frozen=True, slots=True)
class Incoming:
    kind: Kind
    table_id: str
    model: Model
    content: dict[str, Any]  # the message as published
    digest: bytes  # sha256 of the content, less the replayed flag (a replay is the same event)


@dataclass(frozen=True, slots=True)
class LinkIncoming:
    """A message of a linked progressive controller (floor/links.py)."""

    kind: LinkKind
    link_id: str
    model: LinkModel
    content: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Rejected:
    """A refused message: its first bytes (the archive keeps at most [ingest] refused_keep_bytes of them), and the
    size and sha256 of the whole payload as it came, so an investigator can match it to a publisher's copy."""

    topic: str
    payload: bytes
    reason: str
    size: int
    sha256: bytes


def refuse(topic: str, payload: bytes, reason: str) -> Rejected:
    """The refusal of `payload`, measured whole; only what any setting may keep is held until it is written."""
    return Rejected(topic, payload[:MAX_PAYLOAD], reason, len(payload), hashlib.sha256(payload).digest())


def kind_of(prefix: str, topic: str) -> tuple[str, Kind] | None:
    """(table_id, kind) for a topic the floor archives; None for any other."""
    if not topic.startswith(prefix + "/"):
        return None
    parts = topic[len(prefix) + 1 :].split("/")
    if len(parts) == 2 and parts[1] in ("event", "status", "birth"):
        return parts[0], parts[1]  # type: ignore[return-value]
    if len(parts) == 3 and parts[1] == "device":
        return parts[0], "device"
    if len(parts) == 3 and parts[1] == "progressive":
        return parts[0], "meter"
    return None


def content_digest(content: dict[str, Any]) -> bytes:
    body = {k: v for k, v in content.items() if k != "replayed"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).digest()


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def _finite(text: str) -> float:
    """A JSON number with a fraction or exponent; 1e400 would be infinity, which jsonb cannot store."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} is beyond a floating-point number")
    return value


def unstorable(content: object) -> str | None:
    """Why PostgreSQL (text, jsonb, bigint) or a report could not take this decoded JSON, or None. Iterative, so a
    deep message cannot exhaust the stack."""
    todo: list[tuple[object, str, int]] = [(content, "(message)", 0)]
    while todo:
        value, where, depth = todo.pop()
        where = where[:120]  # a path of hostile keys is named, not repeated whole
        if depth > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH} levels at {where}"
        if isinstance(value, dict):
            for key, item in value.items():
                bad = _bad_text(key)
                if bad:
                    return f"a key at {where} {bad}"
                todo.append((item, key if where == "(message)" else f"{where}.{key}", depth + 1))
        elif isinstance(value, list):
            todo.extend((item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value))
        elif isinstance(value, str):
            bad = _bad_text(value)
            if bad:
                return f"{where} {bad}"
        elif isinstance(value, int) and not isinstance(value, bool) and not -INT64 - 1 <= value <= INT64:
            return f"{where} is {len(str(abs(value)))} digits long, beyond a 64-bit integer"
    return None


def _needs_walk(payload: bytes, long_number: bool) -> bool:
    """Whether unstorable() could find anything: a NUL or a surrogate comes only as a \\u escape (json.loads refuses
    raw control characters), an integer past 64 bits has 19 digits or more (`long_number`, seen while decoding), and
    depth needs brackets. A table's messages have none of these, so the walk (some 15 us a settlement event) is
    spared on the ingest path."""
    return long_number or b"\\u" in payload or payload.count(b"[") + payload.count(b"{") > MAX_DEPTH


def _bad_text(text: str) -> str | None:
    if "\x00" in text:
        return "holds a NUL character (\\u0000), which PostgreSQL text cannot store"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "holds a lone surrogate (a \\ud800-\\udfff escape), which is not text"
    return None


def _bad_stamp(model: BaseModel) -> str | None:
    """A stamp that matches the contract's pattern but is no real instant (month 13, 25:00) or lies outside YEARS."""
    for name in ("ts", "since"):
        text = getattr(model, name, None) if name in type(model).model_fields else None
        if not isinstance(text, str):
            continue
        try:
            year = parse_ts(text).year
        except (ValueError, OverflowError) as err:
            return f"{name} {text!r} is not a real date and time: {err}"
        if year not in YEARS:
            return f"{name} {text!r} is outside {YEARS.start}-{YEARS.stop - 1}: check the table's clock (NTP)"
    return None


def _validate(
    topic: str, payload: bytes, kind: str, model_type: type[BaseModel]
) -> tuple[dict[str, Any], BaseModel] | Rejected:
    if len(payload) > MAX_PAYLOAD:
        return refuse(topic, payload, f"{len(payload)} bytes, over the {MAX_PAYLOAD} a {kind} message may have")
    long_number = False

    def number(text: str) -> int:
        nonlocal long_number
        long_number = long_number or len(text) > 18
        return int(text)

    try:
        content = json.loads(payload, parse_constant=_no_constant, parse_float=_finite, parse_int=number)
    except (UnicodeDecodeError, ValueError) as err:  # json.JSONDecodeError is a ValueError
        return refuse(topic, payload, f"not JSON: {err}")
    except RecursionError:
        return refuse(topic, payload, "not JSON a table sends: nested too deep to decode")
    if not isinstance(content, dict):
        return refuse(topic, payload, "not a JSON object")
    bad = unstorable(content) if _needs_walk(payload, long_number) else None
    if bad:
        return refuse(topic, payload, f"breaks the {kind} contract: {bad}")
    try:
        model = model_type.model_validate(content, strict=True)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(message)"
        return refuse(topic, payload, f"breaks the {kind} contract at {where}: {first['msg']}")
    return content, model


def _topic_level_said(kind: str, content: dict[str, Any]) -> str | None:
    """The device or level a retained message names, which its topic's last level must be (else it would be kept
    under another device's or meter's key)."""
    if kind == "device":
        return str(content.get("device_id"))
    if kind == "meter":
        return str(content.get("level"))
    return None


def parse(
    prefix: str, topic: str, payload: bytes, tables: frozenset[str] = frozenset()
) -> Incoming | LinkIncoming | Rejected | None:
    """The message as the contract's model, a Rejected saying why not, or None for a topic not archived (an
    empty payload clears a retained topic: nothing to keep). `tables`, when not empty, are the only tables taken
    ([ingest] tables)."""
    if not payload:
        return None
    linked = link_kind_of(prefix, topic)
    if linked is not None:
        link_id, link_kind = linked
        got = _validate(topic, payload, link_kind, LINK_MODELS[link_kind])
        if isinstance(got, Rejected):
            return got
        said = got[0].get("link_id")
        if said is not None and said != link_id:
            return refuse(topic, payload, f"names link {said!r} on link {link_id!r}'s topic")
        return LinkIncoming(link_kind, link_id, got[1], got[0])  # type: ignore[arg-type]
    found = kind_of(prefix, topic)
    if found is None:
        return None
    table_id, kind = found
    if tables and table_id not in tables:
        return refuse(
            topic,
            payload,
            f"table {table_id!r} is not in [ingest] tables: add it to the floor config if it is a new table, "
            "else find who publishes there (the broker's ACL should not let them)",
        )
    got = _validate(topic, payload, kind, MODELS[kind])
    if isinstance(got, Rejected):
        return got
    content, model = got
    stamp = _bad_stamp(model)  # the link's stamps are kept as text only; the tables' file events by gaming day
    if stamp:
        return refuse(topic, payload, f"breaks the {kind} contract: {stamp}")
    shape = report_problem(model.type, model.payload) if isinstance(model, TableEvent) else None
    if shape:
        return refuse(topic, payload, f"breaks the {kind} contract: {shape} (the reports sum it)")
    if content.get("table_id") != table_id:
        said_table = content.get("table_id")
        return refuse(topic, payload, f"names table {said_table!r} but came on the topic of table {table_id!r}")
    said = _topic_level_said(kind, content)
    if said is not None and said != topic.rsplit("/", 1)[-1]:
        return refuse(topic, payload, f"names {said!r} on the topic of {topic.rsplit('/', 1)[-1]!r}")
    return Incoming(kind, table_id, model, content, content_digest(content))  # type: ignore[arg-type]


def refused_by_archive(topic: str, message: Incoming | LinkIncoming | Rejected, err: BaseException) -> Rejected:
    """A message the database refused in a transaction of its own, as kept in rejected_messages: the JSON it was
    decoded from and the database's words."""
    if isinstance(message, Rejected):
        return message
    why = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
    body = json.dumps(message.content, sort_keys=True, ensure_ascii=True).encode()
    return refuse(topic, body, f"the archive refused it: {why}")


def topic_owner(prefix: str, topic: str) -> str | None:
    """The table (or link) a topic under the prefix names, for the log."""
    rest = topic[len(prefix) + 1 :] if topic.startswith(prefix + "/") else ""
    parts = rest.split("/")
    return parts[1] if parts[0] == "link" and len(parts) > 1 else (parts[0] or None)


@dataclass(frozen=True, slots=True)
class Queued:
    """A message as the floor's listener queues it for the writer (floor/intake.py), with what acknowledges it."""

    message: Incoming | LinkIncoming | Rejected
    topic: str
    generation: int  # which broker connection delivered it: a mid means nothing on another
    mid: int
    qos: int
