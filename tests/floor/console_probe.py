"""Whether a floor console started as its own process (`tablectl floor`, tests/floor/conftest.py's FloorProcess) is up
yet: it answers GET /api/session. Polled with tests/floor/conftest.py's wait_for by the console's bad-request tests
and the resend end-to-end test, which each had a copy."""

from __future__ import annotations

import urllib.request


def console_up(origin: str) -> bool:
    """True once the console at `origin` (http://127.0.0.1:PORT) answers; False while nothing listens there yet."""
    try:
        with urllib.request.urlopen(f"{origin}/api/session", timeout=2):
            return True
    except OSError:  # refused while the process starts; urllib's URLError and a timeout are OSErrors too
        return False
