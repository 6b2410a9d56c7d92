"""Relaying a signed command to its table: the envelope's bytes as the browser sent them, on the topic
`tablectl command send` uses, and the table's reply (docs/commands.md).

The floor neither signs nor judges: the table checks the signature, role, freshness and replay (its CommandGate),
so a console that relayed a forged or changed envelope would only get a rejection. A connection of its own per
command (clean session, a fresh client id): the archive's persistent session stays for archiving.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import ssl
import uuid
from typing import Any

import aiomqtt

from floor.config import FloorConfig, read_secret

# A table's reply is a few hundred bytes (its command_id, outcome, code, reason and rule); the broker delivers whatever
# was published on cmd/reply, up to its packet limit (64 KiB in systemd/mosquitto/mosquitto.conf; mosquitto's own
# default is none, 256 MB). Past MAX_REPLY bytes the
# audit keeps the reply's command_id, outcome, code and rule as short strings, its reason cut to MAX_REASON characters,
# its first KEEP_HEAD bytes as text, and the evidence of the whole: its size and sha256.
MAX_REPLY = 16 * 1024
MAX_REASON = 1000
KEEP_HEAD = 4096
SHORT = 200  # characters of each of command_id, outcome, code and rule kept from an oversized reply


def bounded_reply(payload: bytes, reply: dict[str, Any]) -> dict[str, Any]:
    """The reply as the audit stores it and the browser is shown it: as published if within MAX_REPLY bytes, else
    its gist and the evidence of what was cut (`cut`: bytes, sha256, the limit)."""
    if len(payload) <= MAX_REPLY:
        return reply
    kept: dict[str, Any] = {k: str(reply[k])[:SHORT] for k in ("command_id", "outcome", "code", "rule") if k in reply}
    if isinstance(reply.get("accepted"), bool):  # a link's answer has no outcome: the relay derives it from this
        kept["accepted"] = reply["accepted"]
    if "reason" in reply:
        kept["reason"] = str(reply["reason"])[:MAX_REASON]
    kept["cut"] = {
        "bytes": len(payload),
        "sha256": hashlib.sha256(payload).hexdigest(),
        "limit_bytes": MAX_REPLY,
        "head": payload[:KEEP_HEAD].decode("utf-8", "replace"),
    }
    return kept


async def relay_command(
    config: FloorConfig,
    table_id: str,
    verb: str,
    raw: bytes,
    envelope: dict[str, Any],
    within: float,
    *,
    base: str | None = None,
) -> dict[str, Any]:
    """The table's reply (as it published it), or {"outcome": "no_reply", "reason": why}. `base` addresses
    another command desk than the table's (a link's `<prefix>/link/<link_id>/cmd`)."""
    m = config.mqtt
    address = m.address
    base = base or f"{m.prefix}/{table_id}/cmd"
    tls = None
    if address.tls:
        tls = aiomqtt.TLSParameters(ca_certs=str(m.ca_file) if m.ca_file else None, cert_reqs=ssl.CERT_REQUIRED)
    try:
        async with asyncio.timeout(within):
            async with aiomqtt.Client(
                address.host,
                address.port,
                identifier=f"tablectl-console-{uuid.uuid4().hex[:12]}",
                username=m.username,
                password=read_secret(m.password_file, "mqtt.password_file"),
                tls_params=tls,
                timeout=min(within, 10.0),
            ) as client:
                # Subscribed (SUBACK) before publishing, so the reply cannot come before we listen.
                await client.subscribe(f"{base}/reply", qos=1)
                await client.publish(f"{base}/{verb}", raw, qos=1)
                async for message in client.messages:
                    p = message.payload
                    payload = bytes(p) if isinstance(p, bytes | bytearray) else str(p).encode()
                    try:
                        reply = json.loads(payload)
                    except (TypeError, ValueError, RecursionError):  # not a reply: the table's comes with the id
                        continue
                    if isinstance(reply, dict) and reply.get("command_id") == envelope.get("command_id"):
                        return bounded_reply(payload, reply)
    except TimeoutError:
        return {
            "outcome": "no_reply",
            "reason": f"no reply from {table_id} within {within:g} s: is it running? The command may still be "
            "carried out; it cannot be carried out twice",
        }
    except aiomqtt.MqttError as err:
        return {"outcome": "no_reply", "reason": f"the broker cannot be reached: {err}"}
    return {"outcome": "no_reply", "reason": "the broker closed the connection"}
