"""Outside text as a terminal may show it, for the CLIs (floor, link, tablectl): controller/core/shown.py, which says
what is escaped and why (there, not here, so the daemons' console log renderer in controller.shell can use it too)."""

from __future__ import annotations

from controller.core.shown import shown, shown_json, shown_lines

__all__ = ["shown", "shown_json", "shown_lines"]
