"""footprint.py's baselines, each a process of its own: the daemon's import alone (memory), a bare aiomqtt process
publishing the round's events (CPU a round) and one holding its connection idle (idle CPU)."""

from __future__ import annotations

import asyncio
import sys

import benchlib
from procfs import idle_cpu, rss_mb, spawn, stop, wait_ready

# The floor under the controller's CPU per round: one process publishing the same events (QoS 1, each awaited as the
# daemon's publisher awaits them in batches) to the same broker, and nothing else; its CPU time on stdout.
PUBLISH_BASELINE = """
import asyncio, json, sys, time, aiomqtt
async def main():
    bodies = [line.encode() for line in sys.stdin.read().splitlines()]
    async with aiomqtt.Client(sys.argv[1], int(sys.argv[2])) as client:
        start = time.process_time()
        await asyncio.gather(*(client.publish("tablectl/bench-baseline/event", b, qos=1) for b in bodies))
        print(time.process_time() - start, flush=True)
asyncio.run(main())
"""

IDLE_BASELINE = """
import asyncio, sys, aiomqtt
async def main():
    async with aiomqtt.Client(sys.argv[1], int(sys.argv[2]), keepalive=15):
        print("ready", flush=True)
        await asyncio.sleep(3600)
asyncio.run(main())
"""


async def publish_baseline(url: str, published: list[bytes]) -> float:
    """CPU seconds a bare aiomqtt process spends publishing `published` (PUBLISH_BASELINE)."""
    host, port = url.removeprefix("mqtt://").rsplit(":", 1)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", PUBLISH_BASELINE, host, port,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await proc.communicate(b"\n".join(published))
    if proc.returncode != 0:
        sys.exit(f"bench: the publish baseline failed: {err.decode()[-2000:]}")
    return float(out)


async def baselines(url: str, idle_seconds: float) -> tuple[float, float]:
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
    host, port = url.removeprefix("mqtt://").rsplit(":", 1)
    bare = await spawn(sys.executable, "-c", IDLE_BASELINE, host, port)
    try:
        await wait_ready(bare, "the aiomqtt baseline")
        benchlib.progress(f"baseline: a bare aiomqtt process's CPU over {idle_seconds:g} s")
        cpu = await idle_cpu(bare.pid, idle_seconds)
    finally:
        await stop(bare)
    return rss, cpu
