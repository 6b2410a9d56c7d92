"""`tablectl link`: the linked progressive controller, and what an operator asks of it (docs/linked-progressives.md).

tablectl link --config LINK.toml                          the service (systemd/tablectl-link.service)
tablectl link --config LINK.toml check-config [--offline] validate the config, reach the database, compare figures
tablectl link --config LINK.toml report [--json]          per level: contributions by table, hits in order, paid,
                                                          reserve, overflow, display; the balance (exit 1 and a
                                                          tilt of the link on a mismatch)
tablectl link --config LINK.toml send VERB --key K.pem --key-id ID [--args JSON]   sign and send a link command
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import uuid
from pathlib import Path
from typing import Any

import aiomqtt
import psycopg

from controller.cli import numbers
from controller.cli.bytecode import bytecode_lines
from controller.cli.verb import Subparsers, UsageError
from controller.config.files import PEM_MAX_BYTES
from controller.config.keys import PrivateKeyError, read_private_key
from controller.core.shown import one_line
from controller.mqtt.session import SessionClient, kept, session
from controller.supervisor.envelope import sign_command
from floor.db import unreachable
from floor.files import file_problems
from floor.sdnotify import Notifier
from link.commands import VERBS
from link.config import LinkConfig, LinkConfigError, load_link_config, secret
from link.database import conninfo
from link.protocol import base
from link.report import reconcile, render
from link.schema import LATEST, SchemaError
from link.service import LinkService
from link.store import LinkStore

CONFIG_HELP = "the link config (configs/link.toml is an annotated example)"


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "link",
        help="the linked progressive controller in PostgreSQL; its reconciliation report",
        description="The linked progressive controller (605a.8; NY 9 NYCRR 5321.18 as the stand-in): one set of "
        "meters in PostgreSQL shared by the linked tables. Without an action, runs the service.",
    )
    p.add_argument("--config", type=Path, help=CONFIG_HELP)
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    actions.add_parser(
        "run",
        help="run the link controller (the default)",
        description="Runs the link controller: one set of meters in PostgreSQL for the linked tables, its leases, "
        "contributions and hits over MQTT; until SIGTERM (systemd/tablectl-link.service).",
    )
    cc = actions.add_parser(
        "check-config",
        help="validate the config, reach the database, compare its figures",
        description="Validates the link config, then connects to its database and compares the link's figures there "
        "with the file's (exit 1: it cannot connect, or the database holds another link).",
    )
    cc.add_argument("--offline", action="store_true", help="the config alone, without trying the database")
    rp = actions.add_parser(
        "report",
        help="reconciliation per level and the balance check",
        description="Per level: contributions by table, hits in order, paid, reserve, overflow and what the sign "
        "shows, and whether they balance; on a mismatch, exit 1 and tilt the link (605a.8).",
    )
    rp.add_argument("--json", action="store_true", help="print JSON instead of text (default: text)")
    rp.add_argument("--no-tilt", action="store_true", help="report a mismatch without tilting the link")
    sd = actions.add_parser(
        "send",
        help="sign and send a command to the link: " + ", ".join(VERBS),
        description="Signs a command with a supervisor's key, sends it to the link controller over MQTT and prints "
        "its reply as JSON (exit 1: refused or no reply).",
    )
    sd.add_argument("verb", choices=sorted(VERBS), metavar="VERB", help="the command: " + ", ".join(sorted(VERBS)))
    sd.add_argument("--key", type=Path, required=True, help="the signer's private key (tablectl command keygen)")
    sd.add_argument("--key-id", required=True, help="its key_id in the link config's [[supervisors]]")
    sd.add_argument(
        "--args",
        default="{}",
        help='the verb\'s arguments as a JSON object (default {}, none), e.g. \'{"note": "x"}\'',
    )
    sd.add_argument(
        "--timeout",
        type=numbers.seconds("--timeout", 0, 3600, "--timeout 10", above=True),
        default=10.0,
        help="seconds to wait for the link's reply (default 10)",
    )
    for action in actions.choices.values():
        action.add_argument("--config", type=Path, default=argparse.SUPPRESS, help=CONFIG_HELP)


def _config(path: Path) -> LinkConfig:
    try:
        return load_link_config(path)
    except LinkConfigError as err:
        raise UsageError(str(err)) from None


def main(args: argparse.Namespace) -> int:
    if args.config is None:
        raise UsageError("give the link config: tablectl link --config LINK.toml [ACTION]")
    config = _config(args.config)
    action = args.action or "run"
    if action == "run":
        return _run(config)
    if action == "check-config":
        return _check(config, args.config, args.offline)
    if action == "send":
        return _send(config, args)
    try:
        with psycopg.connect(conninfo(config), autocommit=True) as conn:
            rec = reconcile(conn)
            print(json.dumps(rec.to_json(), indent=2) if args.json else render(rec))
            if rec.balanced:
                return 0
            if not args.no_tilt and rec.status != "tilted":
                LinkStore(conn).set_status("tilted", "report", "report", "; ".join(rec.problems)[:500])
                print("the link is now tilted: no lease until a supervisor clears it (clear_tilt)", file=sys.stderr)
            return 1
    except psycopg.OperationalError as err:
        raise UsageError(
            f"cannot reach the link's database ({one_line(err)}); {unreachable(err, config.database)}"
        ) from None


def _check(config: LinkConfig, path: Path, offline: bool) -> int:
    levels = [lv.level for p in config.progressive for lv in p.levels]
    what = f"link {config.link.id!r}, {len(config.tables)} tables, levels {', '.join(levels)}"
    print(f"{path}: the config is valid ({what})")
    for line in bytecode_lines("systemd/tablectl-link.service runs the link"):  # a warning: exit 0 still
        print(f"{path}: {line}")
    if offline:
        return 0
    problems = file_problems(config.mqtt.password_file, config.mqtt.ca_file, "tablectl-link")
    for problem in problems:
        print(f"{path}: {problem}")
    try:
        with psycopg.connect(conninfo(config), autocommit=True) as conn:
            if conn.execute("SELECT to_regclass('link_state')").fetchone() == (None,):
                print(f"{path}: database reachable, no link yet (the service creates it and seeds the meters)")
                return 1 if problems else 0
            got = conn.execute("SELECT coalesce(max(version), 0) FROM link_schema").fetchone()
            version = int(got[0]) if got else 0
            state = LinkStore(conn).state()
    except psycopg.OperationalError as err:
        print(f"{path}: database: cannot connect: {one_line(err)}: {unreachable(err, config.database)}")
        return 1
    if version > LATEST:
        print(f"{path}: database: schema version {version} is newer than this tablectl's ({LATEST}): upgrade")
        return 1
    if state.link_id != config.link.id:
        print(f"{path}: the database holds link {state.link_id!r}, the config says {config.link.id!r}: fix [link] id")
        return 1
    if [p.model_dump(mode="json") for p in state.figures] != [p.model_dump(mode="json") for p in config.progressive]:
        print(
            f"{path}: note: the link's figures in the database differ from the file's; the database's stand "
            "(change them with a signed set_parameters while the link is closed)"
        )
    print(f"{path}: database reachable, link {state.status}, {state.seq} events")
    return 1 if problems else 0


def _run(config: LinkConfig) -> int:
    service = LinkService(config, Notifier.from_environment())

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, service.stop)
        await service.run()

    try:
        asyncio.run(main())
    except (SchemaError, LinkConfigError) as err:
        raise UsageError(str(err)) from None
    return 0


def _send(config: LinkConfig, args: argparse.Namespace) -> int:
    try:
        key = read_private_key(args.key, PEM_MAX_BYTES)
    except PrivateKeyError as err:
        raise UsageError(f"--key: {err}: give the PEM file `tablectl command keygen` wrote") from None
    try:
        given = json.loads(args.args)
    except ValueError as err:
        raise UsageError(
            f'--args {numbers.shown(args.args)} is not JSON ({err}): give a JSON object, e.g. \'{{"note": "opening"}}\''
        ) from None
    if not isinstance(given, dict):
        raise UsageError('--args must be a JSON object, e.g. \'{"note": "opening"}\'')
    envelope = sign_command(key, table_id=config.link.id, verb=args.verb, key_id=args.key_id, args=given)
    reply = asyncio.run(_exchange(config, envelope, args.timeout))
    print(json.dumps(reply))
    return 0 if reply.get("accepted") else 1


async def _exchange(config: LinkConfig, envelope: dict[str, Any], within: float) -> dict[str, Any]:
    m = config.mqtt
    topic = base(m.prefix, config.link.id)
    try:
        async with asyncio.timeout(within):
            # As `tablectl command send`: a Ctrl-C aiomqtt's wait_for swallowed must not go on to publish the command.
            async with session(
                SessionClient(
                    m.address.host,
                    m.address.port,
                    identifier=f"tablectl-link-send-{uuid.uuid4().hex[:12]}",
                    username=m.username,
                    password=secret(m.password_file, "mqtt.password_file"),
                    tls_params=aiomqtt.TLSParameters(ca_certs=str(m.ca_file) if m.ca_file else None)
                    if m.address.tls
                    else None,
                )
            ) as client:
                await kept(client.subscribe(f"{topic}/cmd/reply", qos=1))
                await kept(client.publish(f"{topic}/cmd/{envelope['verb']}", json.dumps(envelope), qos=1))
                async for message in client.messages:
                    reply = json.loads(bytes(message.payload) if isinstance(message.payload, bytes) else b"{}")
                    if isinstance(reply, dict) and reply.get("command_id") == envelope["command_id"]:
                        return reply
    except TimeoutError:
        return {"accepted": False, "code": "no_reply", "reason": f"no reply within {within:g} s: is the link running?"}
    except aiomqtt.MqttError as err:
        return {"accepted": False, "code": "no_broker", "reason": str(err)}
    return {"accepted": False, "code": "no_reply", "reason": "the broker closed the connection"}
