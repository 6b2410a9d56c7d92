"""The unit, the sysusers file and the udev rules, checked with systemd's own tools (in CI, .ci/run installs
them: Debian package `systemd`). `systemd-analyze verify` exits 0 on unknown keys, so its stderr must be empty
too; `systemd-analyze security --offline=true` (systemd >= 250) must rate the unit at most 2.0."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

from tests.systemd.unit_checks import INSTALLED_AT, MAX_EXPOSURE, tool, verify

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "systemd" / "tablectl.service"
RULES = ROOT / "systemd" / "99-tablectl.rules"
SYSUSERS = ROOT / "systemd" / "tablectl.sysusers"


def _unit_here(tmp_path: Path) -> Path:
    """The unit with ExecStart*= pointing at this checkout's `tablectl` instead of /usr/local/bin, where
    `pip install` puts it on a table PC: verify checks that the command exists. Nothing else changes."""
    installed = shutil.which("tablectl", path=str(Path(sys.executable).parent)) or shutil.which("tablectl")
    assert installed, "the tablectl console script is not installed in this environment (pip install -e .)"
    text = UNIT.read_text()
    here = text.replace(INSTALLED_AT, installed)
    changed = [a for a, b in zip(text.splitlines(), here.splitlines(), strict=True) if a != b]
    assert changed and all(line.startswith("ExecStart") for line in changed), changed
    unit = tmp_path / "tablectl.service"
    unit.write_text(here)
    return unit


def test_unit_verifies_without_a_word(tmp_path: Path) -> None:
    proc = verify(_unit_here(tmp_path))
    assert (proc.returncode, proc.stderr, proc.stdout) == (0, "", ""), proc.stderr


def test_verify_would_catch_a_misspelt_key(tmp_path: Path) -> None:
    # The check above can fail: systemd-analyze exits 0 on an unknown key and only says so on stderr.
    unit = _unit_here(tmp_path)
    unit.write_text(unit.read_text().replace("WatchdogSec=30", "WatchdogSecs=30"))
    proc = verify(unit)
    assert proc.returncode == 0 and "Unknown key 'WatchdogSecs'" in proc.stderr


def test_security_exposure_is_at_most_2(tmp_path: Path) -> None:
    unit = _unit_here(tmp_path)
    proc = subprocess.run(
        [
            tool("systemd-analyze"),
            "security",
            "--offline=true",
            f"--threshold={int(MAX_EXPOSURE * 10)}",
            "--no-pager",
            unit.name,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=unit.parent,
    )
    m = re.search(r"Overall exposure level for tablectl\.service: (\d+\.\d)", proc.stdout)
    assert m, proc.stdout + proc.stderr
    assert float(m.group(1)) <= MAX_EXPOSURE, proc.stdout
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # The devices the table needs stay reachable through the device ACL, and nothing else does.
    acl = next(line for line in proc.stdout.splitlines() if "DeviceAllow=" in line)
    for device in ("char-ttyUSB:rw", "char-ttyACM:rw", "char-usb_device:rw", "char-hidraw:rw"):
        assert device in acl, acl


def _settings(text: str) -> dict[str, list[str]]:
    """Unit file key -> every value it is given (keys like DeviceAllow= repeat)."""
    out: dict[str, list[str]] = defaultdict(list)
    for line in text.splitlines():
        if "=" in line and not line.lstrip().startswith(("#", ";", "[")):
            key, value = line.split("=", 1)
            out[key.strip()].append(value.strip())
    return out


def test_unit_runs_the_daemon_as_the_design_says() -> None:
    s = _settings(UNIT.read_text())
    one = {k: v[-1] for k, v in s.items()}
    assert one["Type"] == "notify" and one["NotifyAccess"] == "main" and one["WatchdogSec"] == "30"
    assert one["Restart"] == "on-failure" and one["User"] == "tablectl" and one["StateDirectory"] == "tablectl"
    assert set(one["SupplementaryGroups"].split()) == {"dialout", "plugdev"}
    assert one["PrivateDevices"] == "no" and one["DevicePolicy"] == "closed"
    assert set(s["DeviceAllow"]) == {"char-ttyUSB rw", "char-ttyACM rw", "char-usb_device rw", "char-hidraw rw"}
    assert one["ExecStart"] == f"{INSTALLED_AT} --log-format journal run --config /etc/tablectl/table.toml"
    assert one["ExecStartPre"] == f"{INSTALLED_AT} check-config /etc/tablectl/table.toml"


def test_sysusers_creates_the_service_user(tmp_path: Path) -> None:
    proc = subprocess.run(
        [tool("systemd-sysusers"), "--dry-run", f"--root={tmp_path}", str(SYSUSERS)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    said = proc.stdout + proc.stderr
    assert "Creating user 'tablectl'" in said and "Failed" not in said


RULE_KEYS = {
    "SUBSYSTEM",
    "ENV{DEVTYPE}",
    "ATTR{idVendor}",
    "ATTR{idProduct}",
    "ATTR{serial}",
    "ATTRS{idVendor}",
    "ATTRS{idProduct}",
    "ATTRS{serial}",
    "SYMLINK",
    "GROUP",
    "MODE",
    "TAG",
    "ACTION",
    "DRIVER",
    "ATTR{latency_timer}",
}
PAIR = re.compile(r'\s*([A-Z]+(?:\{[A-Za-z_]+\})?)\s*(==|\+=|=)\s*"([^"]*)"\s*(?:,|$)')


def _rules() -> list[dict[str, str]]:
    rules = []
    for number, line in enumerate(RULES.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        pairs = PAIR.findall(line)
        assert "".join(f'{k}{op}"{v}", ' for k, op, v in pairs).rstrip(", ") == re.sub(r",\s+", ", ", line.strip()), (
            f'99-tablectl.rules:{number}: not a list of KEY=="value" / KEY="value" pairs: {line}'
        )
        rule = {k: v for k, _op, v in pairs}
        assert set(rule) <= RULE_KEYS, f"99-tablectl.rules:{number}: unexpected keys {set(rule) - RULE_KEYS}"
        rules.append(rule)
    return rules


def _latency_rules() -> list[dict[str, str]]:
    return [r for r in _rules() if r.get("SUBSYSTEM") == "usb-serial"]


def test_ftdi_adapters_deliver_received_bytes_within_1_ms() -> None:
    """An FTDI adapter holds received bytes up to its latency timer, 16 ms by default: longer than the whole lock-out
    of a multi-drop line (docs/protocol.md section 13). The rule sets it to 1 ms as each adapter appears."""
    assert _latency_rules() == [
        {"ACTION": "add", "SUBSYSTEM": "usb-serial", "DRIVER": "ftdi_sio", "ATTR{latency_timer}": "1"}
    ]


def test_udev_rules_match_by_vendor_product_serial_and_let_the_service_open_them() -> None:
    rules = [r for r in _rules() if r not in _latency_rules()]
    assert rules
    for rule in rules:
        ids = {k.split("{")[1].rstrip("}") for k in rule if "{" in k and not k.startswith("ENV")}
        assert ids == {"idVendor", "idProduct", "serial"}, rule
        assert re.fullmatch(r"[0-9a-f]{4}", rule.get("ATTRS{idVendor}", rule.get("ATTR{idVendor}", ""))), rule
        assert rule["SYMLINK"].startswith("tablectl/") and rule["MODE"] == "0660"
        assert rule["GROUP"] == {"tty": "dialout", "usb": "plugdev", "hidraw": "plugdev"}[rule["SUBSYSTEM"]]
    assert {r["SUBSYSTEM"] for r in rules} == {"tty", "usb", "hidraw"}  # serial, libusb and hidraw access
    names = [r["SYMLINK"] for r in rules]
    assert len(names) == len(set(names)), "two rules make the same name"


def _ports(value: object) -> list[str]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in ([v] if k == "port" and isinstance(v, str) else _ports(v))]
    if isinstance(value, list):
        return [p for v in value for p in _ports(v)]
    return []


def test_example_configs_use_the_names_the_rules_make() -> None:
    made = {f"/dev/{r['SYMLINK']}" for r in _rules() if "SYMLINK" in r}
    used: set[str] = set()
    for path in sorted((ROOT / "configs").glob("*.toml")):
        ports = _ports(tomllib.loads(path.read_text()).get("devices", {}))
        used |= {p for p in ports if p != "simulated"}
        assert all(p == "simulated" or p in made for p in ports), (path.name, sorted(set(ports) - made))
    assert used, "no example config names a udev port"
