"""An aiomqtt client whose connection is closed whatever ends it, a cancel in its connect included (start26).

aiomqtt's `async with client` connects in two steps: paho's blocking connect in the loop's default executor (a thread
a cancel does not stop), then the wait for the CONNACK. A cancel in either leaves `__aenter__` without `__aexit__`
ever running: the socket stays open with its reader on the loop, and the thread, once its connect succeeds, schedules
aiomqtt's housekeeping task. That task then ran on past `asyncio.run`'s cancel of every task (it was scheduled while
the run waited for the executor's threads) and the loop closed under it: at exit, paho's `__del__` closed the socket,
aiomqtt asked the closed loop to cancel the task, and a Ctrl-C during the retained anchor's read (the start's one
connect, controller/mqtt/anchor.py) ended with "RuntimeError: Event loop is closed" and "Task was destroyed but it is
pending!" on stderr under the operator's one line.

`session(client)` enters the context in a task of its own. A cancel while it connects waits for the connect's thread
to end (its own bound: paho's connect timeout; `asyncio.run` would wait for that thread all the same), gives up the
CONNACK's wait, and leaves the context as `async with` does: DISCONNECT written, socket closed, reader removed and the
housekeeping task cancelled while the loop runs. The cleanup is not cut by a further cancel (a second signal, the
caller's `asyncio.timeout`): that cancel is raised after it, as is the first.

`kept(step)` raises a cancel aiomqtt's `wait_for` swallowed in a subscribe or publish (docs/supervision.md, "aiomqtt's
`wait_for`").
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

import aiomqtt
import paho.mqtt.client as mqtt

T = TypeVar("T")


class SessionClient(aiomqtt.Client):
    """aiomqtt.Client that says when the connect's thread has ended and whether it opened a socket (`session`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._on = asyncio.get_running_loop()
        self.connect_ended = asyncio.Event()
        self.opened = False
        self.socket_closed = asyncio.Event()

    def _client_connect(self) -> None:
        # In the executor's thread. The set is queued after the callbacks paho's connect queued (the reader, the
        # housekeeping task), so once it is seen on the loop, they have run.
        try:
            super()._client_connect()
            self.opened = True
        finally:
            self._on.call_soon_threadsafe(self.connect_ended.set)

    def _on_socket_close(self, client: mqtt.Client, userdata: Any, sock: Any) -> None:
        super()._on_socket_close(client, userdata, sock)
        self.socket_closed.set()

    async def abandon(self, entering: asyncio.Future[SessionClient]) -> None:
        """The connect given up: its thread waited for, the CONNACK's wait cancelled, what it opened closed."""
        # Its thread's end; or the context's, should it have ended without one (a refusal before the connect).
        ended = asyncio.ensure_future(self.connect_ended.wait())
        await asyncio.wait((ended, entering), return_when=asyncio.FIRST_COMPLETED)
        ended.cancel()
        entering.cancel()
        with contextlib.suppress(BaseException):  # cancelled, refused, or connected in the turn it was cancelled
            await entering
        if self._connected.cancelled():
            # aiomqtt's wait_for cancelled the CONNACK's future with it; its on_disconnect reads that future's
            # exception, which raises on a cancelled one (a traceback from the loop's callback). A pending one reads
            # as "never connected", as aiomqtt's own reset after a CONNACK that timed out.
            self._connected = asyncio.Future()
        if not entering.cancelled() and entering.exception() is None:
            await self.__aexit__(None, None, None)  # connected after all: left as `async with` leaves it
        elif self.opened:
            await self._unanswered()

    async def _unanswered(self) -> None:
        """A socket without its CONNACK closed: DISCONNECT written (paho closes the socket once it is, which removes
        its reader and cancels the housekeeping task). Not aiomqtt's `__aexit__`: it waits for an on_disconnect it
        only reports for a client that connected, so it waited out its whole timeout (3 s for the anchor's read)."""
        if self._client.disconnect() != mqtt.MQTT_ERR_SUCCESS:
            return  # no socket after all
        with contextlib.suppress(TimeoutError):  # a 2-byte write on a fresh socket: at once
            async with asyncio.timeout(self.timeout):
                await self.socket_closed.wait()
        if self._lock.locked():  # held by the __aenter__ that was cancelled
            self._lock.release()


@contextlib.asynccontextmanager
async def session(client: SessionClient) -> AsyncIterator[SessionClient]:
    """`async with client`, and nothing of the connection left running however it ends."""
    entering = asyncio.ensure_future(client.__aenter__())
    try:
        await asyncio.shield(entering)
    except BaseException:
        with contextlib.suppress(Exception):  # the cancel (or the connect's error) is what is raised
            await whole(client.abandon(entering))
        raise
    try:
        yield client
    except BaseException as err:
        await whole(client.__aexit__(type(err), err, err.__traceback__))
        raise
    await whole(client.__aexit__(None, None, None))


async def whole(step: Awaitable[T]) -> T:
    """`step` run to its end even if this task is cancelled meanwhile; such a cancel is raised once it has ended
    (a cleanup cut half way leaves what it was closing open)."""
    task = asyncio.ensure_future(step)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = cancelled or not task.cancelled()  # not the step's own cancel: this task's
    if cancelled:
        raise asyncio.CancelledError
    return task.result()


async def kept(step: Awaitable[T]) -> T:
    """`step`'s result, unless this task was cancelled while it ran and the cancel was swallowed: aiomqtt waits with
    `asyncio.wait_for`, which on Python 3.11 returns its result when the cancel lands in the turn its wait completes
    (cpython#86296). The cancel was still counted on the task (`cancelling`), so it is raised here, where the caller
    would otherwise go on: `tablectl command send` published a signed command after the Ctrl-C that should have
    stopped it."""
    task = asyncio.current_task()
    asked = 0 if task is None else task.cancelling()
    result = await step
    if task is not None and task.cancelling() > asked:
        raise asyncio.CancelledError
    return result
