"""``python -m ltr ...`` is the ``ltr`` command."""

import sys

from ltr.cli.main import main

sys.exit(main())
