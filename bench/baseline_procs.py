"""footprint.py's baselines, each a process of its own: the daemon's import alone (memory), a bare aiomqtt process
publishing the round's events (CPU a round) and one holding its connection idle (idle CPU)."""

from __future__ import annotations

import asyncio
import sys

import benchlib
from brokers import BASELINE, Broker
from procfs import idle_cpu, rss_mb, spawn, stop, wait_ready

# The floor under the controller's CPU per round: one process publishing the same events (QoS 1, each awaited as the
# daemon's publisher awaits them in batches) to the same broker, and nothing else; its CPU time on stdout. Over TLS
# (brokers.Broker.argv: host, port, CA, user, password) it connects as the table does, verifying the broker.
CONNECT = """
import ssl, sys
def connect():
    host, port, *tls = sys.argv[1:]
    if not tls:
        return {"hostname": host, "port": int(port)}
    ca, user, password = tls
    context = ssl.create_default_context(cafile=ca)
    return {"hostname": host, "port": int(port), "username": user, "password": password, "tls_context": context}
"""

PUBLISH_BASELINE = (
    CONNECT
    + """
import asyncio, json, sys, time, aiomqtt
async def main():
    bodies = [line.encode() for line in sys.stdin.read().splitlines()]
    async with aiomqtt.Client(**connect()) as client:
        start = time.process_time()
        await asyncio.gather(*(client.publish("tablectl/bench-baseline/event", b, qos=1) for b in bodies))
        print(time.process_time() - start, flush=True)
asyncio.run(main())
"""
)

IDLE_BASELINE = (
    CONNECT
    + """
import asyncio, sys, aiomqtt
async def main():
    async with aiomqtt.Client(**connect(), keepalive=15):
        print("ready", flush=True)
        await asyncio.sleep(3600)
asyncio.run(main())
"""
)


async def publish_baseline(broker: Broker, published: list[bytes]) -> float:
    """CPU seconds a bare aiomqtt process spends publishing `published` (PUBLISH_BASELINE)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", PUBLISH_BASELINE, *broker.argv(BASELINE),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate(b"\n".join(published))
    if proc.returncode != 0:
        sys.exit(f"bench: the publish baseline failed: {err.decode()[-2000:]}")
    return float(out)


async def baselines(broker: Broker, idle_seconds: float) -> tuple[float, float]:
    """(RSS MB of a process that imported controller.shell.runner, idle CPU % of a bare aiomqtt process)."""
    imported = await spawn(
        sys.executable,
        "-c",
        # signal.pause(), not a read of stdin: that is /dev/null (procfs.spawn), and the import ended as it said ready
        "import controller.cli, controller.shell.runner, signal; print('ready', flush=True); signal.pause()",
    )
    try:
        await wait_ready(imported, "the import baseline")
        rss, _ = rss_mb(imported.pid)
    finally:
        await stop(imported)
    bare = await spawn(sys.executable, "-c", IDLE_BASELINE, *broker.argv(BASELINE))
    try:
        await wait_ready(bare, "the aiomqtt baseline")
        benchlib.progress(f"baseline: a bare aiomqtt process's CPU over {idle_seconds:g} s")
        cpu = await idle_cpu(bare.pid, idle_seconds)
    finally:
        await stop(bare)
    return rss, cpu
