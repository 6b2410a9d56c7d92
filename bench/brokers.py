"""The broker a bench's table connects to: the private anonymous mosquitto on loopback (benchlib.mosquitto, mqtt://),
or, with a bench's --tls, the broker as production runs it: systemd/mosquitto/ as shipped (TLS only, no anonymous
access, a user per table and the shipped ACL), with a CA and a broker certificate made for the run
(tests/secure_broker.py, which tests/mqtt/test_broker_acl.py checks). Over TLS the table connects as production's
tables do: `mqtts://`, its table id as its user, its password in a file, the run's CA as its `ca_file`, the broker's
certificate and host name verified. The bench's own clients (the people, the baselines) connect over TLS too, as a
supervisor and as a table of their own: the broker's CPU and the bench's are not the daemon's, but they share the
cores.
"""

from __future__ import annotations

import contextlib
import secrets
import ssl
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiomqtt
import benchlib

from controller.config.table import TableConfig

ROOT = Path(__file__).resolve().parents[1]
SUPERVISOR = "supervisor.alice"  # the shipped ACL's: reads every table, sends commands
BASELINE = "bench-baseline"  # a table's user as the ACL's patterns allow it: footprint.py's publishing baseline


@dataclass(frozen=True)
class Broker:
    url: str
    ca: Path | None = None  # None: plain mqtt://, anonymous
    passwords: Mapping[str, str] = field(default_factory=dict)
    secrets_dir: Path | None = None

    @property
    def tls(self) -> bool:
        return self.ca is not None

    @property
    def kind(self) -> str:
        return "TLS (mqtts://, the shipped broker config, a user per table)" if self.tls else "plain mqtt://"

    def address(self) -> tuple[str, int]:
        host, port = self.url.split("://", 1)[1].rsplit(":", 1)
        return host, int(port)

    def credentials(self, user: str) -> dict[str, Any]:
        """aiomqtt.Client's arguments for `user` (none on the plain broker)."""
        if self.ca is None:
            return {}
        context = ssl.create_default_context(cafile=str(self.ca))  # CERT_REQUIRED, host name checked
        return {"username": user, "password": self.passwords[user], "tls_context": context}

    def client(self, identifier: str, user: str = SUPERVISOR, **kw: Any) -> aiomqtt.Client:
        host, port = self.address()
        return aiomqtt.Client(host, port, identifier=identifier, **self.credentials(user), **kw)

    def argv(self, user: str) -> list[str]:
        """host, port, and over TLS the CA's file, the user and its password: baseline_procs.py's scripts' arguments."""
        host, port = self.address()
        if self.ca is None:
            return [host, str(port)]
        return [host, str(port), str(self.ca), user, self.passwords[user]]

    def table(self, config: TableConfig) -> TableConfig:
        """The config with its [mqtt] as production's: over TLS its table id as user, a password file, the CA."""
        data = config.model_dump()
        data["mqtt"]["broker"] = self.url
        if self.ca is not None and self.secrets_dir is not None:
            secret = self.secrets_dir / f"{config.table_id}.password"
            secret.write_text(self.passwords[config.table_id] + "\n")
            secret.chmod(0o600)
            data["mqtt"].update(username=config.table_id, password_file=str(secret), ca_file=str(self.ca))
        return TableConfig.model_validate(data)


@contextlib.contextmanager
def broker(tls: bool, table_ids: Iterable[str] = ()) -> Iterator[Broker]:
    """A private broker for the bench's duration: plain, or over TLS with a user for each table id, the bench's
    supervisor and the baseline (each a fresh random password)."""
    if not tls:
        with benchlib.mosquitto() as url:
            yield Broker(url)
        return
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # the suite's maker of the shipped broker, as bench/fault_campaign.py imports it
    from tests.secure_broker import secure_mosquitto

    users = {SUPERVISOR, BASELINE, *table_ids}
    passwords = {user: secrets.token_urlsafe(18) for user in sorted(users)}
    try:
        with secure_mosquitto(passwords) as (mosquitto, ca):
            url = f"mqtts://127.0.0.1:{mosquitto.port}"
            yield Broker(url, ca, passwords, mosquitto.config.parent)
    except FileNotFoundError as err:
        sys.exit(f"bench: {err}")


def compare(name: str, plain: float, tls: float, unit: str, digits: int = 1) -> str:
    """One figure over TLS beside the same run's plain one."""
    ratio = f"{tls / plain:.3f}x" if plain > 0 else "n/a"
    return f"{name}: plain {plain:.{digits}f} {unit}, TLS {tls:.{digits}f} {unit} ({tls - plain:+.{digits}f}, {ratio})"
