"""systemd/mosquitto/ as shipped, started for real in a temporary directory: TLS only, no anonymous access, per-user
passwords and the shipped ACL, with a CA and a broker certificate made for the run. One maker for the tests that check
the shipped broker (tests/mqtt/test_broker_acl.py) and the benches that run a table as production connects
(bench/brokers.py): a helper module, not a test module, so that both can import it.

The example's paths are moved into the temporary directory and its port to a free one; nothing else is changed,
except `user root` when run as root (mosquitto would otherwise drop to the mosquitto user, which cannot read the
private temporary directory). The CA and the broker certificate are made with the `cryptography` package; the
password file with mosquitto's own mosquitto_passwd.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from leash import Leash
from tests.broker import Mosquitto

EXAMPLE = Path(__file__).resolve().parents[1] / "systemd" / "mosquitto"
SECURE_BROKER_DIR = "tablectl-test-broker-secure-"  # leash.PATTERNS knows it


def find_binary(name: str, *places: str) -> str:
    found = shutil.which(name) or next((p for p in places if os.access(p, os.X_OK)), None)
    if found is None:
        raise FileNotFoundError(f"{name} is not installed: sudo apt-get install mosquitto mosquitto-clients")
    return found


def _ca(now: dt.datetime) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tablectl test floor CA")])
    signs_only = x509.KeyUsage(
        digital_signature=False,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=True,
        crl_sign=True,
        encipher_only=False,
        decipher_only=False,
    )
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(signs_only, critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def write_pki(d: Path) -> Path:
    """A CA, and a broker certificate it signs for 127.0.0.1 and localhost (what the clients check), under d/certs;
    returns the CA's file."""
    now = dt.datetime.now(dt.UTC)
    ca_key, ca = _ca(now)
    ca_ski = ca.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    key = ec.generate_private_key(ec.SECP256R1())
    names = x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(names, critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    (d / "certs").mkdir()
    (d / "certs" / "ca.crt").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (d / "certs" / "broker.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (d / "certs" / "broker.key").write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return d / "certs" / "ca.crt"


def write_passwords(d: Path, passwords: Mapping[str, str]) -> None:
    """d/passwd for the users and passwords given, made by mosquitto_passwd as an operator makes it."""
    passwd = find_binary("mosquitto_passwd", "/usr/bin/mosquitto_passwd")
    for n, (user, password) in enumerate(passwords.items()):
        subprocess.run(
            [passwd, *(["-c"] if n == 0 else []), "-b", str(d / "passwd"), user, password],
            check=True,
            capture_output=True,
            stdin=subprocess.DEVNULL,
        )


def shipped_config(d: Path) -> Callable[[int], str]:
    """systemd/mosquitto/mosquitto.conf with its files under d and its TLS listener on a loopback port."""
    shipped = (EXAMPLE / "mosquitto.conf").read_text().replace("/etc/mosquitto/tablectl/", f"{d}/")
    if "listener 8883\n" not in shipped:
        raise ValueError(f"{EXAMPLE / 'mosquitto.conf'} has no `listener 8883` line to move to a free port")

    def config(port: int) -> str:
        text = shipped.replace("listener 8883\n", f"listener {port} 127.0.0.1\n")
        # What the Debian package's main file would add, here pointing into the temporary directory.
        text += f"persistence_location {d}/\nlog_dest stderr\nlog_type all\nconnection_messages true\n"
        return text + ("user root\n" if os.geteuid() == 0 else "")

    return config


@contextlib.contextmanager
def secure_mosquitto(passwords: Mapping[str, str]) -> Iterator[tuple[Mosquitto, Path]]:
    """The shipped broker, started, with these users; yields it and the CA's file. On the leash (leash/): a SIGKILLed
    run stops this broker and deletes its dir, and should its watchdog be killed too, the next run's sweep does."""
    d = Leash.mine().mkdtemp(SECURE_BROKER_DIR)
    ca = write_pki(d)
    shutil.copy(EXAMPLE / "acl", d / "acl")
    write_passwords(d, passwords)
    # A port from free_port() may be taken by another process before the broker binds it: Mosquitto's first start then
    # configures another (config(port)) and starts again.
    broker = Mosquitto(find_binary("mosquitto", "/usr/sbin/mosquitto"), d, conf=shipped_config(d))
    try:
        broker.start()
        yield broker, ca
    finally:
        broker.close()
