"""`OneLineParser`: argparse whose mistakes are one `LtrUserError` line (exit 2 through ``ltr``)."""

from __future__ import annotations

import argparse
from typing import NoReturn

from ltr.errors import LtrUserError


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` that raises ``LtrUserError("<prog>: <message> (<prog> --help ...)")``
    instead of printing usage and exiting; ``--help`` works as usual."""

    def error(self, message: str) -> NoReturn:
        raise LtrUserError(f"{self.prog}: {message} ({self.prog} --help lists the options)")
