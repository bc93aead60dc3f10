"""`python -m pipediag`: the same entry point as the `pipediag` console script."""

import sys

from pipediag.cli import main

sys.exit(main())
