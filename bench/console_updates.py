"""The console's update latency: from a table's event published on MQTT to the server-sent event a logged-in browser
receives, on a floor of many simulated tables, against a bare MQTT-to-SSE relay in the same process.

The floor: `FloorService` (archive in a real PostgreSQL, fsync on, this disk; its console on a loopback port) and
a real mosquitto. Every simulated table publishes a first event (so the floor has its tile), then a background
process keeps `--rate` events per second going across all of them while the probe table publishes `--probes`
events one at a time; each probe's latency is from its publish to the SSE `update` carrying its log line, read by
an HTTP client logged in with a signed challenge, as a browser is. The update's size is printed beside the whole
floor's (what each update carried before updates carried only what changed).

The baseline: a bare relay in the same process, an MQTT subscription whose messages go straight into an aiohttp
SSE response, no archive, no view; the same probes, under the same background load.

Run:  .venv/bin/python bench/console_updates.py [--tables 200] [--probes 200] [--rate 200]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import logging
import multiprocessing
import statistics
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import aiomqtt
import paho.mqtt.client as paho
import structlog
from aiohttp import web
from benchlib import machine, mosquitto, percentile, progress
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from paho.mqtt.enums import CallbackAPIVersion

from controller.supervisor.envelope import public_key_b64
from floor.config import parse_floor_config
from floor.console.auth import login_bytes
from floor.pgcluster import PgCluster
from floor.service import FloorService

PREFIX = "benchconsole"
KEY = Ed25519PrivateKey.from_private_bytes(b"\x42" * 32)


def event(table: str, seq: int, boot: str, type_: str = "decision.requested") -> dict[str, Any]:
    return {
        "event_id": uuid.uuid4().hex,
        "boot_id": boot,
        "seq": seq,
        "ts": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime()),
        "table_id": table,
        "round_id": f"{table}-r{seq // 25 + 1:06d}",
        "type": type_,
        "rule": "655a.9(a)",
        "payload": {"seat": seq % 6 + 1, "street": "street_3"},
    }


def background(port: int, tables: list[str], rate: float, stop: Any) -> None:
    """A floor's worth of tables publishing, `rate` events per second across them, until told to stop."""
    client = paho.Client(CallbackAPIVersion.VERSION2, client_id=f"bench-bg-{uuid.uuid4().hex[:8]}")
    client.connect("127.0.0.1", port)
    client.loop_start()
    boot, seq, start, n = uuid.uuid4().hex, 2, time.monotonic(), 0  # each table's first came before
    while not stop.is_set():
        for table in tables:
            if stop.is_set():
                break
            n += 1
            client.publish(f"{PREFIX}/{table}/event", json.dumps(event(table, seq, boot)), qos=1)
            ahead = start + n / rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
        seq += 1
    client.disconnect()
    client.loop_stop()


async def sse(response: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, str]]:
    name, data = "", ""
    while True:
        line = (await response.content.readline()).decode().rstrip("\n")
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            data = line[6:]
        elif line == "" and name:
            yield name, data
            name, data = "", ""


async def probe(
    mqtt: aiomqtt.Client, stream: AsyncIterator[tuple[str, str]], probes: int, found: Any, sizes: list[int]
) -> list[float]:
    """Publish the probe table's events one at a time; the time until the stream carries each."""
    boot, out = uuid.uuid4().hex, []  # the probe table's first event came before: seq 1
    for seq in range(2, probes + 2):
        e = event("probe", seq, boot)
        start = time.perf_counter()
        await mqtt.publish(f"{PREFIX}/probe/event", json.dumps(e), qos=1)
        async with asyncio.timeout(30):
            async for name, data in stream:
                if name == "update":
                    sizes.append(len(data))
                if found(name, data, e):
                    break
        out.append((time.perf_counter() - start) * 1000)
    return out


