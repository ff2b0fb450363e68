"""``python -m analysis``: the command line (:mod:`analysis.cli.main`)."""

import sys

from analysis.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
