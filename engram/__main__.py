"""Run the engram command line as ``python -m engram``."""

import sys

from engram.cli import main

sys.exit(main())
