"""A cancel of the retained anchor's read in its connect leaves nothing of the connection behind (controller/mqtt/
session.py): a Ctrl-C at that moment of `tablectl run`'s start ended with "RuntimeError: Event loop is closed" and
"Task was destroyed but it is pending!" under the operator's line (start26).

Each cancel lands where the test puts it, not where a delay might: in the connect's thread (the loop's default
executor holds the job until the read was cancelled), and in the wait for a CONNACK that never comes (a real TCP server
that reads and says nothing). The broker, the client, its thread and the sockets are real.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from controller.config.table import MqttSettings
from controller.mqtt.anchor import read_retained_anchor
from controller.mqtt.session import kept, whole
from tests.broker import Mosquitto

DISCONNECT = b"\xe0\x00"  # MQTT 3.1.1 section 3.14: the packet a client sends before it closes


class HeldExecutor(ThreadPoolExecutor):
    """The loop's default executor with each job held until `go` is set: aiomqtt's connect (paho's, in this executor)
    runs only after the test cancelled the read waiting for it, and ends while the read unwinds, as under load."""

    def __init__(self) -> None:
        super().__init__(max_workers=2)
        self.go = threading.Event()
        self.submitted = asyncio.Event()  # set in the loop's thread: run_in_executor submits from there

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        def held() -> Any:
            self.go.wait(30)  # the bound of a failing test only
            return fn(*args, **kwargs)

        self.submitted.set()
        return super().submit(held)


def _to_port(port: int) -> list[str]:
    """This process's TCP sockets connected to `port` on loopback (their inodes), from /proc: the read's own, not
    whatever else the test process (an xdist worker) has open."""
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            mine.add(os.readlink(f"/proc/self/fd/{fd}"))
    found = []
    for line in Path("/proc/self/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        remote, inode = fields[2], fields[9]
        if int(remote.split(":")[1], 16) == port and f"socket:[{inode}]" in mine:
            found.append(inode)
    return found


def _housekeeping(tasks: set[asyncio.Task[Any]]) -> list[asyncio.Task[Any]]:
    """aiomqtt's task of a connection (paho's loop_misc, every second while its socket is open)."""
    return [t for t in tasks if getattr(t.get_coro(), "__name__", "") == "_misc_loop"]


def test_a_cancel_in_the_connects_thread_leaves_no_socket_or_task(mosquitto: Mosquitto, unique_id: str) -> None:
    settings = MqttSettings(broker=mosquitto.url, prefix=unique_id)

    async def cancelled_in_the_connect() -> tuple[list[asyncio.Task[Any]], list[str]]:
        loop = asyncio.get_running_loop()
        executor = HeldExecutor()
        loop.set_default_executor(executor)
        read = asyncio.create_task(read_retained_anchor(settings, unique_id))
        await executor.submitted.wait()  # the read waits for the connect's thread
        read.cancel()
        executor.go.set()
        with pytest.raises(asyncio.CancelledError):
            await read
        # What asyncio.run does before it closes the loop: the executor's threads ended (the connect among them),
        # and what they scheduled run. A task or socket of the read still here ran on past the loop's close.
        await loop.shutdown_default_executor()
        return _housekeeping(asyncio.all_tasks()), _to_port(mosquitto.port)

    left, sockets = asyncio.run(cancelled_in_the_connect())
    assert left == [], "aiomqtt's task of the cancelled read's connection still runs"
    assert sockets == [], "the cancelled read left its socket to the broker open"


async def test_a_cancel_awaiting_the_connack_disconnects_and_closes(unique_id: str) -> None:
    came = asyncio.Event()
    heard = bytearray()
    ended = asyncio.Event()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heard.extend(await reader.read(1024))  # the CONNECT, never answered
        came.set()
        while chunk := await reader.read(1024):
            heard.extend(chunk)
        ended.set()
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    try:
        port = server.sockets[0].getsockname()[1]
        settings = MqttSettings(broker=f"mqtt://127.0.0.1:{port}", prefix=unique_id)
        read = asyncio.create_task(read_retained_anchor(settings, unique_id))
        await came.wait()
        read.cancel()
        with pytest.raises(asyncio.CancelledError):
            await read
        async with asyncio.timeout(10):  # bounds a failure only: the read's socket closes as the cancel ends it
            await ended.wait()
        assert heard.endswith(DISCONNECT), bytes(heard)
        misc = _housekeeping(asyncio.all_tasks())
        if misc:  # cancelled as the socket closed: ends within a turn or two (the wait bounds a failure only)
            await asyncio.wait(misc, timeout=10)
        assert all(t.done() for t in misc), "aiomqtt's task of the cancelled read's connection still runs"
    finally:
        server.close()


async def test_whole_runs_its_step_to_the_end_then_raises_the_cancel() -> None:
    began, release = asyncio.Event(), asyncio.Event()
    ended: list[int] = []

    async def step() -> int:
        began.set()
        await release.wait()
        ended.append(1)
        return 7

    task = asyncio.create_task(whole(step()))
    await began.wait()
    task.cancel()
    await asyncio.sleep(0)  # the cancel is delivered (a turn of the loop), then a second one
    task.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ended == [1]


async def test_whole_returns_its_steps_result_when_not_cancelled() -> None:
    async def step() -> int:
        return 7

    assert await whole(step()) == 7


async def _swallowing(fut: asyncio.Future[int]) -> int:
    """aiomqtt's wait (`Client._wait_for`): `asyncio.wait_for` with the client's timeout."""
    return await asyncio.wait_for(fut, 10)


@pytest.mark.parametrize("guarded", [False, True], ids=["wait_for", "kept"])
async def test_kept_raises_the_cancel_wait_for_swallowed(guarded: bool) -> None:
    """The race of cpython#86296, put where it happens: the awaited future completes and the task is cancelled in one
    turn of the loop. Bare, Python 3.11's wait_for returns the result and the task goes on; kept raises the cancel."""
    fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    went_on: list[int] = []

    async def step() -> None:
        went_on.append(await (kept(_swallowing(fut)) if guarded else _swallowing(fut)))

    task = asyncio.create_task(step())
    await asyncio.sleep(0)  # the task waits in wait_for
    fut.set_result(1)
    task.cancel()
    if guarded:
        with pytest.raises(asyncio.CancelledError):
            await task
        assert went_on == []
    else:
        await task  # swallowed: this is the race the guard is for (fixed in 3.12, which no table runs)
        assert went_on == [1]
