"""Every space a str pattern's \\s takes and re.ASCII's does not: the config patterns refuse them
(tests/floor/test_config_digits.py), and so do the strict ASCII fields (test_ascii_strict.py) and the secret files
(test_secret_file.py). Shared here, so that no test module imports another."""

from __future__ import annotations

# U+0085, U+00A0, U+1680, U+2000..U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, and the ASCII separators
# U+001C..U+001F.
UNICODE_SPACES = [c for c in map(chr, range(0x3001)) if c.isspace() and c not in " \t\n\r\f\v"]
