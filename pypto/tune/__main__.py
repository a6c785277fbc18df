"""``python -m pypto.tune``: see `pypto.tune.cli`."""

import sys

from .cli import run

sys.exit(run())
