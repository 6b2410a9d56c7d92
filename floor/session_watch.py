"""The floor's broker session (floor/listener_client.py), watched at every connection: a broker that kept none for a
floor that had one (restarted without persistence, or the session expired) is said in the log with the cause and the
fix, and on the console (floor/console/floor_alerts.py), instead of leaving the seq gaps it causes unexplained. The
floor asks the tables for nothing itself: it holds no key (docs/floor.md, "A lost session")."""

from __future__ import annotations

from dataclasses import dataclass

import structlog

log = structlog.get_logger("tablectl.floor")


@dataclass
class SessionWatch:
    client_id: str
    broker: str
    session_expiry_s: int
    # Whether the broker should hold a session of this floor's: it subscribed under its client id this run, or an
    # earlier run archived tables (a new client id is a new session too: what it missed is the same).
    had: bool = False

    def connected(self, present: bool | None) -> bool:
        """After a CONNACK (`present`: its session-present flag, None if unknown): True when a session was lost."""
        lost = self.had and present is False
        if lost:
            log.warning(
                "broker session lost: the broker kept no session for the floor, so what the tables published before"
                " it subscribed again never reached it; seq gaps may follow at every table that published meanwhile",
                client_id=self.client_id,
                broker=self.broker,
                cause="the broker restarted without persistence, crashed before saving, or the floor was away longer"
                f" than its session expiry ({self.session_expiry_s} s) or changed its client_id",
                fix="set `persistence true` and a persistence_location in mosquitto.conf (docs/floor.md, 'A broker"
                " restart'); fill the gaps: `tablectl floor gaps`, or 'Resend every gap' in the console",
            )
        return lost
