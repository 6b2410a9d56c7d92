"""`tablectl release keygen|sign` and `tablectl verify-software` as a release manager and a laboratory run them
(605a.4(c)): real subprocesses on an installation copied to a temp dir (tests/release/conftest.py)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from tests.release.conftest import Install

MANIFEST = "tablectl-release.json"


def test_605a_4_c_a_signed_installation_verifies_and_prints_the_digest_release_sign_printed(install: Install) -> None:
    digest = install.sign()
    out = install.tablectl("verify-software", "--key", install.public)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"digest:   {digest}" in out.stdout and "verdict:  verified (605a.4(c))" in out.stdout
    assert f"root:     {install.root}" in out.stdout  # the copy was checked, not the checkout
    report = json.loads(install.tablectl("verify-software", "--key", install.public, "--json").stdout)
    assert (report["verdict"], report["digest"], report["manifest_digest"]) == ("verified", digest, digest)
    assert {f["verdict"] for f in report["files"]} == {"ok"}
    assert "controller/release/manifest.py" in {f["path"] for f in report["files"]}


def test_605a_4_c_verify_software_names_each_altered_missing_and_extra_file(install: Install) -> None:
    signed = install.sign()
    (install.root / "controller/core/money.py").write_bytes(b"# altered\n")
    (install.root / "drivers/skeleton.py").unlink()
    (install.root / "floor/planted.py").write_text("import os\n")
    out = install.tablectl("verify-software", "--key", install.public)
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    # In byte order of the path, whatever was wrong with each; the game code need not even import (verify-software
    # imports none of it).
    assert lines[:3] == [
        "mismatch  controller/core/money.py",
        "missing   drivers/skeleton.py",
        "extra     floor/planted.py",
    ]
    assert "verdict:  mismatch (605a.4(c))" in out.stdout and "reinstall the certified release" in out.stdout
    report = json.loads(install.tablectl("verify-software", "--key", install.public, "--json").stdout)
    odd = {f["path"]: f["verdict"] for f in report["files"] if f["verdict"] != "ok"}
    assert odd == {
        "controller/core/money.py": "mismatch",
        "drivers/skeleton.py": "missing",
        "floor/planted.py": "extra",
    }
    assert report["manifest_digest"] == signed != report["digest"]


def test_a_wrong_key_a_missing_manifest_and_a_bad_signature_each_say_what_to_do(
    install: Install, tmp_path: Path
) -> None:
    install.sign()
    other = tmp_path / "other.pem"
    made = install.tablectl("release", "keygen", "--out", other)
    other_public = made.stdout.split("public key: ")[1].split()[0]
    # The wrong key: the manifest is signed by one the config does not list.
    out = install.tablectl("verify-software", "--key", other_public)
    assert out.returncode == 1 and "verdict:  untrusted_key" in out.stdout
    assert f"signed by {install.public}, which is not among the config's [software] release_keys" in out.stdout
    # A bad signature: the manifest edited after signing (a file re-pointed, the digest fixed up to match).
    path = install.root / MANIFEST
    obj = json.loads(path.read_text())
    obj["created"] = "2020-01-01T00:00:00Z"
    path.write_text(json.dumps(obj))
    out = install.tablectl("verify-software", "--key", install.public)
    assert out.returncode == 1 and "verdict:  bad_signature" in out.stdout
    assert "altered after it was signed" in out.stdout and "tablectl release sign" in out.stdout
    # No manifest at all.
    path.unlink()
    out = install.tablectl("verify-software", "--key", install.public)
    assert out.returncode == 1 and "verdict:  no_manifest" in out.stdout
    assert f"no release manifest at {path}: build and sign one with `tablectl release sign" in out.stdout


def test_release_keys_come_from_the_config_and_a_bad_one_is_named(install: Install, tmp_path: Path) -> None:
    install.sign()
    config = tmp_path / "t.toml"
    base = 'table_id = "t1"\n[game]\nchapter = "655a"\n[software]\n'
    config.write_text(base + f'release_keys = ["{install.public}"]\n')
    out = install.tablectl("verify-software", "--config", config)
    assert out.returncode == 0 and "verified" in out.stdout, out.stdout + out.stderr
    config.write_text(base + 'release_keys = ["bm90IGEga2V5"]\n')
    out = install.tablectl("verify-software", "--config", config)
    assert out.returncode == 2
    assert "software.release_keys" in out.stderr and "`tablectl release keygen` printed" in out.stderr


def test_keygen_never_overwrites_a_release_key_and_sign_refuses_what_is_no_key(
    install: Install, tmp_path: Path
) -> None:
    assert stat.S_IMODE(install.key.stat().st_mode) == 0o600
    before = install.key.read_bytes()
    out = install.tablectl("release", "keygen", "--out", install.key)
    assert out.returncode == 2 and "never overwritten" in out.stderr and install.key.read_bytes() == before
    not_a_key = tmp_path / "x.pem"
    not_a_key.write_text("hello")
    out = install.tablectl("release", "sign", "--key", not_a_key)
    assert out.returncode == 2 and "is not a PEM private key" in out.stderr
    assert not (install.root / MANIFEST).exists()
    out = install.tablectl("release", "sign", "--key", install.key, "--root", tmp_path)
    assert out.returncode == 2 and "has no controller/ package" in out.stderr


def test_check_config_reports_the_verdict_and_the_default_of_require_verified(install: Install, tmp_path: Path) -> None:
    config = tmp_path / "t.toml"
    base = 'table_id = "t1"\n[game]\nchapter = "655a"\n'
    config.write_text(base)
    out = install.tablectl("check-config", config)
    assert out.returncode == 0, out.stdout
    assert "software no_manifest (require_verified = false (default), 0 release key(s))" in out.stdout
    assert "warning: software.require_verified: is false (the default without release_keys)" in out.stdout
    install.sign()
    config.write_text(base + f'[software]\nrelease_keys = ["{install.public}"]\n')
    out = install.tablectl("check-config", config)
    assert "software verified (require_verified = true (default), 1 release key(s))" in out.stdout
    cards = install.root / "controller/core/cards.py"
    cards.write_bytes(cards.read_bytes() + b"# altered\n")
    out = install.tablectl("check-config", config)
    assert out.returncode == 1 and "error: software: `tablectl run` would keep the table closed" in out.stdout


def plant_driver_plugin(root: Path) -> None:
    """A distribution's metadata planted beside the packages that re-points the reference shoe's entry point at a
    module outside them: no file under controller/, drivers/, floor/ or link/ changes, yet another class would deal."""
    info = root / "shoe_override-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shoe-override\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[table_controller.drivers]\nreference-shoe = shoe_override:Shoe\n")
    (root / "shoe_override.py").write_text("from drivers.reference.shoe import ReferenceDealingShoe as Shoe\n")


def test_605a_4_c_an_entry_point_that_re_points_a_driver_is_not_as_signed(install: Install) -> None:
    """605a.4(c): "all relevant control software". The `table_controller.drivers` entry points decide which class
    drives a device (drivers/registry.py), so the manifest signs them too, as Python sees them for the installation;
    one more, one fewer or one re-pointed after signing is a mismatch that keeps the table closed."""
    install.sign()
    assert install.tablectl("verify-software", "--key", install.public).returncode == 0
    report = json.loads(install.tablectl("verify-software", "--key", install.public, "--json").stdout)
    names = {e["entry_point"] for e in report["entry_points"]}
    assert "table_controller.drivers reference-shoe = drivers.reference.shoe:ReferenceDealingShoe" in names
    assert "console_scripts tablectl = controller.cli.main:main" in names
    plant_driver_plugin(install.root)
    out = install.tablectl("verify-software", "--key", install.public)
    assert out.returncode == 1, out.stdout
    assert "extra     entry point table_controller.drivers reference-shoe = shoe_override:Shoe" in out.stdout
    assert "verdict:  mismatch (605a.4(c))" in out.stdout and "entry point" in out.stdout
