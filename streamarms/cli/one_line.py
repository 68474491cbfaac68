"""Text from the data (a key, a group, a field's value) written into a line meant for a person: its control
characters escaped, so that a key holding a line break cannot start a line of its own -- a forged log record
("... INFO streamarms.run: episode 1 done: outliers none") or a table row split in two.

>>> print(one_line("web-3\\n2026-12-02 04:26:32,384 INFO streamarms.run: episode 1 done"))
web-3\\n2026-12-02 04:26:32,384 INFO streamarms.run: episode 1 done
>>> one_line("a\\tb\\x00c\\u2028d")
'a\\\\tb\\\\x00c\\\\u2028d'
"""

from __future__ import annotations

import logging

__all__ = ["one_line", "OneLineFormatter"]

_ESCAPES = {**{c: f"\\x{c:02x}" for c in (*range(32), *range(127, 160))}, 9: "\\t", 10: "\\n", 13: "\\r",
            0x2028: "\\u2028", 0x2029: "\\u2029"}  # (C0, DEL and C1: 0x9b is a terminal's CSI)


def one_line(text: str) -> str:
    """``text`` with its control characters and line separators written as escapes (``\\n``, ``\\x00``, ...)."""
    return text.translate(_ESCAPES)


class OneLineFormatter(logging.Formatter):
    """A :class:`logging.Formatter` whose records' messages are :func:`one_line` (a traceback below a record keeps
    its lines: it is the program's text, not the data's).

    >>> import io
    >>> out = io.StringIO()
    >>> h = logging.StreamHandler(out)
    >>> h.setFormatter(OneLineFormatter("%(levelname)s %(message)s"))
    >>> log = logging.getLogger("one_line_example")
    >>> log.addHandler(h)
    >>> log.warning("key %s is an outlier", "h1\\nINFO all clear")
    >>> out.getvalue()
    'WARNING key h1\\\\nINFO all clear is an outlier\\n'
    """

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 - logging's name
        record.message = one_line(record.message)
        return super().formatMessage(record)
