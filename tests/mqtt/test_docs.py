"""docs/mqtt.md cannot drift: every example validates against its model and the printed JSON Schema, every topic
of the contract is documented with its QoS and retain flag, and `tablectl schema` prints what the models say."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from controller.cli.main import main as tablectl
from controller.mqtt.contract import TOPICS, topic_for
from tests.mqtt.conftest import ContractCheck

DOC = Path(__file__).resolve().parents[2] / "docs" / "mqtt.md"
EXAMPLE = re.compile(r"<!-- model: (\w+) -->\n```json\n(.*?)\n```", re.S)


def _examples() -> list[tuple[str, str]]:
    return EXAMPLE.findall(DOC.read_text(encoding="utf-8"))


def test_every_json_block_is_a_checked_example() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert text.count("```json") == len(_examples()), "a ```json block without <!-- model: Name --> above it"


def test_every_topic_has_an_example() -> None:
    documented = {name for name, _ in _examples()}
    assert documented == {t.model.__name__ for t in TOPICS}


@pytest.mark.parametrize(("name", "body"), _examples(), ids=[f"{n}-{i}" for i, (n, _) in enumerate(_examples())])
def test_example_validates_against_its_model_and_schema(name: str, body: str, contract: type[ContractCheck]) -> None:
    model = topic_for(name).model
    value = json.loads(body)
    parsed = model.model_validate(value)
    assert contract.schema_problems(model, value) == []
    # What a consumer parses, it can publish again unchanged (the serialised form is itself valid).
    assert model.model_validate_json(parsed.model_dump_json()) == parsed


def test_the_topic_table_matches_the_contract() -> None:
    rows = re.findall(r"^\| `([^`]+)` \| `(\w+)` \| (\d) \| (yes|no)[^|]*\| (\w+) \|$", DOC.read_text(), re.M)
    documented = {
        (topic.replace("<device_id>", "<id>"), model, int(qos), retained == "yes", sender)
        for topic, model, qos, retained, sender in rows
    }
    assert documented == {(t.name, t.model.__name__, t.qos, t.retain, t.sender) for t in TOPICS}


def test_schema_prints_every_topic(capsys: pytest.CaptureFixture[str]) -> None:
    assert tablectl(["schema"]) == 0
    schemas = json.loads(capsys.readouterr().out)
    assert list(schemas) == [t.name for t in TOPICS]
    for t in TOPICS:
        assert schemas[t.name]["title"] == t.model.__name__
        assert schemas[t.name]["x-mqtt"] == {
            "topic": f"<prefix>/<table_id>/{t.name}",
            "qos": t.qos,
            "retain": t.retain,
            "sender": t.sender,
        }


@pytest.mark.parametrize(
    ("name", "title"),
    [
        ("event", "TableEvent"),
        ("device/shoe", "DeviceStatus"),
        ("progressive/mega", "ProgressiveMeter"),
        ("cmd/reply", "CommandReply"),
        ("cmd/verify_deck", "SupervisorCommand"),
        ("Birth", "Birth"),
    ],
)
def test_schema_prints_one(name: str, title: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert tablectl(["schema", name]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == title


@pytest.mark.parametrize("name", ["events", "device", "device/a/b", "cmd", "progressive/"])
def test_schema_names_what_exists_when_asked_for_something_else(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert tablectl(["schema", name]) == 2
    err = capsys.readouterr().err
    assert f"{name!r} is not a topic" in err and "device/<id> (DeviceStatus)" in err and "--list" in err
