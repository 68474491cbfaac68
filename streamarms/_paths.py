"""Make ``streamarms.connectors`` resolve to the ``connectors/`` directory of *this* source checkout.

When streamarms is installed, ``streamarms.connectors`` is mapped to the top-level ``connectors/``
package by the build configuration. When code runs from a source checkout whose ``streamarms`` is
imported from the working directory (tests, a second worktree next to an editable install of
another checkout), that mapping may point at another checkout. :func:`use_local_connectors` binds the
name to the ``connectors/`` next to this ``streamarms/``, if there is one; it is a no-op otherwise.
"""

from __future__ import annotations

import importlib.util
import os
import sys


def use_local_connectors() -> None:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    init = os.path.join(here, "connectors", "__init__.py")
    current = sys.modules.get("streamarms.connectors")
    if not (os.path.exists(init) and os.path.exists(os.path.join(here, "pyproject.toml"))):
        return  # not a source checkout (installed: the build mapping is right)
    if current is not None and os.path.abspath(getattr(current, "__file__", "") or "") == init:
        return
    spec = importlib.util.spec_from_file_location("streamarms.connectors", init,
                                                  submodule_search_locations=[os.path.dirname(init)])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["streamarms.connectors"] = module
    spec.loader.exec_module(module)
    import streamarms
    streamarms.connectors = module  # type: ignore[attr-defined]
