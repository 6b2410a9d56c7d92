"""A signed export's FILE.sig is outside text (it travels from the signer's workstation back to the floor): it is read
bounded and strictly. Before, `verify` read it whole with read_text(): extra lines and unknown fields rode along
unchecked (a duplicate `public_key` took the last one), a megabyte of padding was read, and a byte that was not
UTF-8 ended in a traceback. Real files and a real Ed25519 key; no database (verify needs none)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from floor.export import HEADER, MAGIC, ExportError, public_b64, sig_path, sign_file, verify


@pytest.fixture
def signed(tmp_path: Path) -> tuple[Path, str]:
    """An export signed by a fresh key, and that key's public half (base64)."""
    export = tmp_path / "floor-2026-11-21.csv"
    export.write_text(",".join(HEADER) + "\nt1,1,e1,b1,2026-11-21T10:00:00Z,r1,round.started,,{}\n")
    key = Ed25519PrivateKey.generate()
    sign_file(export, key)
    return export, public_b64(key.public_key())


def _rewrite(export: Path, change: str) -> None:
    sig = sig_path(export)
    lines = sig.read_text().splitlines()
    if change == "extra field":
        lines.append("comment: signed on the floor host")
    elif change == "second public_key":
        lines.insert(2, "public_key: AAAA")
    elif change == "padding":
        lines += ["x" * 79] * 20_000  # 1.6 MB of lines that are not fields
    elif change == "not ASCII":
        lines[0] += "\u00e9"
    elif change == "no signature":
        lines = [ln for ln in lines if not ln.startswith("signature: ")]
    elif change == "other algorithm":
        lines = [("algorithm: rsa" if ln.startswith("algorithm: ") else ln) for ln in lines]
    sig.write_text("\n".join(lines) + "\n")


def test_the_signature_as_written_verifies(signed: tuple[Path, str]) -> None:
    export, public = signed
    assert verify(export, [public]).signer == public


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ("extra field", "line 6: 'comment: signed on the floor host' is not what a signature holds"),
        ("second public_key", "line 4: a second 'public_key' is not what a signature holds"),
        ("padding", "more than the 4,096"),
        ("not ASCII", "a byte that is not ASCII at offset"),
        ("no signature", "the signature lacks signature"),
        ("other algorithm", "algorithm 'rsa' is not ed25519"),
    ],
)
def test_a_signature_file_with_anything_but_its_fields_is_refused_naming_the_file_and_the_fix(
    signed: tuple[Path, str], change: str, said: str
) -> None:
    export, public = signed
    _rewrite(export, change)
    with pytest.raises(ExportError) as refused:
        verify(export, [public])
    message = str(refused.value)
    assert message.startswith(f"{sig_path(export)}") and said in message
    assert f"`tablectl report sign {export} --key YOUR.pem`" in message


def test_a_fifo_or_a_missing_signature_is_refused_not_waited_on(signed: tuple[Path, str]) -> None:
    export, public = signed
    sig = sig_path(export)
    sig.unlink()
    with pytest.raises(ExportError, match=r"the signature does not exist; sign the export again"):
        verify(export, [public])
    os.mkfifo(sig)  # read_text() blocked here until someone wrote to the pipe
    with pytest.raises(ExportError, match=r"is a FIFO \(named pipe\), not a regular file; sign the export again"):
        verify(export, [public])


def test_the_first_line_is_the_magic(signed: tuple[Path, str]) -> None:
    export, public = signed
    sig = sig_path(export)
    sig.write_text(sig.read_text().replace(MAGIC, "some other signature v1"))
    with pytest.raises(ExportError, match=r"its first line is not 'tablectl-floor-export-signature v1'"):
        verify(export, [public])
