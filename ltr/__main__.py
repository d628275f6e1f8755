"""``python -m ltr ...`` is the ``ltr`` command."""

import sys

from ltr.cli import main

sys.exit(main())
