"""`tablectl command`: make a supervisor's signing key, and sign and send a supervisor command.

    tablectl command keygen --out alice.pem [--key-id alice --role floorperson]
    tablectl command send --key alice.pem --key-id alice --table T1 --broker mqtts://broker:8883 \\
        --ca ca.pem --username alice --password-file alice.pass verify_deck deck=A

`send` exits 0 when the table carried the command out, 1 when it ignored or rejected it (the reason is
printed), 2 for a bad key, option or argument, 3 when no reply came (the broker or the table unreachable).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import stat
import sys
import uuid
from pathlib import Path
from typing import Any

import aiomqtt
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
)
from pydantic import ValidationError

from controller.cli import numbers
from controller.cli.shown import shown
from controller.cli.verb import Subparsers
from controller.config.errors import ConfigError, describe_errors
from controller.config.files import SECRET_MAX_BYTES
from controller.config.keys import PrivateKeyError, read_private_key
from controller.config.table import MqttSettings, load_config
from controller.mqtt.connection import client_kwargs
from controller.mqtt.contract import CommandReply
from controller.mqtt.session import SessionClient, kept, session
from controller.supervisor.envelope import public_key_b64, sign_command
from controller.supervisor.verbs import VERBS, parse_args, takes

EXIT_APPLIED, EXIT_NOT_APPLIED, EXIT_USAGE, EXIT_NO_REPLY = 0, 1, 2, 3


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "command",
        help="sign and send a supervisor command, or make a supervisor's signing key",
        description="Supervisor commands are signed with Ed25519 keys listed in the table's config "
        "([[supervisors]]); see docs/commands.md.",
    )
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")

    keygen = actions.add_parser(
        "keygen",
        help="make a signing key: the private key to a file, the [[supervisors]] entry to stdout",
        description="Writes a new Ed25519 private key (PEM, mode 0600) and prints its public key and the "
        "[[supervisors]] entry to add to each table's config that should accept it.",
    )
    keygen.add_argument("--out", type=Path, required=True, help="where to write the private key (must not exist)")
    keygen.add_argument("--key-id", help="the key's name in the config entry (default: the file's name)")
    keygen.add_argument(
        "--role",
        choices=["floorperson", "supervisor", "technician"],
        default="floorperson",
        help="the role in the config entry (default floorperson)",
    )

    send = actions.add_parser(
        "send",
        help="sign a command, publish it, print the table's reply",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Signs VERB with the key, publishes it on <prefix>/<table>/cmd/<VERB> and waits for the "
        "table's reply, which it prints as JSON.\nExit 0: applied; 1: ignored or rejected; 2: bad "
        "options; 3: no reply.\n\nverbs:\n"
        + "\n".join(f"  {name:<21} {v.help}; {takes(name)}" for name, v in VERBS.items()),
    )
    send.add_argument("--key", type=Path, required=True, help="the signer's private key (PEM, from keygen)")
    send.add_argument("--key-id", required=True, help="the key's key_id in the table's [[supervisors]]")
    send.add_argument("--table", help="the table id (default: the --config's table_id)")
    send.add_argument("--config", type=Path, help="take the broker, prefix and TLS settings from this table config")
    send.add_argument("--broker", help="MQTT broker URL, mqtt:// or mqtts:// (default: the config's)")
    send.add_argument("--prefix", help="topic prefix (default: the config's, else tablectl)")
    send.add_argument("--ca", help="CA bundle for an mqtts:// broker")
    send.add_argument("--cert", help="client certificate for TLS client authentication")
    send.add_argument("--key-file", help="the client certificate's private key")
    send.add_argument("--username", help="broker user name")
    send.add_argument("--password-file", help="file holding the broker password (first line)")
    send.add_argument(
        "--timeout",
        type=numbers.seconds("--timeout", 0, 3600, "--timeout 10", above=True),
        default=10.0,
        help="seconds to wait for the reply (default 10)",
    )
    send.add_argument("verb", metavar="VERB", help="what to do (the verbs are listed above)")
    send.add_argument("args", nargs="*", metavar="name=value", help="the verb's arguments")


def main(args: argparse.Namespace) -> int:
    if args.action == "keygen":
        return keygen(args.out, args.key_id, args.role)
    try:
        return send(args)
    except _Usage as err:
        print(f"tablectl command send: {err}", file=sys.stderr)
        return EXIT_USAGE


class _Usage(Exception):
    """A problem with what was asked, to be fixed by the person who asked."""


# -- keygen ------------------------------------------------------------------------------------------------

_KEY_ID = re.compile(r"^[A-Za-z0-9_.@\-]{1,64}$")  # as controller.config.table.Supervisor.key_id


def _key_id_problem(key_id: str) -> str | None:
    if _KEY_ID.fullmatch(key_id):
        return None
    return f"key id {key_id!r} may only have letters, digits and _ . @ - (at most 64): give e.g. --key-id ann.floor"


def keygen(out: Path, key_id: str | None, role: str) -> int:
    name = out.stem if key_id is None else key_id  # --key-id "" is refused, not replaced by the file's name
    problem = _key_id_problem(name)
    if problem:
        print(f"tablectl command keygen: {problem}", file=sys.stderr)
        return EXIT_USAGE
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    try:
        # Created 0600 in one step: the key is never readable by others, not even for a moment.
        fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        print(
            f"tablectl command keygen: {out} exists; a key is never overwritten: choose another --out", file=sys.stderr
        )
        return EXIT_USAGE
    except OSError as err:
        print(f"tablectl command keygen: cannot create {out}: {err.strerror}", file=sys.stderr)
        return EXIT_USAGE
    with os.fdopen(fd, "wb") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(pem)
    public = public_key_b64(key)
    print(f"private key written to {out} (mode 0600): keep it with its owner only")
    print(f"public key: {public}")
    print("\nadd to the config of every table that should accept this key:\n")
    print(f'[[supervisors]]\nkey_id = "{name}"\nrole = "{role}"\npublic_key = "{public}"')
    return EXIT_APPLIED


# -- send --------------------------------------------------------------------------------------------------


def parse_assignments(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        name, eq, value = item.partition("=")
        if not eq or not name:
            raise _Usage(f"argument {item!r} is not name=value: give e.g. device=shuffler")
        if name in out:
            raise _Usage(f"argument {name} is given twice")
        out[name] = value
    return out


def load_private_key(path: Path) -> Ed25519PrivateKey:
    try:
        key = read_private_key(path, SECRET_MAX_BYTES)
        mode = path.stat().st_mode
    except PrivateKeyError as err:
        raise _Usage(f"{err}: give the PEM file `tablectl command keygen --out {path}` wrote") from None
    except OSError as err:
        raise _Usage(
            f"cannot read the key {path}: {err.strerror}; give the PEM file `tablectl command keygen` wrote"
        ) from None
    # Only for a key: a file that is not one is refused above, without a warning about its mode first.
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        print(
            f"tablectl command send: warning: {path} can be read by others (mode {stat.S_IMODE(mode):04o}): "
            f"chmod 600 {path}",
            file=sys.stderr,
        )
    return key


def _settings(args: argparse.Namespace) -> tuple[MqttSettings, str]:
    """The broker settings and the table id, from --config and the options (options win)."""
    base: dict[str, Any] = {}
    table = args.table
    if args.config is not None:
        try:
            config = load_config(args.config)
        except ConfigError as err:
            raise _Usage(str(err)) from None
        base = config.mqtt.model_dump()
        table = table or config.table_id
        listed = {s.key_id for s in config.supervisors}
        if args.key_id not in listed:
            print(
                f"tablectl command send: warning: {args.config} lists no key_id {args.key_id!r} in [[supervisors]]; "
                "the table will reject the command",
                file=sys.stderr,
            )
    if not table:
        raise _Usage("which table? give --table, or --config with the table's config")
    options = {
        "broker": args.broker,
        "prefix": args.prefix,
        "ca_file": args.ca,
        "cert_file": args.cert,
        "key_file": args.key_file,
        "username": args.username,
        "password_file": args.password_file,
    }
    base.update({k: v for k, v in options.items() if v is not None})
    try:
        return MqttSettings.model_validate(base), table
    except ValidationError as err:
        raise _Usage(
            "the broker options do not fit together:\n"
            + describe_errors(err).replace("  mqtt.", "  --").replace("_file", "-file")
        ) from None


def send(args: argparse.Namespace) -> int:
    problem = _key_id_problem(args.key_id)
    if problem:
        raise _Usage(problem)
    if args.verb not in VERBS:
        raise _Usage(f"there is no verb {args.verb!r}; the verbs are {', '.join(VERBS)}")
    if not args.timeout > 0:
        raise _Usage(f"--timeout {args.timeout} must be more than 0 seconds")
    given = parse_assignments(args.args)
    try:
        typed = parse_args(args.verb, given).model_dump(mode="json", include=set(given))
    except ValueError as err:
        raise _Usage(str(err)) from None
    key = load_private_key(args.key)
    settings, table = _settings(args)
    try:
        kwargs = client_kwargs(settings)
    except ValueError as err:
        raise _Usage(str(err)) from None
    envelope = sign_command(key, table_id=table, verb=args.verb, key_id=args.key_id, args=typed)
    base = f"{settings.prefix}/{table}/cmd"
    topic, reply_topic = f"{base}/{args.verb}", f"{base}/reply"
    reply = asyncio.run(_exchange(kwargs, topic, reply_topic, envelope, args.timeout))
    if isinstance(reply, str):
        # Where it tried, as the other errors say: a wrong --broker, --prefix or --table is read off this line.
        print(
            f"tablectl command send: no reply from table {table} at {settings.broker} "
            f"(sent to {topic}, listened on {reply_topic}): {reply}",
            file=sys.stderr,
        )
        return EXIT_NO_REPLY
    print(json.dumps(reply, separators=(",", ":")))
    outcome = reply.get("outcome")
    summary = (
        f"{args.verb}: {outcome}"
        + (f" ({reply['code']})" if reply.get("code") else "")
        + (f": {reply['reason']}" if reply.get("reason") else "")
    )
    print(f"tablectl command send: {shown(summary)}", file=sys.stderr)  # the reply's words, as received
    return EXIT_APPLIED if outcome == "applied" else EXIT_NOT_APPLIED


async def _exchange(
    kwargs: dict[str, Any], topic: str, reply_topic: str, envelope: dict[str, Any], within: float
) -> dict[str, Any] | str:
    """The table's reply to the command, or why there is none."""
    try:
        async with asyncio.timeout(within):
            # A session, and each wait kept: a Ctrl-C that aiomqtt's wait_for swallowed (the CONNACK's or the SUBACK's
            # turn) went on to publish the signed command (controller/mqtt/session.py).
            async with session(
                SessionClient(
                    **kwargs, identifier=f"tablectl-command-{uuid.uuid4().hex[:12]}", timeout=min(within, 10.0)
                )
            ) as client:
                # Subscribed (SUBACK) before publishing, so the reply cannot come before we listen.
                await kept(client.subscribe(reply_topic, qos=1))
                await kept(client.publish(topic, json.dumps(envelope, separators=(",", ":")), qos=1))
                async for message in client.messages:
                    raw = message.payload
                    try:
                        reply = CommandReply.model_validate_json(
                            raw if isinstance(raw, bytes | bytearray) else str(raw)
                        )
                    except ValueError:
                        continue  # not a reply; someone else's traffic on the topic
                    if reply.command_id == envelope["command_id"]:
                        return reply.model_dump(mode="json")
    except TimeoutError:
        return (
            f"none within {within:g} s. Is the table running, connected to this broker and subscribed (its log says "
            '"command listener subscribed")? Are --broker, --prefix and --table (or the --config\'s mqtt.broker, '
            "mqtt.prefix and table_id) the table's own? Does the broker's ACL let this user publish to "
            f"{topic} and read {reply_topic} (a broker drops what its ACL denies without a word)? "
            "The command may still be carried out; it cannot be carried out twice"
        )
    except aiomqtt.MqttError as err:
        return (
            f"the broker cannot be reached: {err}. Is a broker running there? Check --broker (or the --config's "
            "mqtt.broker), and for a broker with users --username and --password-file, for mqtts:// --ca"
        )
    return "the broker closed the connection: does its ACL or its user list let this user in (--username)?"
