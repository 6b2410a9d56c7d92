"""What arrives from the broker, checked against the MQTT contract before anything is archived (pure).

A message that does not parse, breaks the contract or names another table than its topic is refused with the
reason, and the floor keeps it in `rejected_messages` so nothing is lost.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from controller.mqtt.contract import Birth, DeviceStatus, ProgressiveMeter, TableEvent, TableStatus
from floor.links import LINK_MODELS, LinkKind, LinkModel, link_kind_of, link_subscriptions

Kind = Literal["event", "status", "birth", "device", "meter"]
Model = TableEvent | TableStatus | Birth | DeviceStatus | ProgressiveMeter
MODELS: dict[Kind, type[BaseModel]] = {
    "event": TableEvent,
    "status": TableStatus,
    "birth": Birth,
    "device": DeviceStatus,
    "meter": ProgressiveMeter,
}


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
    topic: str
    payload: bytes
    reason: str


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


def _validate(
    topic: str, payload: bytes, kind: str, model_type: type[BaseModel]
) -> tuple[dict[str, Any], BaseModel] | Rejected:
    try:
        content = json.loads(payload)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        return Rejected(topic, payload, f"not JSON: {err}")
    if not isinstance(content, dict):
        return Rejected(topic, payload, "not a JSON object")
    try:
        return content, model_type.model_validate(content)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(message)"
        return Rejected(topic, payload, f"breaks the {kind} contract at {where}: {first['msg']}")


def parse(prefix: str, topic: str, payload: bytes) -> Incoming | LinkIncoming | Rejected | None:
    """The message as the contract's model, a Rejected saying why not, or None for a topic not archived (an
    empty payload clears a retained topic: nothing to keep)."""
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
            return Rejected(topic, payload, f"names link {said!r} on link {link_id!r}'s topic")
        return LinkIncoming(link_kind, link_id, got[1], got[0])  # type: ignore[arg-type]
    found = kind_of(prefix, topic)
    if found is None:
        return None
    table_id, kind = found
    got = _validate(topic, payload, kind, MODELS[kind])
    if isinstance(got, Rejected):
        return got
    content, model = got
    if content.get("table_id") != table_id:
        return Rejected(topic, payload, f"names table {content.get('table_id')!r} on table {table_id!r}'s topic")
    return Incoming(kind, table_id, model, content, content_digest(content))  # type: ignore[arg-type]
