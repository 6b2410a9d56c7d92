"""Decimal digits of other scripts, and a text with its ASCII digits written in one of them: the contract's patterns
refuse them (tests/mqtt/test_contract_digits.py), and so do the floor's and the tables' config patterns
(tests/floor/test_config_digits.py). Shared here, so that neither test module imports the other."""

from __future__ import annotations

# The zero of each: Arabic-Indic, Devanagari, fullwidth, mathematical bold.
ZEROS = [0x0660, 0x0966, 0xFF10, 0x1D7CE]


def foreign(text: str, zero: int) -> str:
    return "".join(chr(zero + int(c)) if c.isascii() and c.isdigit() else c for c in text)
