"""The fix a "broker unavailable" warning names, by the connection error's text (the texts aiomqtt and paho give;
the refused connection and the refused credentials are also seen end to end in test_publisher and test_broker_acl)."""

from __future__ import annotations

import pytest

from controller.mqtt.connection import broker_fix


@pytest.mark.parametrize(
    ("error", "names"),
    [
        ("[Errno 111] Connection refused", "start it (systemctl start mosquitto)"),
        ("[Errno -2] Name or service not known", "point [mqtt] broker (or --broker)"),
        ("Operation timed out", "no broker answers at that address"),
        ("[code:135] Not authorized", "[mqtt] username and password_file"),
        ("[code:134] Bad user name or password", "[mqtt] username and password_file"),
        ("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed", "[mqtt] ca_file, cert_file and key_file"),
        ("Unexpected disconnection", "the broker's own log"),
    ],
)
def test_each_kind_of_failure_names_its_own_fix(error: str, names: str) -> None:
    assert names in broker_fix(error)
