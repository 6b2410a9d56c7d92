"""`python -m controller.cli`: the same as the `tablectl` command (tests and benchmarks run it this way)."""

import sys

from controller.cli.main import main

sys.exit(main())
