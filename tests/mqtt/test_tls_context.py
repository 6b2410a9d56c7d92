"""The table's TLS context (controller.mqtt.connection.tls_context) as production configures it: with `ca_file` it
trusts that CA alone, verifying the broker's certificate and host name, and loads none of the system's CAs (about
1 MB resident for ~140 certificates it would never use: docs/performance-history.md, Part 16). The CA is a real one,
made by tests/secure_broker.py as for the shipped broker's tests."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from controller.mqtt.connection import tls_context
from tests.secure_broker import write_pki


def test_with_a_ca_file_the_table_trusts_that_ca_alone_and_verifies_the_broker(tmp_path: Path) -> None:
    ca = write_pki(tmp_path)
    context = tls_context(str(ca), None, None)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats() == {"x509": 1, "crl": 0, "x509_ca": 1}


def test_without_one_the_systems_cas_are_loaded() -> None:
    """The check above can fail: the system's store, where the broker's certificate comes from a public CA."""
    system = ssl.get_default_verify_paths().cafile
    if system is None or not Path(system).is_file():
        pytest.skip("no system CA bundle here (Debian: the ca-certificates package)")
    context = tls_context(None, None, None)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 1
