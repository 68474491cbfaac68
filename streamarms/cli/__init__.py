"""The ``streamarms`` command line, one module per concern, read top to bottom:

* :mod:`.main` -- the parser and ``main()`` (``streamarms`` / ``python -m streamarms.cli``);
* :mod:`.types` -- argument types shared by the sub-commands;
* :mod:`.simulate` -- ``streamarms simulate``;
* :mod:`.settings` -- every setting of ``streamarms run``, the TOML file, flags > file > defaults;
* :mod:`.run` -- ``streamarms run``: the wiring of source, scheduler, policy and sinks;
* :mod:`.embedded` -- the embedded demo that ``streamarms run`` starts with nothing configured.
"""

from .main import build_parser, main

__all__ = ["main", "build_parser"]
