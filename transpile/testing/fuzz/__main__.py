"""`python -m transpile.testing.fuzz`: see cli.py."""

import sys

from .cli import main

sys.exit(main())
