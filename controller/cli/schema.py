"""`tablectl schema [NAME]`: the JSON Schemas of the MQTT contract, generated from controller.mqtt.contract."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from controller.cli.verb import Subparsers
from controller.mqtt.contract import TOPICS, Topic, topic_for


def schema_of(topic: Topic) -> dict[str, Any]:
    """The model's JSON Schema, with where and how it is published under `x-mqtt`."""
    schema = topic.model.model_json_schema()
    schema["x-mqtt"] = {
        "topic": f"<prefix>/<table_id>/{topic.name}",
        "qos": topic.qos,
        "retain": topic.retain,
        "sender": topic.sender,
    }
    return schema


def all_schemas() -> dict[str, dict[str, Any]]:
    return {t.name: schema_of(t) for t in TOPICS}


def add_parser(sub: Subparsers) -> None:
    names = ", ".join(t.name for t in TOPICS)
    p: argparse.ArgumentParser = sub.add_parser(
        "schema",
        help="print the JSON Schemas of the MQTT messages",
        description="Prints the JSON Schema of every message of the MQTT contract (docs/mqtt.md), keyed by topic "
        f"under <prefix>/<table_id>/ ({names}), or of one: NAME is a topic (event, device/<id>, "
        "device/shoe, cmd/reply), or a model name (TableEvent).",
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="one topic or model (default: all, keyed by topic)")
    p.add_argument("--list", action="store_true", help="list the topics with their model, QoS and retain flag")


def main(args: argparse.Namespace) -> int:
    if args.list:
        for t in TOPICS:
            print(
                f"{t.name:<22} {t.model.__name__:<18} qos {t.qos}  {'retained' if t.retain else 'not retained'}  "
                f"from the {t.sender}: {t.summary}"
            )
        return 0
    if sys.flags.optimize >= 2:
        # A message's description is its model's docstring, which -OO strips: say so rather than print less.
        print(
            "tablectl schema: python -OO (PYTHONOPTIMIZE=2, as systemd/tablectl.service runs the table) strips the "
            "models' docstrings, which are the messages' descriptions: run it without -OO and PYTHONOPTIMIZE",
            file=sys.stderr,
        )
        return 2
    if args.name is None:
        print(json.dumps(all_schemas(), indent=2))
        return 0
    try:
        topic = topic_for(args.name)
    except KeyError as err:
        print(f"tablectl schema: {err.args[0]}; `tablectl schema --list` shows them", file=sys.stderr)
        return 2
    print(json.dumps(schema_of(topic), indent=2))
    return 0
