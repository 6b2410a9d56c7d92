"""What the browsers are sent after a batch (floor/console/server.py): only the tiles, alert groups and link panels
that differ from what they were sent last. Kept while no browser listens too: a page connecting later is in step with
the others."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from floor.console.alerts import table_alerts
from floor.console.floor_alerts import SESSION_GROUP, link_alerts
from floor.console.views import FloorView

# What changes with the clock alone, not with a message: left out when deciding whether a tile changed (the page
# counts the time in a phase itself, from phase_since).
VOLATILE = frozenset({"in_phase_s"})


def _differs(sent: dict[str, str], key: str, value: object) -> bool:
    text = json.dumps(value, sort_keys=True, default=str)
    if sent.get(key) == text:
        return False
    sent[key] = text
    return True


@dataclass
class Sent:
    """The JSON text of each tile, alert group and link panel as every browser was last sent it."""

    tiles: dict[str, str] = field(default_factory=dict)
    # No session alert at start: the first update sends none unless the session was lost.
    alerts: dict[str, str] = field(default_factory=lambda: {SESSION_GROUP: "[]"})
    links: dict[str, str] = field(default_factory=dict)

    def delta(self, view: FloorView, tables: set[str], links: set[str], now: datetime) -> dict[str, Any]:
        """The tiles, alert groups and link panels among these that differ from what the browsers were sent last
        (and note them as sent). An alert group is sent whole: the page replaces that table's or link's alerts. The
        floor's session alert is looked at every time: any table's gap may change it."""
        tiles: list[dict[str, Any]] = []
        alerts: dict[str, list[dict[str, Any]]] = {}
        panels: list[dict[str, Any]] = []
        for t in sorted(tables):
            tile = view.tile(t, now)
            if _differs(self.tiles, t, {k: v for k, v in tile.items() if k not in VOLATILE}):
                tiles.append(tile)
            found = table_alerts(tile)
            if _differs(self.alerts, f"table:{t}", found):
                alerts[f"table:{t}"] = found
        for k in sorted(links):
            link = view.links[k]
            panel = link.panel()
            if _differs(self.links, k, panel):
                panels.append(panel)
            found = link_alerts(link)
            if _differs(self.alerts, f"link:{k}", found):
                alerts[f"link:{k}"] = found
        session = view.session_alerts(now)
        if _differs(self.alerts, SESSION_GROUP, session):
            alerts[SESSION_GROUP] = session
        return {"tiles": tiles, "alerts": alerts, "links": panels}
