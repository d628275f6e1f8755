"""``python -m ltr ...`` is the ``ltr`` command."""

from ltr.cli.main import run

run()
