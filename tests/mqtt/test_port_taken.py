"""free_port() names a port that was free a moment ago; under `dev.py test`'s two xdist workers the other worker's
server can bind it before this worker's broker does. The broker fixture's starter then takes a fresh port, a bounded
number of times, and otherwise fails naming the port and the fix.

The race is made deterministic: the test holds a listening socket on a port and hands that port to the starter once."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from floor.ports import PORT_ATTEMPTS
from leash import Leash
from tests.broker import BROKER_DIR, Mosquitto, Subscriber, find_mosquitto, free_port, held_port


def serves_a_subscriber(mq: Mosquitto) -> None:
    """The broker on the port it took answers a client's subscription."""
    sub = Subscriber(mq.host, mq.port, ["ports/#"])
    try:
        sub.wait_subscribed()
    finally:
        sub.close()


def binary() -> str:
    found = find_mosquitto()
    if found is None:
        pytest.fail("mosquitto is not installed (python3 dev.py test installs it)", pytrace=False)
    return found


def broker(port: int | None, ports: Callable[[], int]) -> Mosquitto:
    return Mosquitto(binary(), Leash.mine().mkdtemp(BROKER_DIR), port, ports=ports)


def test_a_broker_whose_port_was_taken_starts_on_a_fresh_one() -> None:
    with held_port() as taken:
        handed = iter([taken])
        mq = broker(None, lambda: next(handed, None) or free_port())
        assert mq.port == taken
        try:
            mq.start()
            assert mq.port != taken and mq.url == f"mqtt://127.0.0.1:{mq.port}"
            # The first attempt did meet the taken port (mosquitto said so), and the one it runs on serves clients.
            assert any("Address already in use" in line for line in mq.log)
            serves_a_subscriber(mq)
        finally:
            mq.close()


def test_a_taken_port_every_time_fails_naming_the_port_after_bounded_attempts() -> None:
    with held_port() as taken:
        handed: list[int] = []

        def always_taken() -> int:
            handed.append(taken)
            return taken

        mq = broker(None, always_taken)
        try:
            with pytest.raises(pytest.fail.Exception) as failed:
                mq.start()
        finally:
            mq.close()
    assert len(handed) == PORT_ATTEMPTS  # the first port and PORT_ATTEMPTS - 1 fresh ones, then it stops
    message = str(failed.value)
    assert f"127.0.0.1:{taken} (and {PORT_ATTEMPTS - 1} fresh ports before it)" in message
    assert "another process holds the port" in message and "ss -ltnp" in message
    assert "Address already in use" in message  # the broker's own words, for whoever reads the failure


def test_a_port_the_caller_chose_is_kept_and_its_conflict_reported_at_once() -> None:
    """A caller that names the port may have handed it out already (a config, a URL): no quiet move."""
    with held_port() as taken:
        offered: list[int] = []

        def fresh() -> int:
            offered.append(free_port())
            return offered[-1]

        mq = broker(taken, fresh)
        try:
            with pytest.raises(pytest.fail.Exception, match=f"127.0.0.1:{taken}: another process holds the port"):
                mq.start()
        finally:
            mq.close()
    assert offered == [] and mq.port == taken


def test_a_broker_of_its_own_config_whose_port_was_taken_starts_on_a_fresh_one() -> None:
    """`conf` (tests/mqtt/test_broker_acl.py's TLS broker from systemd/mosquitto/) is written again for the fresh
    port: the retry is the suite's, whatever the broker's config."""
    with held_port() as taken:
        handed = iter([taken])
        written: list[int] = []

        def conf(port: int) -> str:
            written.append(port)
            return f"listener {port} 127.0.0.1\nallow_anonymous true\nlog_dest stderr\nlog_type all\n"

        mq = Mosquitto(
            binary(), Leash.mine().mkdtemp(BROKER_DIR), ports=lambda: next(handed, None) or free_port(), conf=conf
        )
        try:
            mq.start()
            assert written == [taken, mq.port] and mq.port != taken
            assert f"listener {mq.port} 127.0.0.1\n" in mq.config.read_text()
            serves_a_subscriber(mq)
        finally:
            mq.close()
