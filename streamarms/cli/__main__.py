"""``python -m streamarms.cli``: the same as the ``streamarms`` command."""

import sys

from .main import main

sys.exit(main())
