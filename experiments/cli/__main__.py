"""``python -m experiments.cli``: the same as the ``mdcert`` console script."""

import sys

from experiments.cli.main import main

sys.exit(main())
