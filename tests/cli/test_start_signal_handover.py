"""The SIGINT user25 saw lost about 1.2 s into `tablectl run`: asyncio.run's handler cancelled the start's task in the
loop turn an `asyncio.wait_for` (aiomqtt's connect, in the retained anchor's read) completed, and Python 3.11's
wait_for returned the result instead of raising (cpython#86296): the start went on, the table ran, the Ctrl-C was gone.
Here the same swallow, made to happen in this process with a real SIGINT: the start's signals
(controller/shell/start_signals.py) hand the signal to the runner's handlers once they are in, so it is acted on."""

from __future__ import annotations

import asyncio
import os
import signal

from controller.shell.start_signals import StartSignals


def test_a_signal_whose_cancel_a_wait_for_swallowed_is_acted_on_at_the_hand_over() -> None:
    start = StartSignals().install()
    acted: list[str] = []

    async def the_start() -> str:
        start.running()
        loop = asyncio.get_running_loop()
        inner = loop.create_future()

        def answer_and_interrupt() -> None:
            inner.set_result("connected")  # the CONNACK, in the same loop turn as the signal's cancel
            os.kill(os.getpid(), signal.SIGINT)

        loop.call_soon(answer_and_interrupt)
        got = await asyncio.wait_for(inner, timeout=30)  # noqa: the swallow under test (tests/test_no_wait_for.py)
        start.hand_over(acted.append)  # the runner's handlers are in
        return str(got)

    try:
        got = asyncio.run(the_start())
    finally:
        start.restore()
    assert got == "connected", "the cancel was not swallowed: the case under test did not happen"
    assert acted == ["SIGINT"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_without_them_asyncio_runs_handler_loses_that_signal() -> None:
    """The old start, as it was: asyncio.run's own SIGINT handler, whose cancel the wait_for swallows. Nothing raises
    and nothing is left to act on: the signal is lost (what the test above no longer allows)."""

    async def the_start() -> str:
        loop = asyncio.get_running_loop()
        inner = loop.create_future()

        def answer_and_interrupt() -> None:
            inner.set_result("connected")
            os.kill(os.getpid(), signal.SIGINT)

        loop.call_soon(answer_and_interrupt)
        return str(await asyncio.wait_for(inner, timeout=30))  # noqa: the swallow under test

    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert asyncio.run(the_start()) == "connected"
