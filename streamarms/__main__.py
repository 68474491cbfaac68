"""``python -m streamarms``: the same as the ``streamarms`` command (for a venv without its scripts on ``PATH``)."""

import sys

from .cli.main import main

sys.exit(main())
