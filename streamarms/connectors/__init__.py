"""``streamarms.connectors`` in a source checkout: the top-level ``connectors/`` package beside it.

The connectors live in ``connectors/`` at the top of the repository (they depend on the core; the core
never imports them). An *installed* streamarms has them as ``streamarms.connectors`` because the build
maps that package to ``connectors/`` (``[tool.setuptools.package-dir]`` in ``pyproject.toml``); this
file is not part of an install. In a *checkout* (tests, ``python -m streamarms.cli`` from the
repository root, a second worktree beside an editable install of another one) Python finds this
package first, and its search path below is the ``connectors/`` directory of the same checkout, so
``streamarms.connectors.kafka`` is ``connectors/kafka.py`` next to this ``streamarms/``. Nothing is
patched at run time: this is the ordinary ``__path__`` of a package.
"""

import os as _os

__path__ = [_os.path.join(_os.path.dirname(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))),
                          "connectors")]
