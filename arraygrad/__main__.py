"""``python -m arraygrad``: the ``arraygrad`` command (``backends``, ``conformance``), for an
environment whose scripts directory is not on the PATH."""

import sys

from .cli import main

sys.exit(main())
