"""The MQTT contract checker shared by the tests of tests/mqtt: what a subscriber to <prefix>/<table_id>/# may
receive, checked message by message (models, seq, card secrecy)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import jsonschema
import pytest
from pydantic import BaseModel, ValidationError

from controller.cli.schema import schema_of
from controller.games.registry import SPECS
from controller.mqtt.contract import Topics, topic_for

# A card as controller/core/cards.py writes it (rank then suit, "As", "Td"), or with a "10" rank as parse_card accepts,
# standing alone in a string: not inside a word, a number or an identifier ("As" in "Ask", "2d" in "12d", "6s" in
# the hand class "pair_of_6s_to_10s" are not cards).
CARD_TOKEN = re.compile(r"(?<![A-Za-z0-9_])(?:10|[2-9TJQKA])[cdhs](?![A-Za-z0-9_])")

# The first event of a round at which its cards may be public: the settlement of any wager, the reveal that
# settlement needs (e.g. 655a.11(i)(4) six_card_bonus.revealed), or the void, or the round's completion.
REVEALS_AT_SETTLEMENT = frozenset(
    event for spec in SPECS.values() for event, _rule, _area in spec.reveal_before.values()
)
SETTLEMENT_TYPES = REVEALS_AT_SETTLEMENT | {"round.voided", "round.completed"}


def is_settlement(event_type: str) -> bool:
    return event_type.endswith(".settled") or event_type in SETTLEMENT_TYPES


def card_tokens(value: object, path: str = "$") -> Iterator[tuple[str, str]]:
    """(where, card) for every card token in every string (keys included) of a JSON value."""
    if isinstance(value, str):
        for m in CARD_TOKEN.finditer(value):
            yield path, m.group(0)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from card_tokens(k, f"{path}.<key {k!r}>")
            yield from card_tokens(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from card_tokens(v, f"{path}[{i}]")


class Delivered(Protocol):
    """A message as a subscriber got it: tests/broker.py's Received, or a Message made up by a test."""

    @property
    def topic(self) -> str: ...

    @property
    def payload(self) -> bytes: ...


@dataclass(frozen=True)
class Message:
    """What the subscriber got: the same fields as tests/broker.py's Received."""

    topic: str
    payload: bytes
    retain: bool = False


def card_leaks(messages: Sequence[Delivered], prefix: str, table_id: str) -> list[str]:
    """Every card identity that reached a subscriber before its round's settlement, in the order received.

    A message that belongs to no round (status, birth, device/<id>, progressive/<level>, an event between
    rounds) may never hold a card; an event of a round may once that round has reached its settlement.
    """
    topics = Topics(prefix, table_id)
    settled: set[str] = set()
    leaks = []
    for n, m in enumerate(messages):
        body = json.loads(m.payload)
        rel = topics.relative(m.topic)
        round_id = body.get("round_id") if rel == "event" and isinstance(body, dict) else None
        if round_id is not None and is_settlement(str(body.get("type"))):
            settled.add(round_id)
        if round_id in settled:
            continue
        for where, card in card_tokens(body):
            what = f"{body.get('type')} seq {body.get('seq')}" if rel == "event" else rel
            leaks.append(
                f"message {n} on {m.topic} ({what}): card {card!r} at {where}, before "
                f"{'its round ' + repr(round_id) if round_id else 'any round'} reached settlement"
            )
    return leaks


_VALIDATORS: dict[type[BaseModel], jsonschema.protocols.Validator] = {}


def schema_problems(model: type[BaseModel], instance: Any) -> list[str]:
    """What the JSON Schema `tablectl schema` prints for this model finds wrong with a JSON value: a consumer
    validating with the schema must accept exactly what the table publishes."""
    validator = _VALIDATORS.get(model)
    if validator is None:
        schema = schema_of(topic_for(model.__name__))
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        validator = _VALIDATORS[model] = cls(schema, format_checker=cls.FORMAT_CHECKER)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in validator.iter_errors(instance)]


def contract_violations(messages: Sequence[Delivered], prefix: str, table_id: str) -> list[str]:
    """What in these messages breaks the contract: a topic outside it, a payload its model refuses, a payload
    for another table or device, an event seq that is not 1, 2, 3 ... without gaps, a card before settlement."""
    topics = Topics(prefix, table_id)
    problems = []
    seqs: dict[int, str] = {}
    for n, m in enumerate(messages):
        rel = topics.relative(m.topic)
        if rel is None:
            problems.append(f"message {n}: topic {m.topic} is not under {topics.base}/")
            continue
        try:
            topic = topic_for(rel)
        except KeyError as err:
            problems.append(f"message {n}: {err.args[0]}")
            continue
        try:
            model = topic.model.model_validate_json(m.payload)
        except ValidationError as err:
            problems.append(f"message {n} on {m.topic} does not validate as {topic.model.__name__}: {err}")
            continue
        problems += [
            f"message {n} on {m.topic}, JSON Schema of {topic.model.__name__}: {p}"
            for p in schema_problems(topic.model, json.loads(m.payload))
        ]
        body = model.model_dump()
        if body.get("table_id") != table_id:
            problems.append(f"message {n} on {m.topic} names table {body.get('table_id')!r}")
        _, _, level = rel.partition("/")
        for key in ("device_id", "level"):
            if key in body and level and body[key] != level:
                problems.append(f"message {n} on {m.topic} is about {key} {body[key]!r}")
        # At least once: a duplicate must be the same event (dedupe by event_id), never another one.
        if rel == "event" and seqs.setdefault(body["seq"], body["event_id"]) != body["event_id"]:
            problems.append(f"seq {body['seq']} was published for two different event_ids")
    if seqs and sorted(seqs) != list(range(1, max(seqs) + 1)):
        missing = sorted(set(range(1, max(seqs) + 1)) - set(seqs))
        problems.append(f"event seqs are not gap-free from 1: missing {missing[:20]}")
    return problems + card_leaks(messages, prefix, table_id)


class ContractCheck:
    """The checker, as a fixture: test modules cannot import each other (--import-mode=importlib)."""

    Message = Message
    card_tokens = staticmethod(card_tokens)
    card_leaks = staticmethod(card_leaks)
    violations = staticmethod(contract_violations)
    schema_problems = staticmethod(schema_problems)
    is_settlement = staticmethod(is_settlement)


@pytest.fixture(scope="session")
def contract() -> type[ContractCheck]:
    return ContractCheck