async def floor_run(dsn: str, broker: str, args: argparse.Namespace) -> tuple[list[float], list[int], int]:
    config = parse_floor_config(
        f'[database]\ndsn = "{dsn}"\n[mqtt]\nbroker = "{broker}"\nprefix = "{PREFIX}"\nclient_id = "bench-floor"\n'
        f'[console]\nlisten = "127.0.0.1:0"\n[[console.supervisors]]\nkey_id = "bench"\nrole = "supervisor"\n'
        f'public_key = "{public_key_b64(KEY)}"\n'
    )
    service = FloorService(config)
    task = asyncio.create_task(service.run())
    async with asyncio.timeout(60):
        await service.console_ready.wait()
        # The tables' first events go once the floor is subscribed: its session is new, so the broker would drop
        # what came before its SUBACK (on a loaded machine the console was up first, and the bench waited forever).
        while not service.mqtt_up:  # noqa: ASYNC110 (the service has no event for it)
            await asyncio.sleep(0.05)
    assert service.console is not None
    url = service.console.url.rstrip("/")
    port = int(broker.rsplit(":", 1)[1])
    tables = [f"t{n:03d}" for n in range(args.tables)]
    sizes: list[int] = []
    async with (
        aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http,
        aiomqtt.Client("127.0.0.1", port) as mqtt,
    ):
        c = await (
            await http.post(f"{url}/api/login/challenge", json={"key_id": "bench"}, headers={"Origin": url})
        ).json()
        sig = base64.b64encode(KEY.sign(login_bytes(c["challenge"], "bench", url))).decode()
        body = {"key_id": "bench", "challenge": c["challenge"], "signature": sig}
        assert (await http.post(f"{url}/api/login", json=body, headers={"Origin": url})).status == 200
        progress(f"the floor: {args.tables} tables' first events")
        boot = uuid.uuid4().hex
        for table in [*tables, "probe"]:
            await mqtt.publish(f"{PREFIX}/{table}/event", json.dumps(event(table, 1, boot, "betting.opened")), qos=1)
        async with asyncio.timeout(60):
            while len(service.console.view.live) < args.tables + 1:  # noqa: ASYNC110 (the archive has no event for it)
                await asyncio.sleep(0.1)
        stream = sse(await http.get(f"{url}/api/stream"))
        name, first = await anext(stream)
        assert name == "floor"
        whole = len(first)

        def carries(name: str, data: str, e: dict[str, Any]) -> bool:
            if name != "update" or '"probe"' not in data:
                return False
            return any(x["table_id"] == "probe" and x["seq"] == e["seq"] for x in json.loads(data)["lines"])

        stop = multiprocessing.Event()
        bg = multiprocessing.Process(target=background, args=(port, tables, args.rate, stop))
        bg.start()
        try:
            progress(f"the floor: {args.probes} probes under {args.rate} events/s")
            samples = await probe(mqtt, stream, args.probes, carries, sizes)
        finally:
            stop.set()
            bg.join()
    service.stop()
    await task
    return samples, sizes, whole


def same_seq(_name: str, data: str, e: dict[str, Any]) -> bool:
    return bool(json.loads(data)["seq"] == e["seq"])


async def bare_run(broker: str, args: argparse.Namespace) -> list[float]:
    """MQTT in, SSE out, nothing between: the floor's path without the archive and the view."""
    port = int(broker.rsplit(":", 1)[1])
    queues: set[asyncio.Queue[bytes]] = set()
    connected = asyncio.Event()

    async def stream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        q: asyncio.Queue[bytes] = asyncio.Queue()
        queues.add(q)
        connected.set()
        while True:
            data = await q.get()
            await response.write(b"event: update\ndata: " + data + b"\n\n")

    async def relay(client: aiomqtt.Client) -> None:
        async for m in client.messages:
            payload = m.payload if isinstance(m.payload, bytes) else b""
            for q in queues:
                q.put_nowait(payload)

    app = web.Application()
    app.router.add_get("/stream", stream)
    runner = web.AppRunner(app, handler_cancellation=True)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server = site._server
    assert isinstance(server, asyncio.Server)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/stream"
    tables = [f"t{n:03d}" for n in range(args.tables)]
    async with aiomqtt.Client("127.0.0.1", port) as sub, aiomqtt.Client("127.0.0.1", port) as mqtt:
        # Subscribed (SUBACK) before the first probe: a probe published before it was lost, the probe timed out, and
        # the relay, left iterating, died with "Disconnected during message iteration" as the client closed.
        await sub.subscribe(f"{PREFIX}/probe/event", qos=1)
        relaying = asyncio.create_task(relay(sub))
        try:
            async with aiohttp.ClientSession() as http:
                lines = sse(await http.get(url))
                await connected.wait()
                stop = multiprocessing.Event()
                bg = multiprocessing.Process(target=background, args=(port, tables, args.rate, stop))
                bg.start()
                try:
                    progress(f"the bare relay: {args.probes} probes under {args.rate} events/s")
                    samples = await probe(mqtt, lines, args.probes, same_seq, [])
                finally:
                    stop.set()
                    bg.join()
        finally:
            relaying.cancel()
            await asyncio.gather(relaying, return_exceptions=True)  # ended before its client closes
    await runner.cleanup()
    return samples


def figures(samples: list[float]) -> str:
    return (
        f"median {statistics.median(samples):.1f} ms, p95 {percentile(samples, 95):.1f} ms, "
        f"p99 {percentile(samples, 99):.1f} ms, max {max(samples):.1f} ms"
    )


def main() -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))  # figures, not logs
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tables", type=int, default=200)
    ap.add_argument("--probes", type=int, default=200)
    ap.add_argument("--rate", type=float, default=200.0, help="background events per second across the tables")
    args = ap.parse_args()
    print(f"machine: {machine()}")
    cluster = PgCluster.create(durable=True)
    try:
        cluster.start()
        dsn = cluster.create_database("bench_console")
        with mosquitto() as broker:
            bare = asyncio.run(bare_run(broker, args))
            floor, sizes, whole = asyncio.run(floor_run(dsn, broker, args))
    finally:
        cluster.remove()
    print(f"baseline: a bare MQTT-to-SSE relay, {len(bare)} probes: {figures(bare)}")
    print(
        f"the console, {args.tables} tables, {args.rate:g} events/s besides, archive on PostgreSQL (fsync on): "
        f"{figures(floor)}; median {statistics.median(floor) / statistics.median(bare):.1f}x baseline"
    )
    print(
        f"update size: median {statistics.median(sizes):,.0f} bytes, max {max(sizes):,} bytes; the whole floor "
        f"({args.tables + 1} tiles) is {whole:,} bytes, sent once at connection"
    )


if __name__ == "__main__":
    main()
