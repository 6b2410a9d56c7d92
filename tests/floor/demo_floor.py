"""`tablectl demo --floor` as the README runs it, for the tests of the demo floor: started on a broker of the test's,
its console's URL read from what it prints, and a key enrolled over the console's HTTP API as the browser enrols it."""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.supervisor.envelope import public_key_b64
from tests.tablectl_runs import TABLECTL

ROOT = Path(__file__).resolve().parents[2]


def start_demo_floor(broker_url: str) -> subprocess.Popen[str]:
    # Port 0: the demo says which port its console got ("open URL"); one picked here could be taken before it binds.
    argv = ["demo", "--floor", "--seed", "3", "--broker", broker_url, "--http", "127.0.0.1:0"]
    return subprocess.Popen(
        [*TABLECTL, *argv],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def console_address(demo: subprocess.Popen[str]) -> str:
    """host:port of the demo's console, read from its output (the link is open and the tables started before the URL
    is printed)."""
    assert demo.stdout is not None
    for line in demo.stdout:
        if opened := re.search(r"open http://([0-9.]+:[0-9]+)/", line):
            return opened.group(1)
    raise AssertionError("the demo ended without printing its console's URL")


def enrol(http: str, key: Ed25519PrivateKey, key_id: str, role: str) -> None:
    """The key enrolled on the demo's console, which approves it at once (the demo does the administrator's part)."""
    enrolment = {"key_id": key_id, "role": role, "public_key": public_key_b64(key)}
    request = urllib.request.Request(
        f"http://{http}/api/enrol",
        data=json.dumps(enrolment).encode(),
        headers={"Content-Type": "application/json", "Origin": f"http://{http}"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert json.loads(answer.read())["approved"] is True
