"""A signed export's FILE.sig is outside text (it travels from the signer's workstation back to the floor): it is read
bounded and strictly. Before, `verify` read it whole with read_text(): extra lines and unknown fields rode along
unchecked (a duplicate `public_key` took the last one), a megabyte of padding was read, and a byte that was not
UTF-8 ended in a traceback. Real files and a real Ed25519 key; no database (verify needs none)."""

from __future__ import annotations

import hashlib
import os
import threading
import tracemalloc
from collections.abc import Callable
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


# -- the export itself: a regular file only, never read whole onto the heap --------------------------------------------


def _verify_within(export: Path, public: str, seconds: float) -> BaseException | None:
    """verify() in a thread, given `seconds`; a verify still waiting then (blocked on a FIFO) is let go by opening the
    pipe's other end, and the test fails on what it said: before, read_bytes() waited there until a writer came."""
    outcome: list[BaseException | None] = []
    worker = threading.Thread(target=lambda: outcome.append(_try(lambda: verify(export, [public]))), daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        os.close(os.open(export, os.O_WRONLY | os.O_NONBLOCK))  # the reader gets EOF and goes on
        worker.join(30)
        pytest.fail(f"verify() waited on {export} as on a pipe; it then said {outcome}")
    return outcome[0]


def _try(fn: Callable[[], object]) -> BaseException | None:
    try:
        fn()
    except BaseException as err:
        return err
    return None


def test_an_export_that_is_a_fifo_is_refused_not_waited_on(signed: tuple[Path, str]) -> None:
    export, public = signed
    export.unlink()
    os.mkfifo(export)
    err = _verify_within(export, public, 10)
    assert isinstance(err, ExportError), err
    assert "is a FIFO (named pipe), not a regular file; give the .csv `tablectl report export` wrote" in str(err)
    with pytest.raises(ExportError, match=r"is a FIFO \(named pipe\), not a regular file"):
        sign_file(export, Ed25519PrivateKey.generate())


def test_a_directory_or_a_missing_export_is_named(signed: tuple[Path, str]) -> None:
    export, public = signed
    export.unlink()
    with pytest.raises(ExportError, match=r"cannot read it \(No such file or directory\)"):
        verify(export, [public])
    export.mkdir()
    with pytest.raises(ExportError, match=r"is a directory, not a regular file"):
        verify(export, [public])


def test_a_large_export_is_hashed_in_chunks_not_read_whole(tmp_path: Path) -> None:
    """8 MiB of rows (a busy day's file is hundreds): verify keeps none of it on the heap (tracemalloc sees Python's
    allocations: read_bytes() was one of the file's size), gives the file's sha256, and still catches one byte
    changed in its last chunk."""
    export = tmp_path / "floor-2026-11-22.csv"
    row = "t1,{},e{},b1,2026-11-22T10:00:00Z,r1,wager.accepted,655a.7(b),{{}}\n"
    with export.open("w") as f:
        f.write(",".join(HEADER) + "\n")
        n = 0
        while f.tell() < 8 << 20:
            n += 1
            f.write(row.format(n, n))
    key = Ed25519PrivateKey.generate()
    sign_file(export, key)
    public = public_b64(key.public_key())
    tracemalloc.start()
    try:
        good = verify(export, [public])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert good.sha256 == hashlib.sha256(export.read_bytes()).hexdigest()
    assert peak < 1 << 20, f"verify held {peak:,} bytes at its peak for a file of {export.stat().st_size:,}"
    data = bytearray(export.read_bytes())
    data[-3] ^= 1
    export.write_bytes(bytes(data))
    with pytest.raises(ExportError, match="the signature does not match the file"):
        verify(export, [public])
