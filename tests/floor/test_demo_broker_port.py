"""The demo's private mosquitto (`tablectl demo --floor/--linked`, floor.cli.private.start_mosquitto) on a port that
another process takes between the pick and the broker's bind: it starts on a fresh one, a bounded number of times,
and otherwise stops with a usage error naming the ports and the fix.

The race is made deterministic: the test holds a listening socket on a port and hands that port to the starter's
port picker first (as the other xdist worker's server, or another demo, would hold it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.cli.verb import UsageError
from floor.cli.private import start_mosquitto, stop_mosquitto
from floor.ports import PORT_ATTEMPTS, free_port
from leash import Leash
from tests.broker import Subscriber, held_port


@pytest.fixture
def workdir() -> Iterator[Path]:
    # On the leash, as the demo's own dir is (private_servers): a killed run leaves no broker behind.
    d = Leash.mine().mkdtemp("tablectl-floor-demo-")
    try:
        yield d
    finally:
        Leash.mine().release(d)


def test_the_demos_broker_whose_port_was_taken_starts_on_a_fresh_one(workdir: Path) -> None:
    picked: list[int] = []
    with held_port() as taken:

        def ports() -> int:
            picked.append(taken if not picked else free_port())
            return picked[-1]

        proc, url = start_mosquitto(workdir, ports=ports)
        try:
            assert len(picked) == 2 and url == f"mqtt://127.0.0.1:{picked[1]}" and picked[1] != taken
            # The first start did meet the taken port (the broker said so in its log), and the second serves clients.
            log = (workdir / "mosquitto.log").read_text()
            assert log.count("Address already in use") >= 1 and log.count(" running") == 1, log
            sub = Subscriber("127.0.0.1", picked[1], ["demo/#"])
            try:
                sub.wait_subscribed()
            finally:
                sub.close()
        finally:
            stop_mosquitto(proc)
    assert proc.returncode is not None


def test_the_demos_broker_gives_up_after_bounded_attempts_naming_the_ports(workdir: Path) -> None:
    picked: list[int] = []
    with held_port() as taken:

        def ports() -> int:
            picked.append(taken)
            return taken

        with pytest.raises(UsageError) as refused:
            start_mosquitto(workdir, ports=ports)
    assert len(picked) == PORT_ATTEMPTS
    message = str(refused.value)
    assert f"another process held each port tried ({', '.join([str(taken)] * PORT_ATTEMPTS)})" in message, message
    assert "ss -ltnp" in message and "Address already in use" in message, message
