"""A driver installed by another package appears through the entry-point group, with no change here.

The other package is a real (if tiny) installed distribution: a module plus a .dist-info with METADATA and
entry_points.txt on the path, which is what pip leaves behind; a fresh interpreter discovers it.
"""

from __future__ import annotations

import json
from typing import Any

DRIVER = """
from typing import ClassVar, Literal
from pydantic import BaseModel, ConfigDict


class AcmeSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    driver: Literal["acme-panel"] = "acme-panel"
    port: str
    beep: bool = False


class AcmePanel:
    Settings: ClassVar[type[AcmeSettings]] = AcmeSettings

    def __init__(self, device_id: str, settings: AcmeSettings) -> None:
        self.device_id = device_id
        self.settings = settings

    async def start(self, sink) -> None:
        pass

    async def stop(self) -> None:
        pass
"""


def test_another_packages_driver_is_found_and_built(install_distribution: Any, fresh_python: Any) -> None:
    site = install_distribution("acme-panel", {"acme-panel": "acme_panel:AcmePanel"}, {"acme_panel.py": DRIVER})
    probe = (
        "import json\n"
        "from drivers.registry import available_drivers, create_driver\n"
        "d = create_driver('dealer_panel', {'driver': 'acme-panel', 'port': '/dev/ttyACME0', 'beep': True})\n"
        "print(json.dumps({'installed': sorted(available_drivers()), 'class': type(d).__name__,"
        " 'beep': d.settings.beep}))\n"
    )
    out = fresh_python(probe, path=(site,))
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert "acme-panel" in found["installed"] and "reference-shoe" in found["installed"]
    assert (found["class"], found["beep"]) == ("AcmePanel", True)
